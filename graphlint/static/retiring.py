"""Loops that retire the element they visit: its clean-up, once per element, not every step.

``for rid in finished: req = self.live.pop(rid); self.release(req)``: the body removes the loop's
element from a container the object keeps (``self.<field>.pop(x)`` / ``.remove(x)`` /
``.discard(x)``, ``del self.<field>[x]``, ``x`` the loop's target), unconditionally, as a statement
of the body's own level. Each element then passes through that body once per stay in the container
(a finished request, a paused one), so what the body does for it is the element's clean-up: once
per request -- what the host-sync rules advise ("read it once per request") -- not a per-step cost
of the loop that calls it. The walk records such loops (``FunctionInfo.retire_loops``; a call
made in one is a call site of its own, :mod:`.calls`), and a function every call of which sits in
one (:func:`retired_only`), and that reaches no model step and no replay (a clean-up runs none),
is no part of the host step: the clean-up's ``.cpu()`` of the finished request's token indexes is
not read every step.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import self_attr

FuncId = tuple[str, str]
REMOVERS = frozenset(("pop", "remove", "discard"))


def retires_element(stmt: cst.For) -> bool:
    """See the module docstring: the loop's (one-name) target removed from a ``self`` field."""
    if type(stmt.target) is not cst.Name or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    element = stmt.target.value
    for line in stmt.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if _removes(small, element):
                return True
    return False


def _removes(small: cst.BaseSmallStatement, element: str) -> bool:
    if type(small) is cst.Del:
        target = small.target
        return type(target) is cst.Subscript and self_attr(target.value) is not None and len(target.slice) == 1 \
            and _is(getattr(target.slice[0].slice, "value", None), element)
    value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return False
    func = value.func
    return func.attr.value in REMOVERS and self_attr(func.value) is not None and bool(value.args) \
        and value.args[0].keyword is None and _is(value.args[0].value, element)


def _is(node, name: str) -> bool:
    return type(node) is cst.Name and node.value == name


def retired_only(calls: dict, fn_of) -> set[FuncId]:
    """Functions called, and only called, from inside loops that retire their element."""
    retiring: dict[FuncId, bool] = {}
    for caller, edges in calls.items():
        loops = fn_of(caller).retire_loops
        for callee, site in edges:
            if site.reference:
                continue
            inside = bool(loops) and not site.loops.isdisjoint(loops)
            retiring[callee] = retiring.get(callee, True) and inside
    return {fid for fid, only in retiring.items() if only}
