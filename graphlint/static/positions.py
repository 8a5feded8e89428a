"""Source positions for the few nodes we report, without libcst's PositionProvider.

The walker records, for each candidate, the path of its statement (``(("body", 3),
("orelse", 0))``, in ``ast`` terms: one entry per small statement, ``elif`` as a nested ``If``)
and the anchor node's rank among the nodes of its class in that statement (pre-order, source
order). Only files with candidates are then parsed again with ``ast`` -- about a tenth of a
libcst parse -- and the rank is looked up among the same-class ``ast`` nodes sorted by position.
Anchors are calls, subscripts and attributes, the node classes both trees share one-to-one;
anything else is placed at its first such descendant, or else at its statement's first line.
"""

from __future__ import annotations

import ast

import libcst as cst

from graphlint.static.cstwalk import preorder

ANCHOR_CLASSES = ("Call", "Subscript", "Attribute")
CST_HEADER_FIELDS = {
    cst.If: ("test",), cst.While: ("test",), cst.For: ("target", "iter"), cst.With: ("items",),
    cst.Match: ("subject",), cst.FunctionDef: (), cst.ClassDef: (), cst.Try: (), cst.TryStar: (),
}
AST_HEADER_FIELDS = {
    ast.If: ("test",), ast.While: ("test",), ast.For: ("target", "iter"), ast.AsyncFor: ("target", "iter"),
    ast.With: ("items",), ast.AsyncWith: ("items",), ast.FunctionDef: (), ast.AsyncFunctionDef: (),
    ast.ClassDef: (), ast.Try: (),
}
if hasattr(ast, "Match"):
    AST_HEADER_FIELDS[ast.Match] = ("subject",)
if hasattr(ast, "TryStar"):
    AST_HEADER_FIELDS[ast.TryStar] = ()

StmtPath = tuple[tuple[str, int], ...]


def cst_roots(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    fields = CST_HEADER_FIELDS.get(type(stmt))
    if fields is None:
        return [stmt]
    roots: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(stmt, name)
        roots.extend(value if isinstance(value, (list, tuple)) else [value])
    return roots


class Ranker:
    """:func:`anchor_rank` for every candidate of a file: each statement is ranked once (a
    statement with n candidates cost n walks of it before: a 1,000-term sum of ``.item()``
    calls took seconds)."""

    def __init__(self) -> None:
        self._ranks: dict[int, dict[int, tuple[str, int]]] = {}

    def rank(self, stmt: cst.CSTNode, anchor: cst.CSTNode) -> tuple[str, int]:
        """(class name, 1-based rank) of ``anchor`` in ``stmt``; ("", 0) when it cannot be ranked."""
        if type(anchor).__name__ not in ANCHOR_CLASSES:  # ``x.sum() > 0``: its first call, subscript or attribute
            anchor = next((n for n in preorder(anchor) if type(n).__name__ in ANCHOR_CLASSES), None)
            if anchor is None:
                return "", 0
        table = self._ranks.get(id(stmt))
        if table is None:
            table = self._ranks[id(stmt)] = {}
            counts = dict.fromkeys(ANCHOR_CLASSES, 0)
            for root in cst_roots(stmt):
                for node in preorder(root):
                    cls = type(node).__name__
                    if cls in counts:
                        counts[cls] += 1
                        table[id(node)] = (cls, counts[cls])
        return table.get(id(anchor), ("", 0))


def anchor_rank(stmt: cst.CSTNode, anchor: cst.CSTNode) -> tuple[str, int]:
    """(class name, 1-based rank) of ``anchor`` in ``stmt``; ("", 0) when it cannot be ranked."""
    return Ranker().rank(stmt, anchor)


def _ast_statement(tree: ast.Module, path: StmtPath) -> ast.AST | None:
    node: ast.AST = tree
    for field, index in path:
        if field.startswith(("handlers.", "cases.")):
            name, _, i = field.partition(".")
            node = getattr(node, name)[int(i)]
            body = node.body
        else:
            body = getattr(node, "body" if field == "with" else field, None)  # a ``with``'s block
        if not isinstance(body, list) or index >= len(body):
            return None
        node = body[index]
    return node


class Locator:
    """:func:`locate` for every candidate of a file: each statement's nodes are sorted once."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self._statements: dict[StmtPath, ast.AST | None] = {}
        self._found: dict[tuple[StmtPath, str], list[ast.AST]] = {}

    def locate(self, path: StmtPath, cls: str, rank: int) -> tuple[int, int]:
        """(line, 0-based byte column) of the ranked node, or of its statement as a fallback."""
        if path not in self._statements:
            self._statements[path] = _ast_statement(self.tree, path)
        stmt = self._statements[path]
        if stmt is None:
            return 1, 0
        if rank:
            found = self._found.get((path, cls))
            if found is None:
                fields = AST_HEADER_FIELDS.get(type(stmt))
                roots = [stmt] if fields is None else [v for f in fields for v in _as_list(getattr(stmt, f))]
                wanted = getattr(ast, cls)
                found = [n for root in roots for n in ast.walk(root) if isinstance(n, wanted)]
                found.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))
                self._found[(path, cls)] = found
            if rank <= len(found):
                node = found[rank - 1]
                return node.lineno, node.col_offset
        return stmt.lineno, stmt.col_offset


def locate(tree: ast.Module, path: StmtPath, cls: str, rank: int) -> tuple[int, int]:
    """(line, 0-based byte column) of the ranked node, or of its statement as a fallback."""
    return Locator(tree).locate(path, cls, rank)


def cst_position(positions, stmt: cst.CSTNode, anchor: cst.CSTNode) -> tuple[int, int]:
    """(line, 1-based character column) from libcst's own positions, for a file only libcst can
    parse (syntax newer than the running Python): the node :class:`Ranker` would rank."""
    if type(anchor).__name__ not in ANCHOR_CLASSES:
        anchor = next((n for n in preorder(anchor) if type(n).__name__ in ANCHOR_CLASSES), None) or stmt
    where = positions.get(anchor) or positions.get(stmt)
    return (where.start.line, where.start.column + 1) if where is not None else (1, 1)


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else [value]
