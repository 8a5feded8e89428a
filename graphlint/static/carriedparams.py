"""A parameter the per-token loop hands back what the call returned the step before: carried state.

A helper that returns the caller's tensor joined with this step's (``return torch.cat((mems[:, :, -n:],
hiddens), dim=2)``) grows a cache only if the caller carries the result into its next call: the decode
loop's ``mems = update_mems(hiddens, mems, n)``. The same join in a weight helper (``return
torch.cat((w1, w2))``, called once) or in a step whose caller passes fresh operands each time is
an ordinary op. Whether it grows is a fact of the call sites, not of the function: so the walk
marks the return with the parameter whose state it joins (flag ``carried-only:p``, from
:class:`.matchers.growing_concat.GrowingConcat`), each call site records the arguments it passes
back what the same call returned (:func:`carried_slots`: a name the assignment of the call's result
rebinds, in a loop), and the linker keeps the report only where some call edge into the function
passes ``p`` that way in a per-token loop of the caller (:class:`CarriedParams`). The parameter
rebound to its own join and returned (``x = torch.cat([x, pad]); return x``, flag ``carried-param:p``,
reported before this module whatever the callers did) is dropped only where the function's callers are
known and none carries it: an entry point (``decode_step(ids, tok)``, called from outside) keeps it. Carried round a loop over layers or items
(``h = layer(h)``) is no step's state.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.flowir import last_name
from graphlint.static.hostparams import passed_params
from graphlint.static.names import dotted_name

#: a parameter joined onto itself and returned: dropped where every known caller hands it fresh values
FLAG = "carried-param:"
#: a join returned whole (``return torch.cat((mems, new))``): kept only where a caller carries the parameter
STRICT = "carried-only:"


# -- the walk ---------------------------------------------------------------------------------
def carried_slots(call: cst.Call, at) -> tuple:
    """((slot, loop id), ...): the arguments of ``call`` -- a position or a keyword -- that pass a name the
    statement binds from the call's result (``mems = f(h, mems)``, ``out, self.cache = f(x, self.cache)``) in a
    step loop (the innermost, ``at.loop_frames``), not bound before in the same iteration to something else
    (``w = g(h); w = f(w)`` hands ``f`` this step's ``w``; ``t = t.expand(n, -1); t = f(t)`` still the
    carried ``t``): the next iteration hands the call what it returned."""
    stmt, frames = at.stmt, at.loop_frames
    if not at.loop_ids or type(stmt) is not cst.Assign or stmt.value is not call or not frames \
            or frames[-1].id != at.loop_ids[-1] or not frames[-1].eligible:
        return ()
    defs = frames[-1].defs
    bound = {n for t in stmt.targets for n in _places(t.target)}
    out = []
    for i, arg in enumerate(call.args):
        if arg.star:
            break  # the positions after a splat are not known
        place = dotted_name(arg.value) if type(arg.value) in (cst.Name, cst.Attribute) else None
        before = [d for d in defs.get(place, ()) if d[0] < at.order] if place in bound else None
        if before is not None and (not before or place in before[-1][1]):  # ``t = t.expand(...)`` keeps it carried
            out.append((arg.keyword.value if arg.keyword is not None else i, at.loop_ids[-1]))
    return tuple(out)


def _places(target: cst.BaseExpression) -> list[str]:
    """The names and fields (``self.mems``) an assignment target binds."""
    if type(target) in (cst.Name, cst.Attribute):
        place = dotted_name(target)
        return [place] if place else []
    if type(target) in (cst.Tuple, cst.List):
        return [n for el in target.elements for n in _places(el.value)]
    if type(target) is cst.StarredElement:
        return _places(target.value)
    return []


# -- the link ---------------------------------------------------------------------------------
class CarriedParams:
    """Which parameters some call edge passes back what the call returned, in a per-token loop."""

    def __init__(self, infos, raw: dict, loop_bodies: dict[str, dict], open_: set):
        self.callers: dict[tuple[str, str], list] = {}
        self.called: set[tuple[str, str]] = set()  # functions some analysed code calls
        for caller, edges in raw.items():
            for callee, site in edges:
                self.called.add(callee)
                if site.carried and not site.reference:
                    self.callers.setdefault(callee, []).append((caller, site))
        self.open = open_  # entry points: called from outside, with what is not known
        self.loops: dict[tuple[str, str], set[int]] = {}
        for bodies in loop_bodies.values():
            for fid, ids in bodies.items():
                self.loops.setdefault(fid, set()).update(ids)
        self.infos = {info.path: info for info in infos}

    def dropped(self, path: str, cand) -> bool:
        """A join returned to callers of which none carries the parameter it grows."""
        fid = (path, cand.function)
        strict = [f[len(STRICT):] for f in cand.flags if f.startswith(STRICT)]
        if strict:  # a join returned whole: only a carrying call site makes it state
            return not any(self.carried(fid, p) for p in strict)
        params = [f[len(FLAG):] for f in cand.flags if f.startswith(FLAG)]
        if not params or fid in self.open or fid not in self.called:
            return False  # no caller known (an entry point, ``decode_step(ids, tok)``): what it is handed is not known
        return not any(self.carried(fid, p) for p in params)

    def carried(self, fid: tuple[str, str], param: str) -> bool:
        params = passed_params(self.infos, fid)
        name = fid[1].rpartition(".")[2]
        for caller, site in self.callers.get(fid, ()):
            if last_name(site.expr) != name and name not in ("forward", "__call__"):
                continue  # ``f = partial(g, a)``, a stored bound method: its arguments may sit elsewhere
            for slot, loop in site.carried:
                if loop not in self.loops.get(caller, ()):
                    continue
                if type(slot) is int:
                    slot = params[0][slot] if params is not None and slot < len(params[0]) else None
                if slot == param:
                    return True
        return False
