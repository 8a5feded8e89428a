"""A lambda's body runs when the lambda is called, not where it is written: every call in it is
the lambda's own call site (``self.mix = lambda out, res, p: out * gate(p) + res`` runs ``gate``
where ``self.mix(...)`` runs), and a deferred reference of the enclosing function
(:attr:`.calls.CallRecorder.deferred`). A nested lambda's calls are its own."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import children


def body_calls(node: cst.Lambda) -> list[cst.Call]:
    """The calls in ``node``'s body, outermost first, none inside a nested lambda."""
    found, stack = [], [node.body]
    while stack:
        current = stack.pop()
        if type(current) is cst.Lambda:
            continue
        if type(current) is cst.Call:
            found.append(current)
        stack.extend(reversed(list(children(current))))
    return found


def lambda_callees(flows, node: cst.Lambda) -> list[tuple[tuple, cst.Call, bool]]:
    """(callee IR, call, whether it is the whole body) of every call in the body, converted in the
    lambda's own scope (``flows`` is in it): a nested call's arguments flow into its callee there."""
    found = []
    for call in body_calls(node):
        ir = flows.ir.expr(call)
        if ir is None or ir[0] != "c":
            continue
        if call is not node.body and (ir[2] or ir[3]):
            flows.add(("e", ir))
        found.append((ir[1], call, call is node.body))
    return found
