"""A callable parameter's call, resolved per call site: what runs when a function calls what it
was handed is what *that* caller handed it.

The points-to analysis is context-insensitive: a helper ``def forward_step(fn, x): return fn(x)``
that a serving step calls with a graph runner's ``run`` and an eager generate loop calls with the
model itself has one ``fn``, holding both, so both callers seemed to replay *and* run the model
eagerly -- the generate loop turned into a host step and the model lost its eager role. For such a
helper (a call of one of its own parameters, not rebound, outside a capture and outside a step loop
-- ``for child in self.children(): fn(child)`` visits a collection, the copies lose nothing a step
loop needs), when every call of it
in the analysed code passes a callable the call graph resolves, the helper's edges to what its
parameter holds are replaced by edges from each caller to what that caller passes, made at the
caller's call site (its loops, branches and capture state: what the helper runs, it runs when the
caller calls it). The copies carry no arguments: what the helper passes on is not what the caller
passed (:mod:`.argvalues` sees unknown values there). Helpers called through ``*args``, as a
callback, implicitly or with a parameter left to its default keep the context-insensitive edges.

The argument's points-to node is kept only for calls of functions so named (:meth:`names`),
before the one solve; :class:`graphlint.static.callgraph.CallGraph` then reads it here.
"""

from __future__ import annotations

from dataclasses import replace

from graphlint.static.facts import CallSite, ModuleInfo, ScopeFlow

FuncId = tuple[str, str]
Raw = dict[FuncId, list[tuple[FuncId, CallSite]]]


def parameter_calls(infos: list[ModuleInfo]) -> dict[FuncId, list[tuple[str, CallSite]]]:
    """Functions that call one of their own parameters, with (parameter, call site) for each."""
    found: dict[FuncId, list[tuple[str, CallSite]]] = {}
    for info in infos:
        for qual, fn in info.functions.items():
            flow = info.flows.get(qual)
            if flow is None or fn.device_code:
                continue
            params = set(flow.call_params()) | set(flow.kwonly)
            steps = {*fn.range_loops, *(loop.id for loop in fn.loops)}
            for site in fn.calls:
                if site.expr[0] == "n" and site.expr[1] in params and not site.in_capture and not site.reference \
                        and not steps.intersection(site.loops) and not site.cond and not _rebinds(flow, site.expr[1]):
                    found.setdefault((info.path, qual), []).append((site.expr[1], site))
    return found


def names(helpers: dict[FuncId, list]) -> frozenset[str]:
    """The simple names whose calls keep their arguments' nodes (:class:`.flowlink.Linker`)."""
    return frozenset(q.rpartition(".")[2] for _, q in helpers)


def specialize(raw: Raw, infos: list[ModuleInfo], graph, helpers) -> dict[FuncId, dict[tuple, list[FuncId]]]:
    """Rewrites ``raw`` in place (see the module's doc); returns caller -> callee expression -> what
    the helper it calls runs for it (a per-token loop's targets: :meth:`CallGraph.loop_targets`)."""
    by_path = {info.path: info for info in infos}
    callers: dict[FuncId, list[tuple[FuncId, CallSite]]] = {}
    for caller, edges in raw.items():
        for callee, site in edges:
            if callee in helpers:
                callers.setdefault(callee, []).append((caller, site))
    passed: dict[FuncId, dict[tuple, list[FuncId]]] = {}
    for helper, calls in sorted(helpers.items()):
        made = callers.get(helper, ())
        if not made or any(site.reference for _, site in made):
            continue
        flow = by_path[helper[0]].flows[helper[1]]
        plan, known = [], True
        for caller, site in made:
            for param in sorted({p for p, _ in calls}):
                targets = _handed(graph, by_path[caller[0]], caller[1], site.expr, flow, param)
                if not targets:
                    known = False
                    break
                plan.append((caller, site, param, targets))
            if not known:
                break
        if not known or len({(param, tuple(sorted(targets))) for _, _, param, targets in plan}) <= len({p for p, _ in calls}):
            continue  # every caller hands over the same: nothing to tell apart
        param_sites = {id(s): p for p, s in calls}
        raw[helper] = [(callee, s) for callee, s in raw.get(helper, ()) if id(s) not in param_sites]
        for caller, site, param, targets in plan:
            for _, inner in (c for c in calls if c[0] == param):
                copy = replace(site, args=_translated(inner.args, site.args, flow))
                raw[caller].extend((t, copy) for t in targets)
            bucket = passed.setdefault(caller, {}).setdefault(site.expr, [])
            bucket.extend(t for t in targets if t not in bucket)
    return passed


def _translated(inner: tuple | None, outer: tuple | None, flow: ScopeFlow) -> tuple | None:
    """The helper's call's arguments (:mod:`.valuefacts` values) in the caller's terms: a literal, an
    object or a configuration field stays, one of the helper's parameters becomes what the caller
    passes for it (one spelling of the caller's call only), a local the helper bound each of its
    bindings, anything else (a call's result, ``self``) is unknown."""
    if inner is None or outer is None or len(outer) != 1:
        return None
    positional, keywords, star, double = outer[0]
    if star or double:
        return None
    params = flow.call_params()
    given = dict(zip(params, positional)) | dict(keywords)

    def value(v):
        if v is None or v[0] in ("c", "o", "f", "g"):  # literals, objects and fields mean the same here
            return v
        if v[0] == "l":  # a local the helper bound: each binding, its branch conditions dropped (a superset)
            return ("l", tuple((value(x), ()) for x, _ in v[1]))
        return given.get(v[1]) if v[0] == "p" else None
    # a splat of the helper's own ``*args`` / ``**kwargs`` or of a dict it built: unknown here
    return tuple((tuple(value(v) for v in pos), tuple((k, value(v)) for k, v in kws), st is not False, db is not False)
                 for pos, kws, st, db in inner)


def _handed(graph, info: ModuleInfo, qual: str, expr: tuple, flow: ScopeFlow, param: str) -> list[FuncId]:
    """What calling the value the caller's call ``expr(...)`` passes for ``param`` runs; [] unknown."""
    caller_flow = info.flows.get(qual)
    if caller_flow is None:
        return []
    offset = 1 if flow.fkind in ("m", "c") and expr[0] == "a" else 0
    positional = list(flow.params)
    found: list[FuncId] = []
    seen = False
    for call in calls_of(caller_flow.stmts, expr):
        arg = argument_for(call, positional, offset, param)
        node = graph.node(info.path, qual, arg) if arg is not None else None
        if node is None:
            continue
        seen = True
        found.extend(t for t in graph.callees(node) if t not in found)
    return found if seen else []


def argument_for(call: tuple, positional: list[str], offset: int, param: str) -> tuple | None:
    _, _, args, kws = call
    for k, v in kws:
        if k == param:
            return v
    if param in positional:
        index = positional.index(param) - offset
        if 0 <= index < len(args) and not any(a is not None and a[0] == "*" and len(a) == 2 for a in args[:index + 1]):
            return args[index]
    return None


def calls_of(stmts, expr: tuple):
    """Every call IR ``("c", expr, args, kwargs)`` nested in a scope's statements."""
    stack = list(stmts)
    while stack:
        item = stack.pop()
        if type(item) is not tuple:
            continue
        if len(item) == 4 and item[0] == "c" and item[1] == expr:
            yield item
        stack.extend(x for x in item if type(x) is tuple)


def _rebinds(flow: ScopeFlow, name: str) -> bool:
    return any(stmt[0] == "=" and stmt[1] == ("n", name) for stmt in flow.stmts if type(stmt) is tuple and stmt)
