"""What one file may cost, checked before libcst sees it; what Python itself says about the file.

libcst's native parser has no limits of its own: 1,400 nested brackets or a 20,000-long attribute
chain crash it (a segfault), 3,000-long chains take it tens of seconds, a 5 MB one-line literal
gigabytes. CPython's parser has limits (200 nested brackets, about 3,000 levels of any tree) and
reaches them in milliseconds. So every file goes through three cheap checks first, and only what
passes is parsed by libcst:

* **size**: more than ``max_file_size`` bytes is not analysed (:class:`OverBudget`, GL005);
* **Python's verdict**: :func:`python_tree` parses the text with :mod:`ast` for the target version.
  What CPython rejects (a syntax error, 201 nested brackets, a second BOM, a tree too deep for it
  to compile) is a GL000 with Python's message and position: the file cannot run, so graphlint
  does not analyse a guess of it. The same tree then gives the findings their positions
  (:mod:`graphlint.static.positions`): one judge, never a second parse that could disagree;
* **depth**: :func:`check_depth` measures how deeply the file nests (statements and expressions,
  counted the way libcst nests them: ``a and b and c`` is two levels there). Deeper than
  ``max_depth`` is not analysed (GL005) -- libcst's time grows with the cube of a chain's length.

When the target version is newer than the running interpreter (a 3.12 project checked by a 3.11
pre-commit hook) and :mod:`ast` rejects the file, CPython cannot judge it: libcst alone decides,
brackets are counted by :func:`bracket_depth` instead, and positions come from libcst's tree.
Time, memory and crashes are bounded by the process that runs the analysis (:mod:`graphlint.workers`).
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from itertools import accumulate

#: A message starting with this is a GL005 (file-over-budget) finding; see :func:`error_code`.
NOT_ANALYSED = "not analysed: "
#: CPython's limit on nested brackets (the tokenizer's MAXLEVEL, the same in every Python 3).
MAX_BRACKETS = 200
RUNNING = sys.version_info[:2]

_BODIES = ("body", "orelse", "finalbody", "handlers")


class SourceRejected(Exception):
    """Python rejects the file (GL000): ``line``, ``col`` (1-based, 0 unknown) and Python's words."""

    def __init__(self, line: int, col: int, message: str):
        super().__init__(message)
        self.line, self.col, self.message = line, col, message


class OverBudget(Exception):
    """The file is over a per-file limit (GL005); the message says which and how to raise it."""

    def __init__(self, message: str, line: int = 1):
        super().__init__(message)
        self.line, self.message = line, NOT_ANALYSED + message


def error_code(message: str) -> str:
    """The meta rule a summary's error message belongs to."""
    if message.startswith(NOT_ANALYSED):
        return "GL005"
    return "GL002" if message.lower().startswith("internal error") else "GL000"


def version_text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def check_size(source: bytes, limit: int) -> None:
    if limit and len(source) > limit:
        size, most = _size(len(source)), _size(limit)
        if size == most:  # "2 MB, over max-file-size (2 MB)" says nothing
            size, most = f"{len(source):,} bytes", f"{limit:,} bytes"
        raise OverBudget(f"the file is {size}, over max-file-size ({most}); raise max-file-size or exclude the file")


def python_tree(text: str, target: tuple[int, int]) -> ast.Module | None:
    """CPython's tree of ``text`` under the grammar of ``target``; None when the running Python is
    older than the target and rejects the file (it cannot tell new syntax from a mistake then).

    Parsed at the default recursion limit whatever the caller's, so "too deep for Python" means
    what it means for ``python file.py``."""
    kwargs = {"feature_version": target} if target < RUNNING else {}
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000 + _depth_here())
        return ast.parse(text, **kwargs)
    except SyntaxError as err:
        if target > RUNNING:
            return None
        where = f" (Python {version_text(target)}, target-version)" if target != RUNNING else ""
        raise SourceRejected(err.lineno or 1, err.offset or 0, f"syntax error: {err.msg}{where}") from None
    except (RecursionError, MemoryError) as err:
        raise SourceRejected(1, 0, f"syntax error: nested too deeply for Python to parse ({type(err).__name__})") from None
    finally:
        sys.setrecursionlimit(limit)


