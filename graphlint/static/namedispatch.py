"""A call by method name, resolved per call site: what a dispatch helper runs is the method the
caller names.

Serving engines drive their workers by name: ``self._run_workers("execute_model", batch)`` once
per step, ``self._run_workers("init_model")`` and ``("profile_num_available_blocks")`` once at
start-up, all through one helper that does ``getattr(worker, method)(*args)`` -- often through a
second one (an actor's ``execute_method(method, *args)``, a ``partial(worker.execute_method.remote,
method)``, a proxy's ``__getattr__``). The points-to analysis carries the literal names into the
helpers' parameters (``("Str", name)`` values, :mod:`.flowir`) and a computed ``getattr`` looks each
up, so the helpers' calls reach every method any caller names. Context-insensitive, that makes the
start-up methods look per-step as soon as the step calls the helper too.

So, as :mod:`.passedcalls` does for a callable parameter: a **name helper** is a function one of
whose parameters holds names (``Str`` values); its **named edges** are its calls of a function
whose name is one of them, by a callee not spelled with that name (``getattr(w, method)(...)``, not
``w.execute_model(...)``). When every call of a name helper passes its name as a literal, or comes
from another name helper (which forwards its own: ``partial(w.execute_method.remote, method)``),
the named edges of the helpers are replaced by edges from each literal call site to the functions
so named that the helper, or the name helpers it calls, reach by name: ``step() ->
execute_model``, ``__init__() -> init_model``, each at the caller's call site (its loops,
branches). The helpers keep every other edge (``ray.get``, their bookkeeping). A helper some caller
hands a name the analysis does not know (a name read from a message) keeps the
context-insensitive edges: every method named anywhere.
"""

from __future__ import annotations

from dataclasses import replace

from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.passedcalls import argument_for, calls_of

FuncId = tuple[str, str]
Raw = dict[FuncId, list[tuple[FuncId, CallSite]]]


def _last(fid: FuncId) -> str:
    return fid[1].rpartition(".")[2]


def name_params(infos: list[ModuleInfo], graph) -> dict[FuncId, dict[str, set[str]]]:
    """Function -> its parameters that hold names (``Str`` values), with the names."""
    ids, values = graph.solver.ids, graph.solver.values
    found: dict[FuncId, dict[str, set[str]]] = {}
    for info in infos:
        for qual, flow in info.flows.items():
            if flow.kind != "function":
                continue
            for param in (*flow.params, *flow.kwonly):
                node = ids.get(("v", info.path, qual, param))
                names = {v[1] for v in values(node) if v[0] == "Str"} if node is not None else ()
                if names:
                    found.setdefault((info.path, qual), {})[param] = set(names)
    return found


def specialize_names(raw: Raw, infos: list[ModuleInfo], graph, passed: dict) -> None:
    """Rewrites ``raw`` in place (see the module's doc); adds to ``passed`` (caller -> callee
    expression -> functions, :mod:`.passedcalls`' table) what each literal call runs by name."""
    params = name_params(infos, graph)
    if not params:
        return
    named: dict[FuncId, list[tuple[FuncId, CallSite]]] = {}  # helper -> its named edges
    for helper, by_param in params.items():
        names = set().union(*by_param.values())
        edges = [(t, s) for t, s in raw.get(helper, ()) if _last(t) in names
                 and not (s.expr[0] == "a" and s.expr[2] == _last(t))]
        if edges:
            named[helper] = edges
    if not named:
        return
    spelled = {_last(t) for edges in named.values() for t, _ in edges}
    params = {h: {p: n for p, n in ps.items() if n & spelled} for h, ps in params.items()}
    helpers = set(named) | {h for h in params if params[h] and any(c in named for c, _ in raw.get(h, ()))}
    by_path = {info.path: info for info in infos}
    plans: list[tuple[FuncId, CallSite, FuncId, set[str]]] = []
    unknown: set[FuncId] = set()  # helpers some caller hands a name that is no literal
    for caller, edges in raw.items():
        if caller in helpers:
            continue  # forwards its own names: the literal callers above it decide
        for callee, site in edges:
            if callee not in helpers:
                continue
            given = None if site.reference else _literals(
                by_path[caller[0]], caller[1], site.expr, by_path[callee[0]].flows[callee[1]], params[callee])
            if given is None:
                unknown.add(callee)
            else:
                plans.append((caller, site, callee, given))
    stack = list(unknown)
    while stack:  # what an unknown name reaches stays context-insensitive
        for callee, _ in raw.get(stack.pop(), ()):
            if callee in helpers and callee not in unknown:
                unknown.add(callee)
                stack.append(callee)
    for caller, site, helper, given in plans:
        if helper not in unknown:
            copy = replace(site, args=None)
            targets = sorted(_reached(helper, given, named, raw, helpers))
            raw[caller].extend((t, copy) for t in targets)
            bucket = passed.setdefault(caller, {}).setdefault(site.expr, [])
            bucket.extend(t for t in targets if t not in bucket)
    for helper, edges in named.items():
        if helper not in unknown:
            drop = {(t, id(s)) for t, s in edges}
            raw[helper] = [(t, s) for t, s in raw[helper] if (t, id(s)) not in drop]


def _reached(helper: FuncId, names: set[str], named: dict, raw: Raw, helpers: set[FuncId]) -> set[FuncId]:
    """The functions named ``names`` that ``helper`` runs by name, itself or through the name helpers
    it calls."""
    found, stack, seen = set(), [helper], {helper}
    while stack:
        fid = stack.pop()
        found.update(t for t, _ in named.get(fid, ()) if _last(t) in names)
        for callee, _ in raw.get(fid, ()):
            if callee in helpers and callee not in seen:
                seen.add(callee)
                stack.append(callee)
    return found


def _literals(info: ModuleInfo, qual: str, expr: tuple, flow, by_param: dict[str, set[str]]) -> set[str] | None:
    """The names a caller's call ``expr(...)`` passes for the helper's name parameters, as literals;
    None when one is not a literal (or the call's arguments cannot be read)."""
    caller_flow = info.flows.get(qual)
    if caller_flow is None:
        return None
    offset = 1 if flow.fkind in ("m", "c") and expr[0] == "a" else 0
    found: set[str] = set()
    calls = list(calls_of(caller_flow.stmts, expr))
    if not calls:
        return None
    for call in calls:
        for param in by_param:
            arg = argument_for(call, list(flow.params), offset, param)
            if arg is None or arg[0] != "str":
                return None
            found.add(arg[1])
    return found
