"""``# graphlint: ignore[...]`` comments.

- at the end of a line: covers that line's whole logical statement (all its physical lines);
- on a line of its own: covers the next statement (its header only, for ``if``/``def``...; a
  decorated ``def``/``class`` is one statement from its first decorator to the end of its header);
- ``[GL101, host-sync-item]`` limits it to those codes or names; bare ``ignore`` means all rules;
- text after ``--`` is the reason, shown with ``--show-suppressed``;
- ``# graphlint: skip-file`` anywhere in a comment skips the file.

``# noqa`` is deliberately not honoured: it belongs to other linters, and silencing capture
hazards by accident is worse than a duplicate comment. The file is tokenized only when it
contains ``graphlint:`` at all, so clean files pay nothing.
"""

from __future__ import annotations

import io
import re
import tokenize

from graphlint.static.api import Suppression

DIRECTIVE = re.compile(
    r"#\s*graphlint\s*:\s*(?P<kind>ignore|skip-file)\b\s*(?:\[(?P<codes>[^\]]*)\])?\s*(?:--\s*(?P<reason>.*))?",
)
SKIP_TOKENS = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENCODING)


def parse_suppressions(text: str) -> tuple[list[Suppression], bool]:
    """(suppressions, skip_file). Tokenizer errors end the scan quietly (the parse reports them)."""
    if "graphlint" not in text:
        return [], False
    comments: list[tuple[int, int, bool, re.Match]] = []  # (line, 1-based col, own_line, match)
    statements: list[tuple[int, int]] = []  # logical statement line ranges
    start = None
    last_code_line = 0
    decorator = False  # the logical line under way is a decorator: it runs on into the def/class header
    fresh = True  # the next significant token begins a logical line
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                match = DIRECTIVE.search(tok.string)
                if match:
                    col = tok.start[1] + match.start() + 1
                    comments.append((tok.start[0], col, tok.start[0] != last_code_line, match))
                continue
            if tok.type == tokenize.NEWLINE and start is not None:
                if not decorator:
                    statements.append((start, tok.start[0]))
                    start = None
                fresh = True
            elif tok.type not in SKIP_TOKENS and tok.type != tokenize.ENDMARKER:
                if fresh:
                    start = tok.start[0] if start is None else start
                    decorator, fresh = tok.type == tokenize.OP and tok.string == "@", False
                last_code_line = tok.end[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    if start is not None:
        statements.append((start, max(start, last_code_line)))
    result: list[Suppression] = []
    skip_file = False
    for line, col, own_line, match in comments:
        if match["kind"] == "skip-file":
            skip_file = True
            continue
        codes = tuple(c.strip() for c in (match["codes"] or "").split(",") if c.strip())
        if match["codes"] is not None and not codes:
            codes = ("[]",)  # ``ignore[]`` names no rule: an invalid suppression (GL003), never a blanket one
        first, last = _covered(statements, line, own_line)
        result.append(Suppression(line, first, last, codes, (match["reason"] or "").strip(), col))
    return result, skip_file


def _covered(statements: list[tuple[int, int]], line: int, own_line: bool) -> tuple[int, int]:
    for first, last in statements:
        if own_line and first > line:
            return first, last
        if not own_line and first <= line <= last:
            return first, last
    return line, line