def _depth_here() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def check_depth(tree: ast.Module, text: str, limit: int) -> None:
    """Raise :class:`OverBudget` when statements and expressions nest deeper than ``limit``.

    Statements are walked with an explicit stack; an expression is entered only when it spans
    enough bytes of source to reach the limit (every level of a tree is at least one byte), so an
    ordinary file pays for one look at each statement."""
    if not limit:
        return
    spans = _Spans(text)
    stack: list[tuple[ast.AST, int]] = [(stmt, 1) for stmt in reversed(tree.body)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise _too_deep(limit, getattr(node, "lineno", 1))
        bodies = False
        for name in _BODIES:
            children = getattr(node, name, None)
            if children:
                bodies = True
                stack.extend((child, depth + 1) for child in reversed(children))
        if isinstance(node, getattr(ast, "Match", ())):
            for case in node.cases:
                stack.extend((child, depth + 2) for child in reversed(case.body))
                _check_expression(case.pattern, depth + 1, limit, spans)
                if case.guard is not None:
                    _check_expression(case.guard, depth + 1, limit, spans)
            bodies = True
        if bodies:  # a compound statement: its header's expressions
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, (ast.stmt, ast.excepthandler)):
                    _check_expression(child, depth, limit, spans)
        elif depth + spans.of(node) > limit:
            _check_expression(node, depth, limit, spans)


class _Spans:
    """Bytes of source a node spans (``ast`` columns are UTF-8 byte offsets), line starts on demand."""

    def __init__(self, text: str):
        self.text = text
        self.starts: list[int] | None = None

    def of(self, node: ast.AST) -> int:
        line = getattr(node, "lineno", None)
        if line is None or getattr(node, "end_lineno", None) is None:
            return 1 << 30  # no position (arguments, withitem, comprehension): look inside
        if node.end_lineno == line:
            return node.end_col_offset - node.col_offset
        if self.starts is None:  # lines end as Python's tokenizer ends them: \r\n, \r or \n
            pieces = re.split(r"(\r\n|\r|\n)", self.text)
            sizes = (len(pieces[i].encode("utf-8", "surrogatepass")) + len(pieces[i + 1])
                     for i in range(0, len(pieces) - 1, 2))
            self.starts = [0, *accumulate(sizes)]
        last = len(self.starts) - 1
        start, end = self.starts[min(line - 1, last)], self.starts[min(node.end_lineno - 1, last)]
        return end + node.end_col_offset - start - node.col_offset


def _check_expression(node: ast.AST, base: int, limit: int, spans: _Spans) -> None:
    stack = [(node, base)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            raise _too_deep(limit, getattr(current, "lineno", None) or getattr(node, "lineno", 1))
        if depth + spans.of(current) <= limit:
            continue  # too short to be that deep
        step = 1 + (len(current.values) - 1 if isinstance(current, ast.BoolOp) else 0)
        stack.extend((child, depth + step) for child in ast.iter_child_nodes(current))


def _too_deep(limit: int, line: int) -> OverBudget:
    return OverBudget(f"code nested more than {limit} levels deep (max-depth), from line {line}; "
                      "raise max-depth or exclude the file")


def bracket_depth(text: str) -> tuple[int, int]:
    """(deepest bracket nesting, its line), from Python's tokenizer: for files only libcst can read."""
    depth = deepest = line = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
                if depth > deepest:
                    deepest, line = depth, tok.start[0]
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth = max(depth - 1, 0)
    except (tokenize.TokenError, SyntaxError):
        pass
    return deepest, line


def check_brackets(text: str) -> None:
    deepest, line = bracket_depth(text)
    if deepest > MAX_BRACKETS:
        raise SourceRejected(line, 0, "syntax error: too many nested parentheses")


def _size(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"
