"""What the captured code sees: argument values along the graph context's own calls.

:mod:`.argvalues` decides branches from what every hot caller passes, in any context. A model's
forward is captured with the decode arguments (``cu_seqlen_prefill=None``, no images, no adapter
data) but the same forward also runs eagerly for prefill, so ``if cu_seqlen_prefill is not None:``
stays open there, and the prefill-only code under it (a masked attention, position ids built from
the prompt's images) was reported as captured code, at full severity. A graph replays only what
its capture ran: here the values come from the capture sites and the calls between captured
functions only, and a branch no capture can take is not captured code. Its candidates, and the
functions only such branches reach, keep whatever other context they have (an eager prefill is
not per step, a host step is a warning).
"""

from __future__ import annotations

from graphlint.static.argvalues import ArgValues
from graphlint.static.facts import CallSite, ModuleInfo

FuncId = tuple[str, str]


def captured_values(infos: list[ModuleInfo], raw: dict[FuncId, list[tuple[FuncId, CallSite]]], discovery,
                    contexts) -> ArgValues | None:
    """The captured functions' argument values; drops from ``contexts``' graph chains the functions
    that only calls under branches no capture takes reach. None when nothing is captured."""
    graph = contexts.placement.chains.get("graph")
    if not graph:
        return None
    hot = set(graph)
    roots = [f for f, _ in discovery.roots.get("graph", ()) if f in hot]
    # a root a capture site calls gets what that site passes; any other (a compiled or declared
    # region, a graphed callable) is called from where this does not look: every parameter unknown
    captured = {callee for out in raw.values() for callee, site in out if site.in_capture}
    open_ = {f for f in roots if f not in captured}
    values = ArgValues(infos, raw, discovery.index)
    values.solve(hot, hot, open_)
    _drop_dead(graph, roots, raw, hot, values)
    return values


def eager_values(infos: list[ModuleInfo], raw: dict[FuncId, list[tuple[FuncId, CallSite]]], discovery,
                 contexts) -> ArgValues | None:
    """The same for the eager per-token context: values from its roots and the calls between its
    functions only. A host step's eager round (``if batch.mode.is_decode(): return
    self.forward_decode(batch)``, the model run eagerly for batch sizes no graph holds) gets what
    its own callers pass, narrowed by the branch it is called under (:func:`.modetests.narrowing`):
    the extend arm of a layer's mode dispatch is not eager per-token code either. Drops from the
    eager chains what only dead calls reach; None when there is no eager code."""
    placement = contexts.placement
    eager = placement.chains.get("eager")
    if not eager:
        return None
    loops = placement.loop_bodies.get("eager", {})
    if any(_calls_unknown(discovery.by_path.get(f[0]), f, ids, raw) for f, ids in loops.items()):
        return None
    hot = set(eager) | set(loops)
    open_ = set(loops) | {f for f, chain in discovery.roots.get("eager", ()) if len(chain) == 1}
    starts = sorted({chain[0] for chain in eager.values() if chain} | set(loops))
    values = ArgValues(infos, raw, discovery.index)
    values.solve(hot, hot | set(starts), open_, {f: ids for f, ids in loops.items() if f not in eager})
    _drop_dead(eager, starts, raw, hot, values)
    return values


def _drop_dead(chains: dict, starts, raw, hot: set, values: ArgValues) -> None:
    """Take out of ``chains`` the functions only calls the solve decided dead reach from ``starts``."""
    if values.dead_sites:
        every = _reach(starts, raw, hot, frozenset())
        live = _reach(starts, raw, hot, values.dead_sites)
        for fid in every - live:
            chains.pop(fid, None)


def _calls_unknown(info, fid: FuncId, loop_ids, raw) -> bool:
    """Whether a per-token loop calls a parameter the call graph leaves unresolved (an exported
    ``generate(model, ...)`` calling ``model(...)``): any forward may run there, with any arguments,
    so the eager context's own calls do not say what its functions get."""
    fn = info.functions.get(fid[1]) if info is not None else None
    flow = info.flows.get(fid[1]) if info is not None else None
    if fn is None or flow is None:
        return False
    resolved = {id(site) for _, site in raw.get(fid, ())}
    for site in fn.calls:
        expr = site.expr
        if not site.loops or not set(site.loops) & set(loop_ids) or id(site) in resolved or not expr:
            continue
        base = expr[1] if expr[0] == "a" and expr[1] and expr[1][0] == "n" else expr
        if base[0] == "n" and base[1] in flow.params:
            return True
    return False


def _reach(roots: list[FuncId], raw: dict, hot: set[FuncId], dead) -> set[FuncId]:
    seen = set(roots)
    todo = list(roots)
    while todo:
        caller = todo.pop()
        for callee, site in raw.get(caller, ()):
            if callee in hot and callee not in seen and (caller, id(site)) not in dead:
                seen.add(callee)
                todo.append(callee)
    return seen
