"""Locals a function binds once, to a number literal, and never again (``max_kv_splits = 8``).

A lower-case local bound to a literal is not a Python number to the oracle by itself: a loop may
advance it after the binding (``pos = 0`` ... ``pos += 1``), and the walk meets the binding first.
Where the whole function holds no other binding of the name -- no parameter, assignment,
augmented assignment, ``for`` / ``with`` / ``except`` / walrus / import / ``del`` / ``def`` target,
``global`` or ``nonlocal`` (nested functions and comprehensions included: over-counting only
keeps a name out) -- the literal is what the name holds wherever it is bound. Asked lazily, the
first time a function binds a lower-case name to a number literal (:meth:`.tensors.TensorOracle.bind`).
"""

from __future__ import annotations

from collections import Counter

import libcst as cst


def bound_once(facts, name: str) -> bool:
    """Whether ``name`` has exactly one binding in the function ``facts`` walks (``facts.defn``)."""
    if facts.defn is None:
        return False
    if facts.bindings is None:
        counter = _Bindings()
        facts.defn.visit(counter)
        facts.bindings = counter.counts
    return facts.bindings[name] == 1


class _Bindings(cst.CSTVisitor):
    def __init__(self):
        self.counts: Counter = Counter()

    def _target(self, node: cst.BaseExpression) -> None:
        if type(node) is cst.Name:
            self.counts[node.value] += 1
        elif type(node) in (cst.Tuple, cst.List):
            for el in node.elements:
                self._target(el.value)
        elif type(node) is cst.StarredElement:
            self._target(node.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.counts[node.name.value] += 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)
        self._target(node.target)  # a rebinding of a name bound before: never once

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._target(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target)
        self._target(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:  # ``import a.b`` binds ``a`` (an ``as`` name is an AsName)
            root = node.name
            while type(root) is cst.Attribute:
                root = root.value
            self._target(root)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.counts[node.name.value] += 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.counts[node.name.value] += 1

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.counts[item.name.value] += 2

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.counts[item.name.value] += 2

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._target(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self._target(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self._target(node.rest)
