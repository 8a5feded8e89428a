"""The literals a function's returned tuple holds at a position on every path, carried to the names a
caller unpacks from it -- so a branch on such a name is decided (:mod:`.argvalues`).

A video model's embedding helper returns ten things, one of them a CUDA-graph mask it only ever sets
to ``None`` (``xattn_mask_for_cuda_graph = None`` ... ``return (x, ..., xattn_mask_for_cuda_graph, H,
W)``); the forward unpacks the tuple and hands the name on to the context-parallel helpers, which
prepare the graph's parameters under ``if xattn_mask_for_cuda_graph is not None:`` -- host reads and
uploads no configuration runs. The name was unknown (a call's result), so the branch was taken.

Here each ``return`` of a tuple display gives, per position, the literals it can hold (a literal, or
a local every binding of which is one: the branches it was bound under only narrow that); a function
whose every return is such a display of one length, and that never falls off its end, records the
positions where only literals come back (``FunctionInfo.returned_consts``). ``a, b, c = f(x)`` binds
``c`` to ``("re", <f's flow IR>, 2)``; :func:`unpacked` answers it with the literals every function the
call graph gives the call returns there, unknown where one records none.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import last_returns

RETURNED = "re"
#: a function's returns so far that are not all one tuple display of literals-or-not (id of its body)
_MIXED = "mixed"


def note_return(facts, value: cst.BaseExpression | None) -> None:
    """One ``return`` of the function :class:`.valuefacts.ValueFacts` is walking (its body's id keys it)."""
    table = facts.__dict__.setdefault("tuple_returns", {})
    key = id(facts.body)
    if type(value) is not cst.Tuple or any(type(el) is not cst.Element for el in value.elements):
        table[key] = _MIXED
        return
    found = [_literals(facts.value(el.value)) for el in value.elements]
    known = table.get(key)
    if known is None:
        table[key] = found
    elif known is not _MIXED:
        table[key] = _MIXED if len(known) != len(found) else [
            a | b if a is not None and b is not None else None for a, b in zip(known, found)]


def result(facts, stmt: cst.FunctionDef) -> tuple:
    """``FunctionInfo.returned_consts``: ((position, literals), ...) where every return gives literals."""
    known = facts.__dict__.get("tuple_returns", {}).pop(id(stmt.body), None)
    if known is None or known is _MIXED or not last_returns(stmt.body):
        return ()
    return tuple((k, tuple(sorted(lits, key=repr))) for k, lits in enumerate(known) if lits is not None)


def _literals(found: tuple | None) -> frozenset | None:
    """The literals a value IR can be: ``("c", v)``, or a local bound only to literals (``("l", ...)``)."""
    if found is None:
        return None
    if found[0] == "c":
        return frozenset((found[1],))
    if found[0] != "l" or not found[1]:
        return None
    out: set = set()
    for value, _ in found[1]:
        if value is None or value[0] != "c":
            return None
        out.add(value[1])
    return frozenset(out)


def unpack(facts, target: cst.BaseExpression, value: cst.BaseExpression | None) -> bool:
    """``a, b = f(x)``: bind each plain name to its position of what ``f`` returns; False where the
    statement is no such unpacking (a starred target, not a call, a call the walk has no IR of)."""
    if type(target) not in (cst.Tuple, cst.List) or type(value) is not cst.Call \
            or any(type(el) is not cst.Element for el in target.elements):
        return False
    expr = facts.call_exprs.get(id(value))
    if expr is None:
        return False
    for k, el in enumerate(target.elements):
        if type(el.value) is cst.Name:
            facts.carried.pop(el.value.value, None)
            facts.bind(el.value.value, (RETURNED, expr, k))
        else:
            facts.stored(el.value)
    return True


def unpacked(values, v: tuple, fid) -> frozenset | None:
    """The literals position ``v[2]`` of what the call ``v[1]`` of ``fid`` returns can be, from every
    function the call graph gives it; None (unknown) where one records none there."""
    targets = [callee for callee, site in values.raw.get(fid, ()) if site.expr == v[1] and not site.reference]
    found: set = set()
    for callee in targets:
        fn = values.fns.get(callee)
        consts = dict(fn[1].returned_consts).get(v[2]) if fn is not None else None
        if consts is None:
            return None
        found.update(consts)
    return frozenset(found) if targets else None
