"""Phase 2: summaries -> whole-program points-to call graph (:mod:`.callgraph`) -> decode entries and
contexts (:mod:`.entries`) -> findings, each with the severity its context gives it.
"""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.rules import Rule
from graphlint.static.denorm import FLAG as DENORM, denormed_classes
from graphlint.static.argvalues import ArgValues
from graphlint.static.typenarrow import outside_tests
from graphlint.static.arity import drop_unbindable
from graphlint.static.callgraph import CallGraph
from graphlint.static.capturedvalues import captured_values, eager_values
from graphlint.static.graphconsts import GraphConsts
from graphlint.static.contexts import FuncId, bfs
from graphlint.static.decode_path import DecodePath, decode_path, hot_map
from graphlint.static.entries import Contexts, Discovery, Entry
from graphlint.static.facts import CallSite, FileSummary, ModuleInfo
from graphlint.static.guards import COMPILING
from graphlint.static.hotreceivers import HotReceivers
from graphlint.static.wrapperfields import ROUNDS as WRAPPER_ROUNDS, WrapperFields
from graphlint.static.hostparams import HostParams
from graphlint.static.carriedparams import CarriedParams
from graphlint.static.index import Index
from graphlint.static.armedcalls import settled_armed
from graphlint.static.lazyfields import settled
from graphlint.static.names import norm_path
from graphlint.static.options import StaticOptions
from graphlint.static.namedispatch import specialize_names
from graphlint.static.openreceivers import resolve_open
from graphlint.static.passedcalls import specialize
from graphlint.static.perstep import LAZY, per_step_classes
from graphlint.static.recorded import stale_findings
from graphlint.static.backends import backend_only, only_through as backend_through
from graphlint.static.restaged import same_slots
from graphlint.static.replaced import computed_keywords, only_through, replaceable_forwards, written_for_replacement
from graphlint.static.selfdispatch import drop_unrun_overrides
from graphlint.static.shapetests import varies_at_capture
from graphlint.static.unresolved import from_call_graph


