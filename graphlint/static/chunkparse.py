"""libcst's tree of a large module, parsed one top-level statement group at a time.

libcst's native parser costs more per node on a large module than on the same statements parsed
apart (measured on torch's files: about a fifth less for ``common_methods_invocations.py`` and
``_inductor/lowering.py`` in pieces, a tenth for ``_inductor/ir.py``, nothing measurable under
120 kB; why is not measured, the parser's working data outgrowing the CPU caches is a guess). So
a module over :data:`MIN_CHUNKED` characters is cut after top-level statements, where CPython's
tree (already built) says one ends and the next begins, each piece is parsed alone, and the
pieces are stitched into the one :class:`libcst.Module` a whole parse gives.

A cut is made only where the stitching is exact: the lines between two statements are empty or
comments at column 0 (libcst gives those to the next statement; an indented comment or a line of
blanks may belong to the block before it), no ``\\r`` anywhere, and every piece detects the same
indentation and line ending (a piece with no indented block detects libcst's default, so all
agree only when the module's first indented block, which sets the module's, agrees too).
Anything else is parsed whole. ``None``: parse it whole (no cut, or a piece libcst rejects: the
whole parse then says why)."""

from __future__ import annotations

import ast
from typing import Callable

import libcst as cst

#: characters from which a module is parsed in pieces (the gain is on the largest; 16-120 kB neither gain nor lose)
MIN_CHUNKED = 16_000
#: characters a piece grows to before the next cut (many tiny parses cost more than they save)
PIECE = 4_000


def cut_points(text: str, tree: ast.Module) -> list[int]:
    """Character offsets where a piece may start (each the start of a line after a statement)."""
    if "\r" in text or len(tree.body) < 2:
        return []
    starts = [0]  # the character offset of each line (1-based line n starts at starts[n - 1])
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    cuts, last = [], 0
    body = tree.body
    for before, after in zip(body, body[1:]):
        end = before.end_lineno
        first = min([after.lineno, *(d.lineno for d in getattr(after, "decorator_list", ()))])
        if end is None or first <= end or end >= len(starts):
            continue
        offset = starts[end]  # the line after the statement ends
        if offset - last < PIECE or not _free(text, starts, end, first):
            continue
        cuts.append(offset)
        last = offset
    return cuts


def _free(text: str, starts: list[int], end: int, first: int) -> bool:
    """Lines ``end + 1 .. first - 1`` (1-based) are empty, or comments at column 0."""
    for line in range(end + 1, first):
        start = starts[line - 1]
        char = text[start:start + 1]
        if char not in ("\n", "#"):
            return False
    return True


def parse_in_pieces(text: str, tree: ast.Module, parse: Callable[[str], cst.Module]) -> cst.Module | None:
    if len(text) < MIN_CHUNKED:
        return None
    cuts = cut_points(text, tree)
    if not cuts:
        return None
    bounds = [0, *cuts, len(text)]
    try:
        pieces = [parse(text[a:b]) for a, b in zip(bounds, bounds[1:])]
    except cst.ParserSyntaxError:
        return None
    head = pieces[0]
    body: list = list(head.body)
    for piece in pieces[1:]:
        if (not piece.body or piece.default_newline != head.default_newline or piece.encoding != head.encoding
                or piece.default_indent != head.default_indent):
            return None  # each piece detected its own: the whole module's is the first indented one's
        first, *rest = piece.body
        if piece.header:
            first = first.with_changes(leading_lines=(*piece.header, *first.leading_lines))
        body.append(first)
        body.extend(rest)
    for piece in pieces[:-1]:
        if piece.footer or not piece.has_trailing_newline:
            return None
    last = pieces[-1]
    return head.with_changes(body=body, footer=last.footer, has_trailing_newline=last.has_trailing_newline)
