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


def anchor_rank(stmt: cst.CSTNode, anchor: cst.CSTNode) -> tuple[str, int]:
    """(class name, 1-based rank) of ``anchor`` in ``stmt``; ("", 0) when it cannot be ranked."""
    cls = type(anchor).__name__
    if cls not in ANCHOR_CLASSES:  # ``x.sum() > 0``: place it at its first call, subscript or attribute
        inner = next((n for n in preorder(anchor) if type(n).__name__ in ANCHOR_CLASSES), None)
        if inner is None:
            return "", 0
        anchor, cls = inner, type(inner).__name__
    rank = 0
    for root in cst_roots(stmt):
        for node in preorder(root):
            if type(node).__name__ == cls:
                rank += 1
                if node is anchor:
                    return cls, rank
    return "", 0


def _ast_statement(tree: ast.Module, path: StmtPath) -> ast.AST | None:
    node: ast.AST = tree
    for field, index in path:
        if field.startswith(("handlers.", "cases.")):
            name, _, i = field.partition(".")
            node = getattr(node, name)[int(i)]
            body = node.body
        else:
            body = getattr(node, field, None)
        if not isinstance(body, list) or index >= len(body):
            return None
        node = body[index]
    return node


def locate(tree: ast.Module, path: StmtPath, cls: str, rank: int) -> tuple[int, int]:
    """(line, 0-based byte column) of the ranked node, or of its statement as a fallback."""
    stmt = _ast_statement(tree, path)
    if stmt is None:
        return 1, 0
    if rank:
        fields = AST_HEADER_FIELDS.get(type(stmt))
        roots = [stmt] if fields is None else [v for f in fields for v in _as_list(getattr(stmt, f))]
        wanted = getattr(ast, cls)
        found = [n for root in roots for n in ast.walk(root) if isinstance(n, wanted)]
        found.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))
        if rank <= len(found):
            node = found[rank - 1]
            return node.lineno, node.col_offset
    return stmt.lineno, stmt.col_offset


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else [value]