class LinkError(Exception):
    """The link failed: in which stage, and the exception (``graphlint check`` reports it as one
    GL002 beside the per-file findings, instead of losing them all)."""

    def __init__(self, stage: str, cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.stage, self.cause = stage, cause


def link(summaries: list[FileSummary], rules: dict[str, Rule], options: StaticOptions,
         entries_out: list[Entry] | None = None, contexts_out: list[Contexts] | None = None,
         decode_out: list[DecodePath] | None = None) -> list[Finding]:
    """Findings of every hot candidate; ``entries_out``, when given, receives the decode step's
    entries with their reasons (``graphlint entries``), ``contexts_out`` the contexts themselves
    (which functions are hot where: ``bench/record_vs_static.py``), ``decode_out`` the
    :class:`DecodePath`. Any exception comes out as a :class:`LinkError` naming the stage."""
    stage = ["points-to call graph"]
    try:
        return _link(summaries, rules, options, entries_out, contexts_out, decode_out, stage)
    except Exception as exc:  # RecursionError and MemoryError included: the caller keeps the per-file findings
        raise LinkError(stage[0], exc) from exc


def _link(summaries: list[FileSummary], rules: dict[str, Rule], options: StaticOptions,
          entries_out: list[Entry] | None, contexts_out: list[Contexts] | None,
          decode_out: list[DecodePath] | None, stage: list[str]) -> list[Finding]:
    infos = sorted(
        (s.data for s in summaries if isinstance(s.data, ModuleInfo) and not s.skip_file), key=lambda i: i.path
    )
    index = Index(infos)
    graph = CallGraph(infos, index)
    raw: dict[FuncId, list[tuple[FuncId, CallSite]]] = {}
    once = settled(infos)  # lazy initialisation of a handed object's field: set-up (:mod:`.lazyfields`)
    once |= settled_armed(infos)  # a guard on another object's flag its called method sets first (:mod:`.armedcalls`)
    for info in infos:
        for qual in sorted(info.functions):
            fn = info.functions[qual]
            sites = [] if fn.device_code else [(call, graph.site_targets(info, qual, call)) for call in fn.calls
                                               if call.once not in once]
            sites += [(site, (callee,)) for callee, site in graph.implicit_sites(info, qual) if not fn.device_code]
            raw[(info.path, qual)] = [(callee, call) for call, callees in sites for callee in callees]
    drop_unrun_overrides(raw, infos, index)  # ``self.m()`` in ``C.f``: not the overrides of classes that override ``f``
    drop_unbindable(raw, infos, index)  # a call passing keywords a function cannot take never runs it
    held = outside_tests(raw, infos, index, graph)  # ``if isinstance(p, C): p.m()`` runs C's (:mod:`.typenarrow`)
    for caller, edges in raw.items() if held else ():
        raw[caller] = [(callee, site) for callee, site in edges if (caller, id(site), callee) not in held]
    graph.passed = specialize(raw, infos, graph, graph.helpers)  # a parameter's call, per call site
    specialize_names(raw, infos, graph, graph.passed)  # a call by method name, per call site
    calls = _merge(raw)
    stage[0] = "decode entries"
    discovery = Discovery(infos, index, calls, options, graph)
    contexts = discovery.run()
    by_class = resolve_open(graph, raw, infos, hot_map(contexts))  # a model the user passes in
    if by_class:
        calls = _merge(raw)
        discovery = Discovery(infos, index, calls, options, graph)
        contexts = discovery.run()
    receivers = HotReceivers(infos, index, raw, graph, *_receiver_context(discovery, contexts))
    # a parameter's call runs only the classes its hot callers pass (:mod:`.hotreceivers`); a wrapper's
    # field call, what the constructions of the objects called hot handed it (:mod:`.wrapperfields`),
    # asked again on the new decode path: an object built only by code that went cold is cold too
    dropped = receivers.dropped() | WrapperFields(receivers, infos).dropped()
    for _ in range(WRAPPER_ROUNDS):
        if not dropped:
            break
        for caller, edges in raw.items():
            raw[caller] = [(callee, site) for callee, site in edges if (caller, id(site), callee) not in dropped]
        calls = _merge(raw)
        discovery = Discovery(infos, index, calls, options, graph)
        contexts = discovery.run()
        dropped = WrapperFields(HotReceivers(infos, index, raw, graph, *_receiver_context(discovery, contexts)),
                                infos).dropped()
    stage[0] = "argument values"
    values = ArgValues(infos, raw, index)
    for _ in range(2):  # a branch decided dead takes its calls out of the hot code; decide again once
        values.solve(*_hot(discovery, contexts))
        if not values.dead_sites:
            break
        calls = _merge(raw, values.dead_sites)
        discovery = Discovery(infos, index, calls, options, graph)
        contexts = discovery.run()
    values.solve(*_hot(discovery, contexts))
    captured = captured_values(infos, raw, discovery, contexts)  # what a capture runs: its own values
    eager = eager_values(infos, raw, discovery, contexts)  # what the eager per-token code runs: its own
    contexts.decided = len(values.decided) + len({(cand_fid, c.cond[:1]) for cand_fid, c in _dead_candidates(infos, values)})
    contexts.placement.shaped = shaped(discovery, contexts, calls)
    computed = computed_keywords(graph.unresolved)
    forwards = replaceable_forwards(infos, index, graph.instantiated(), computed)
    forwards |= written_for_replacement(raw, infos, index, graph.instantiated(), computed)
    contexts.placement.replaced = {ctx: only_through(discovery.roots[ctx], calls, contexts.placement.chains[ctx], forwards)
                                   for ctx in ("graph", "eager")}
    gates = backend_only(infos, index, graph, raw)  # classes built only ``if use_torch_npu:``
    contexts.placement.backend = {ctx: backend_through(discovery.roots[ctx], calls, contexts.placement.chains[ctx], gates)
                                  for ctx in ("graph", "eager")}
    weak = graph.weak()  # library-tied policy replacements: at most warnings (:mod:`.policies`)
    contexts.placement.policy = {ctx: only_through(discovery.roots[ctx], calls, contexts.placement.chains[ctx], weak)
                                 for ctx in ("graph", "eager")}
    if entries_out is not None:
        entries_out.extend(contexts.entries)
    if contexts_out is not None:
        contexts_out.append(contexts)
    stage[0] = "decode path"
    if decode_out is not None:
        decode_out.append(decode_path(infos, calls, contexts, options, rules,
                                      find_unresolved=lambda hot: from_call_graph(graph, hot, raw),
                                      by_class=by_class))
    stage[0] = "findings"
    per_step = per_step_classes(calls, contexts.placement.chains, contexts.placement.loop_bodies)
    denormed = denormed_classes(infos, graph, calls)  # weight_norm removed over the tree (:mod:`.denorm`)
    hot, _, open_, _ = _hot(discovery, contexts)
    hosted = HostParams(infos, raw, hot, open_, index)  # a parameter every hot caller hands a host tensor (:mod:`.hostparams`)
    carried = CarriedParams(infos, raw, contexts.placement.loop_bodies, open_)  # state a step loop passes back (:mod:`.carriedparams`)
    consts = GraphConsts(infos, raw, contexts.placement.chains["graph"])  # ints constant per graph (:mod:`.graphconsts`)
    return (_findings(infos, rules, options, contexts, index, values, captured, once, eager, per_step, denormed, hosted,
                      carried, consts)
            + stale_findings(infos, rules, options))


def _merge(raw: dict[FuncId, list[tuple[FuncId, CallSite]]],
           dead: set[tuple[FuncId, int]] = frozenset()) -> dict[FuncId, list[tuple[FuncId, CallSite]]]:
    """One edge per (caller, callee), without the call sites a decided branch holds."""
    calls = {}
    for caller, edges in raw.items():
        out: dict[FuncId, CallSite] = {}
        for callee, call in edges:
            if (caller, id(call)) in dead:
                continue
            known = out.get(callee)
            if known is None:  # the summary's own site (never mutated: summaries are cached)
                out[callee] = call
            else:  # the same callee reached by two spellings: one edge, everything it knows; where it is
                # called, its first call's order (``f = torch.compile(f)`` earlier only hands it on)
                orders = [s.order for s in (known, call) if not s.reference] or [known.order, call.order]
                out[callee] = CallSite(known.expr, known.in_capture or call.in_capture,
                                       min(orders), known.loops | call.loops,
                                       known.reference and call.reference,
                                       multi_device=known.multi_device or call.multi_device,
                                       cond=known.cond if known.cond == call.cond else (), same=same_slots(known, call),
                                       always=known.always or call.always)
        calls[caller] = sorted(out.items())
    return calls


def _hot(discovery: Discovery, contexts: Contexts) -> tuple[set[FuncId], set[FuncId], set[FuncId], dict]:
    """(hot functions, functions whose calls count -- the hot ones and the per-token loops' own --,
    functions called from outside: entries, whose parameters are unknown, and the loop functions
    only whose loops' calls count)."""
    placement = contexts.placement
    hot = {f for chains in placement.chains.values() for f in chains}
    loops: dict[FuncId, frozenset[int]] = {}
    for bodies in placement.loop_bodies.values():
        for f, ids in bodies.items():
            loops[f] = loops.get(f, frozenset()) | ids
    open_ = set(loops) | {f for roots in discovery.roots.values() for f, chain in roots if len(chain) == 1}
    # a per-token loop's function that is not hot itself: only the calls in its loops run per token
    # (what it calls before the loop -- the prompt's pass -- runs once per request)
    only_loops = {f: ids for f, ids in loops.items() if f not in hot}
    return hot | set(loops), hot | set(loops), open_, only_loops


def _receiver_context(discovery: Discovery, contexts: Contexts):
    """(hot functions, functions called from outside, loop functions -> the loops that run per token)."""
    hot, _, open_, only_loops = _hot(discovery, contexts)
    return hot - set(only_loops), open_ - set(only_loops), only_loops


def _dead_candidates(infos: list[ModuleInfo], values: ArgValues):
    return [((info.path, c.function), c) for info in infos for c in info.candidates if values.dead_candidate(info.path, c)]


def shaped(discovery: Discovery, contexts: Contexts, calls) -> set[FuncId]:
    """Captured functions reached only through branches on tensor shapes (``if x.shape[-1] > 64:``):
    decided when the graph is captured, for shapes static analysis does not know."""
    graph = set(contexts.placement.chains["graph"])
    firm = {k: [(c, s) for c, s in v if not any(varies_at_capture(x) for x in s.cond)] for k, v in calls.items()}
    sure = bfs(discovery.roots["graph"], firm)
    return graph - set(sure)


class Unset:
    """Attributes no analysed code gives a value: ``if self.x is not None:`` bodies are dead there."""

    def __init__(self, infos: list[ModuleInfo], index: Index):
        self.index = index
        self.anywhere = {w for info in infos for w in info.attr_writes if ":" not in w}  # ``obj.x = v``

    def dead(self, info: ModuleInfo, cand) -> bool:
        needs = [f[6:] for f in cand.flags if f.startswith("needs:")]
        fn = info.functions.get(cand.function)
        if not needs or fn is None or fn.cls not in info.classes:
            return False
        ref = (info, fn.cls)
        family = [*self.index.mro(ref), *self.index.subclasses(ref)]
        return any(attr not in self.anywhere and not any(f"{name}:{attr}" in owner.attr_writes
                                                         or f"{name}:*" in owner.attr_writes for owner, name in family)
                   for attr in needs)


def missing_entries(summaries: list[FileSummary], options: StaticOptions) -> list[str]:
    """Configured entries that name no function in the summaries (a typo finds nothing, silently,
    unless the check warns with this)."""
    known = {
        (norm_path(s.path), qual)
        for s in summaries
        if isinstance(s.data, ModuleInfo)
        for qual in s.data.functions
    }
    missing = []
    for entry in options.entries:
        path, _, qual = entry.rpartition(":")
        if (norm_path(path), qual) not in known:
            missing.append(entry)
    return missing


def _findings(infos: list[ModuleInfo], rules: dict[str, Rule], options: StaticOptions,
              contexts: Contexts, index: Index, values: ArgValues, captured: ArgValues | None = None,
              once: frozenset[str] = frozenset(), eager: ArgValues | None = None,
              per_step: set = frozenset(), denormed: set = frozenset(), hosted: HostParams | None = None,
              carried: CarriedParams | None = None, consts: GraphConsts | None = None) -> list[Finding]:
    findings: dict[tuple, Finding] = {}
    unset = Unset(infos, index)
    once_flags = {f"once:{tag}" for tag in once}  # reports in a one-time lazy initialisation
    for info in infos:
        for cand in info.candidates:
            rule = rules.get(cand.code)
            if rule is None or cand.code not in options.enabled:
                continue
            if (once_flags and not once_flags.isdisjoint(cand.flags)) or unset.dead(info, cand) \
                    or values.dead_candidate(info.path, cand) or any(
                    f.startswith("object-call:") and values.returns_number((info.path, cand.function), f[12:])
                    for f in cand.flags):
                continue
            if denormed and any(f.startswith(DENORM) and (info.path, f[len(DENORM):]) in denormed for f in cand.flags):
                continue  # a layer class in a tree whose weight_norm some code removes
            if hosted is not None and hosted.dropped(info.path, cand):
                continue  # a read of a parameter every hot caller hands a host tensor
            if carried is not None and carried.dropped(info.path, cand):
                continue  # a returned join of a parameter no per-token loop passes back in
            fn = info.functions.get(cand.function)
            if LAZY in cand.flags and (fn is None or (info.path, fn.cls) not in per_step):
                continue  # lazy set-up of an object that lives across steps (:mod:`.perstep`)
            if fn is not None and fn.device_code and rule.params.get("scope") != "anywhere":
                continue  # a kernel DSL compiles this function: its branches and shapes are device-side
            fid = (info.path, cand.function)
            compiled = uncompiled_only(fid, cand, contexts.placement.compiled_only)
            graph_ok = "graph" not in compiled and (captured is None or not captured.dead_candidate(info.path, cand)) \
                and not (consts is not None and consts.constant(info.path, cand))  # frozen, but per graph
            eager_ok = "eager" not in compiled and (eager is None or not eager.dead_candidate(info.path, cand))
            placed = contexts.placement.place(rule, fid, cand, graph_ok, eager_ok)
            if placed is None:
                continue
            chain, severity, note = placed
            message = rule.message.replace("{name}", cand.name) if "{name}" in rule.message else rule.message
            finding = Finding.from_rule(
                rule, info.path, cand.line, cand.col, message=message + note, severity=severity,
                chain=tuple(f"{p}:{q}" for p, q in chain), evidence=("static",), source="static",
                function=cand.function, line_text=cand.line_text,
            )
            findings.setdefault(finding.sort_key(), finding)
    return [findings[k] for k in sorted(findings)]


def uncompiled_only(fid: FuncId, cand, compiled_only: dict[str, set[FuncId]]) -> set[str]:
    """The contexts a candidate under ``if not torch.compiler.is_compiling():`` never runs in: those that reach
    its function only through ``torch.compile`` (the trace folds the test to True and skips the branch). Where an
    eager run or an uncompiled capture reaches it too, the branch runs there and keeps that context's severity."""
    if ("not", COMPILING) not in cand.cond:
        return set()
    return {ctx for ctx, fids in compiled_only.items() if fid in fids}
