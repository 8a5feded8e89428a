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

from graphlint.static.cstwalk import name_children, preorder


def bound_once(facts, name: str) -> bool:
    """Whether ``name`` has exactly one binding in the function ``facts`` walks (``facts.defn``)."""
    return facts.defn is not None and counts(facts)[name] == 1


def counts(facts) -> Counter:
    """How often the function ``facts`` walks binds each name: :func:`binding_counts` of ``facts.defn``,
    counted the first time anyone asks and kept on ``facts``."""
    if facts.bindings is None:
        facts.bindings = binding_counts(facts.defn)
    return facts.bindings


def sole_assignments(facts, name: str) -> list[cst.BaseExpression]:
    """The values of every ``name = value`` in the function ``facts`` walks, when those are all its
    bindings of ``name`` (no parameter, loop target, augmented assignment...); else none. Collected
    for every name on the first call and kept on ``facts``."""
    if facts.assigned is None:
        assigned: dict[str, list[cst.BaseExpression]] = {}
        for node in preorder(facts.defn):
            if type(node) is cst.Assign:
                for target in node.targets:
                    if type(target.target) is cst.Name:
                        assigned.setdefault(target.target.value, []).append(node.value)
        facts.assigned = assigned
    values = facts.assigned.get(name, [])
    return values if len(values) == counts(facts).get(name, 0) else []


def binding_counts(defn: cst.CSTNode) -> Counter:
    """How often ``defn`` (itself included) binds each name. A plain walk of the fields that can
    hold a binding (:func:`.cstwalk.name_children`), not libcst's visitor: its dispatch per node
    was about a twentieth of a worker's time on torch's files."""
    counts: Counter = Counter()
    stack = [defn]
    pop, extend, handlers = stack.pop, stack.extend, _HANDLERS
    while stack:
        node = pop()
        handler = handlers.get(type(node))
        if handler is not None:
            handler(node, counts)
        extend(name_children(node))
    return counts


def _target(node: cst.CSTNode, counts: Counter, times: int = 1) -> None:
    if type(node) is cst.Name:
        counts[node.value] += times
    elif type(node) in (cst.Tuple, cst.List):
        for el in node.elements:
            _target(el.value, counts, times)
    elif type(node) is cst.StarredElement:
        _target(node.value, counts, times)


def _import_alias(node: cst.ImportAlias, counts: Counter) -> None:
    if node.asname is None:  # ``import a.b`` binds ``a`` (an ``as`` name is an AsName)
        root = node.name
        while type(root) is cst.Attribute:
            root = root.value
        _target(root, counts)


def _named(node, counts: Counter, times: int = 1) -> None:
    for item in node.names:
        counts[item.name.value] += times


def _optional(node, counts: Counter) -> None:
    if node.name is not None:
        _target(node.name, counts)


_HANDLERS = {
    cst.Param: lambda node, counts: counts.update((node.name.value,)),
    cst.AssignTarget: lambda node, counts: _target(node.target, counts),
    cst.AnnAssign: lambda node, counts: _target(node.target, counts),
    cst.AugAssign: lambda node, counts: _target(node.target, counts, 2),  # a rebinding of a name bound before
    cst.For: lambda node, counts: _target(node.target, counts),
    cst.CompFor: lambda node, counts: _target(node.target, counts),
    cst.AsName: lambda node, counts: _target(node.name, counts),
    cst.NamedExpr: lambda node, counts: _target(node.target, counts),
    cst.Del: lambda node, counts: _target(node.target, counts, 2),
    cst.ImportAlias: _import_alias,
    cst.FunctionDef: lambda node, counts: counts.update((node.name.value,)),
    cst.ClassDef: lambda node, counts: counts.update((node.name.value,)),
    cst.Global: lambda node, counts: _named(node, counts, 2),
    cst.Nonlocal: lambda node, counts: _named(node, counts, 2),
    cst.MatchAs: _optional,
    cst.MatchStar: _optional,
    cst.MatchMapping: lambda node, counts: _target(node.rest, counts) if node.rest is not None else None,
}
