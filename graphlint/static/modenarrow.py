"""A parameter a branch tested through a field's query, handed on as what the test found
(:mod:`.modetests`, for :class:`.argvalues.ArgValues`).

A host step runs the model eagerly for the batch sizes no graph holds, under the same test of the
batch's mode the layers dispatch on (``if batch.mode.is_decode(): return self.forward_decode(batch)``
above ``if batch.mode.is_decode(): <decode kernel> else: <extend path>``). The eager call's batch
is whatever the host step got -- unknown -- but the branch says what its ``mode.is_decode()``
answers: when every method the call may run is a test of ``self`` of one enum, the members that
answer so (:class:`.modetests.Member`); else, when each is at least a query, the answer itself
(:class:`.modetests.Tested`: the same question asked again gets it, another one nothing).
"""

from __future__ import annotations

from graphlint.static.modetests import SELF, Built, Holds, Member


def narrowing(values, caller, site, evaluate):
    """``evaluate`` for one call site, with a parameter the site's branch tests through a field's
    query (``if batch.mode.is_decode(): self.decode(batch)``) handed on as a :class:`Holds` of
    that answer: the callee's same test is decided. Only where the field is never rebound after
    its object is built (:meth:`Modes.stable`) and every method the call may run is a query."""
    facts: dict[str, set] = {}
    for c in site.cond:
        want = True
        while c[0] == "not":  # ``if not b.mode.is_decode(): return ...`` leaves ``not not``
            want, c = not want, c[1]
        mc = c[1] if c[0] == "t" else None
        if mc is None or mc[0] != "mc" or mc[1][0] != "at" or mc[1][1] is None or mc[1][1][0] != "p":
            continue
        if values.modes.stable(mc[1][2]) and _queries(values, caller, mc[3]):
            members = _members(values, caller, mc, want)  # the enum's members that answer ``want``
            facts.setdefault(mc[1][1][1], set()).add((mc[1][2], None, members) if members else (mc[1][2], mc[2], want))
    if not facts:
        return evaluate

    def narrowed(v):
        found = evaluate(v)
        if v is None or v[0] != "p" or v[1] not in facts:
            return found
        known = facts[v[1]]
        if found is None:
            return frozenset((Holds(tuple(sorted(known, key=repr))),))
        return frozenset(x if isinstance(x, Built) else Holds(tuple(sorted(known | set(
            x.facts if isinstance(x, Holds) else ()), key=repr))) for x in found)
    return narrowed


def _queries(values, caller, fallback) -> bool:
    """Whether every function the call graph gives the call (``fallback``: ``("r", callee IR)``) is a query."""
    if fallback is None or fallback[0] != "r":
        return False
    targets = [callee for callee, site in values.raw.get(caller, ()) if site.expr == fallback[1] and not site.reference]
    return bool(targets) and all(callee in values.fns and values.fns[callee][1].query for callee in targets)


def _members(values, caller, mc, want: bool) -> frozenset | None:
    """The members of the one enum every target of the tested call belongs to whose answer is
    exactly ``want`` (``is_decode()`` True: ``{Mode.DECODE}``); None when the targets are not all
    that enum's tests of ``self``."""
    targets = {callee for callee, site in values.raw.get(caller, ()) if site.expr == mc[3][1] and not site.reference}
    owners = {callee[1].rpartition(".")[0].rpartition(".")[2] for callee in targets}
    if len(owners) != 1 or not all(c in values.fns and values.fns[c][1].returns_test for c in targets):
        return None
    owner = owners.pop()
    if owner not in values.modes.enums:
        return None
    names, methods = values.modes.enums[owner]
    test = methods.get(mc[2])
    if test is None:
        return None
    return frozenset(m for m in (Member(owner, n) for n in names)
                     if values.truths(test, ("", ""), {SELF: frozenset((m,))}) == frozenset((want,))) or None
