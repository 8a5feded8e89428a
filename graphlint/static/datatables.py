"""Large tables of numbers in source, blanked before libcst parses the module.

Some modules keep data in code: a Hadamard or codebook matrix written out as a nested list of
number literals, megabytes of it. libcst's parser spends most of a check on such a file (a
1.6 MB module of matrices: about 15 s of a 19 s check, where CPython's parser takes 0.7 s), and on
a loaded machine the file then runs past ``file-timeout`` and goes unanalysed -- whether it does
depends on the load, so the same check could give different findings from one run to the next.

No rule reads the numbers inside such a display: what a rule sees is the call around it
(``torch.tensor([...])`` stays an upload of a literal list). So before the libcst parse every list,
set or parenthesized tuple display of :data:`MIN_TABLE` characters or more whose leaves are all
number literals (``1``, ``-0.5``, ``+1``, nested displays of them) has its inside replaced, character
for character, by spaces, keeping every newline and one ``0``: the same lines and columns
everywhere else, so every finding, suppression and location stays where it was. CPython's tree of
the original text (already built to check the source) says where the displays are; a cheap scan
for a long run of number-table characters decides first whether to look at all."""

from __future__ import annotations

import ast
import re

#: characters from which a display of numbers is blanked (real decode code has nothing near it)
MIN_TABLE = 20_000

_TABLE_RUN = re.compile(r"[0-9a-fA-FxXoObBjJ_\s,.+\-\[\]{}()]+")
_NUMBER = (int, float, complex)
_BRACKETS = {ast.List: "[]", ast.Set: "{}", ast.Tuple: "()"}


def blank_tables(text: str, tree: ast.Module) -> str:
    """``text`` with the inside of every large all-number display blanked (see the module's doc)."""
    if len(text) < MIN_TABLE or not any(m.end() - m.start() >= MIN_TABLE for m in _TABLE_RUN.finditer(text)):
        return text
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        brackets = _BRACKETS.get(type(node))
        if brackets is not None and node.end_lineno is not None:
            start = starts[node.lineno - 1] + _chars(lines[node.lineno - 1], node.col_offset)
            end = starts[node.end_lineno - 1] + _chars(lines[node.end_lineno - 1], node.end_col_offset)
            if end - start >= MIN_TABLE and text[start] == brackets[0] and text[end - 1] == brackets[1] \
                    and _all_numbers(node):
                spans.append((start + 1, end - 1))
                continue
        stack.extend(ast.iter_child_nodes(node))
    if not spans:
        return text
    pieces, last = [], 0
    for start, end in sorted(spans):
        inside = re.sub(r"[^\n]", " ", text[start:end])
        first = next(i for i, char in enumerate(inside) if char != "\n")  # a display this long has one
        pieces += [text[last:start], inside[:first], "0", inside[first + 1:]]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _chars(line: str, byte_offset: int) -> int:
    """CPython's column (UTF-8 bytes into the line) as characters."""
    return byte_offset if line.isascii() else len(line.encode("utf-8")[:byte_offset].decode("utf-8", "replace"))


def _all_numbers(display: ast.AST) -> bool:
    stack = [display]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.List, ast.Set, ast.Tuple)):
            stack.extend(node.elts)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            stack.append(node.operand)
        elif not (isinstance(node, ast.Constant) and type(node.value) in _NUMBER):
            return False
    return True
