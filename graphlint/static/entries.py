"""What the decode step is: entries, and the context each function runs in.

Hot means "what the GPU does every token", in one of three contexts:

- **graph**: captured code -- ``with torch.cuda.graph(g):`` bodies and ``capture_begin()`` ...
  ``capture_end()`` (what they call), ``make_graphed_callables(fn)``, ``torch.compile(fn)`` with
  CUDA graphs, capturable ``Region``\\ s -- and everything they call. Every rule, strictly.
- **host**: the per-step host code around a replay: a function that calls ``g.replay()`` (or a
  ``torch.compile``\\ d CUDA-graph function) -- also one that captures on the first sight of a batch
  size and replays afterwards: its capture branch is capture-time code (:mod:`.regions`), the rest
  is its host step -- and, when that replay is not inside a step loop of its own, the functions
  that call it once per step (its direct callers, a forwarding wrapper's callers), and above them
  **the step loop** (:mod:`.steploops`): the first ``while`` / ``for ... in range(...)`` loop met
  walking up the points-to call graph (callbacks passed as arguments included), whose body -- every
  call in it, before and after the way down to the replay -- and the functions on that way are
  the host step. Only rules marked ``host_step`` apply, at most as warnings (nothing there breaks
  capture; it costs time every step); pinned ``non_blocking`` staging is silent; a read-back after
  the last replay (the sampled ids the host needs) is ``info``. When the replay sits in a
  ``while`` / ``for ... in range(...)`` loop, only that loop's body is the host step. Never host
  steps: set-up, warm-up, capture and prefill-named functions, a replaying function only they or
  constructors call (a warm-up loop of replays, a check after each capture), a function that
  captures outside a capture branch (a capture routine), prefill-only branches (:mod:`.guards`)
  and once-per-request code outside the step loop.
- **eager**: an eager decode path, every rule strictly: ``--entry`` / ``entry``; ``Region(..., capturable=False)``;
  a per-token loop's body (see :mod:`.loops`: it carries what its call produced into the next iteration) whose call
  reaches a model step -- a ``forward``, a ``__call__`` or a ``*decode*`` function doing device work, a model's
  method the loop feeds back (:mod:`.loopsteps`), or a captured callable -- not through set-up code (a constructor
  checking a layer with one forward runs once) (the innermost such loop: one whose every model call runs a decode
  loop of its own is an outer loop, cold: :mod:`.outerloops`; one that no entry point of the checked paths runs,
  beside one that an entry point runs, is at most a warning: :meth:`Discovery.unused`);
  a hot-named function that runs a captured callable eagerly and that nothing analysed calls (a guess: an eager twin
  or user API of the captured step); and -- only without evidence (nothing captured or replayed, no per-token loop)
  -- every function matching ``hot-names`` that nothing in the analysed files calls (the fallback, not the rule: a
  scheduler loop named ``decode()`` or an encoder's ``forward`` is an entry only in an engine with no such evidence;
  a ``_prepare_decoder_inputs`` that ``generate()`` calls once, before its loop, is hot only if its caller is).
  Those are guesses (``Entry.guessed``): what only they reach is at most a warning. The per-token loops' own code
  and what it calls outside the model step is the engine's *host logic* (between replays, once the step is
  captured): rules marked ``eager_host: false`` skip it.

Never entries: setup, warm-up and capture functions (``__init__``, ``*warm*``, ``*capture*``, ``*dummy*``,
``setup*``, ``*profile*``, any function that captures, and a function that runs captured code eagerly but is
only called by such functions), ``test_*`` functions, kernel-DSL code. ``torch.compile``\\ d code (any mode) is
also *compiled*, per context: inductor's allocations (``in_compiled: false``), no ``if not is_compiling():``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphlint.static.calibration import calibrating
from graphlint.static.callgraph import CallGraph, capturing_functions, recording_only
from graphlint.static.compileswitch import api_default, eager_default, field_off, method_switch, shown
from graphlint.static.classguards import ClassGuards, guarded_captures, without
from graphlint.static.coldcode import ColdCode
from graphlint.static.options import StaticOptions
from graphlint.static.contexts import (Chain, FuncId, Placement, bfs, called_per_device, callers_of, reaching, spread,
                                       post_replay, QuietCalls)
from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.frameworkhooks import add_framework_hooks
from graphlint.static.genloops import GeneratorLoops
from graphlint.static.index import Index
from graphlint.static.libloops import LibraryLoops
from graphlint.static.loopsteps import fed_model_methods
from graphlint.static.libmodels import fed_runners
from graphlint.static.mathroots import MathRoots
from graphlint.static.restaged import same_params
from graphlint.static.hoststeps import HostSteps
from graphlint.static.named_entries import NamedEntries
from graphlint.static.names import name_matcher
from graphlint.static.objectsteps import object_steps
from graphlint.static.outerloops import OuterLoop
from graphlint.static.receiverclasses import ReceiverClasses, captured_receivers
from graphlint.static.recorded import add_recorded
from graphlint.static.retiring import retired_only
from graphlint.static.handed import handed_functions
from graphlint.static.hostreads import host_result_reads
from graphlint.static.stepresult import result_reads
from graphlint.static.symbolic import note_root, symbolic_only
from graphlint.static.tokenloops import TokenLoops, model_modes
from graphlint.static.uncalled import uncalled_graph

CONTEXTS = ("graph", "eager", "host")


@dataclass
class Entry:
    """One root of the decode step, and why graphlint chose it (``graphlint entries``)."""

    function: FuncId
    context: str  # "graph" | "eager" | "host"
    reason: str
    #: the evidence -- a capture, replay, loop or declaration: (path, position), the position as
    #: :class:`graphlint.static.facts.Site` stores it (resolved to a line only when printed)
    where: tuple[str, tuple] = ("", ())
    loops: frozenset[int] = frozenset()  # only these loops of the function (a per-token loop's body)
    #: chosen by its name alone (``hot-names``), no evidence: what only it reaches is at most a warning
    guessed: bool = False


@dataclass
class Contexts:
    placement: Placement
    entries: list[Entry] = field(default_factory=list)
    captures: bool = False  # a captured callable was found
    #: a capture, a replay or a per-token loop was found: the hot-names guess is then off
    evidence: bool = False
    #: branches decided by the values reaching them (:mod:`.argvalues`): no hot caller or stored value takes them
    decided: int = 0
    #: loops that look per-token but run whole decodes (:mod:`.outerloops`): cold
    outer_loops: list[OuterLoop] = field(default_factory=list)
#: a graph entry only a weakly tied policy record makes a target (:mod:`.policies`)
WEAK_NOTE = " (a load-time policy's replacement, weakly tied: at most warnings)"


class Discovery(NamedEntries, HostSteps, TokenLoops, GeneratorLoops, LibraryLoops, MathRoots):
    """Computes :class:`Contexts` from the call graph (``calls``: caller -> [(callee, call site)])."""

    def __init__(self, infos: list[ModuleInfo], index: Index, calls: dict[FuncId, list[tuple[FuncId, CallSite]]],
                 options: StaticOptions, graph: CallGraph):
        self.infos, self.index, self.calls, self.options = infos, index, calls, options
        self.graph = graph
        self.by_path = {info.path: info for info in infos}
        self.entries: list[Entry] = []
        self.loop_bodies: dict[str, dict[FuncId, frozenset[int]]] = {c: {} for c in CONTEXTS}
        self.roots: dict[str, list[tuple[FuncId, Chain]]] = {c: [] for c in CONTEXTS}
        self.seen: set[tuple[FuncId, str]] = set()
        self.step_entries: set[FuncId] = set()  # eager entries that are no per-token loop's body
        self.guessed_roots: list[tuple[FuncId, Chain]] = []  # eager roots chosen by name alone
        #: eager per-token loops no entry point runs, beside one an entry point runs (:meth:`unused`), and their calls
        self.unused_loops: set[FuncId] = set()
        self.unused_roots: list[tuple[FuncId, Chain]] = []
        self.model_reach, self.mode_reach = set(), set()  # what reaches a model step (:meth:`run`), or a replay too
        self._hot = name_matcher(tuple(options.hot_names))
        self.requesters: dict[FuncId, tuple[FuncId, int]] = {}
        self.host_requesters: set[FuncId] = set()
        self._made: set[tuple[str, str]] | None = None
        self._handed: set[FuncId] | None = None  # :mod:`.handed`
        #: ``not_hot(name, fid)``: set-up, prefill-only or training code (see :mod:`.coldcode`)
        self.not_hot = ColdCode(infos, index, options, calls)
        #: models every run of which runs a quantization observer: calibration, never a decode step (:mod:`.calibration`)
        self.calibrating = calibrating(self.not_hot.calibration, calls)

    def fn(self, fid: FuncId):
        return self.by_path[fid[0]].functions[fid[1]]

    def add(self, context: str, fid: FuncId, reason: str, where=("", ()), chain: Chain | None = None,
            loops: frozenset[int] = frozenset(), guessed: bool = False) -> None:
        if loops:
            bodies = self.loop_bodies[context]
            bodies[fid] = bodies.get(fid, frozenset()) | loops
            for callee, site in model_modes(self.calls.get(fid, ()), loops, self.mode_reach, self.module_class):
                if (site.loops & loops).difference(site.first_iter):  # not ``if i == 0:`` (or an exit) only
                    self.roots[context].append((callee, (fid, callee)))
                    if fid in self.unused_loops:
                        self.unused_roots.append(self.roots[context][-1])
        else:
            self.roots[context].append((fid, chain or (fid,)))
            if context == "eager":
                self.step_entries.add(fid)
            if guessed:
                self.guessed_roots.append(self.roots[context][-1])
        if (fid, context) not in self.seen and not self.fn(fid).abstract:  # an interface has no body to list
            self.seen.add((fid, context))
            self.entries.append(Entry(fid, context, reason, where, loops, guessed))

    # -- the three contexts ------------------------------------------------------------------
    def run(self) -> Contexts:
        add_recorded(self)  # --decode-path: what a recorded run executed, each in its role's context
        add_framework_hooks(self)  # what a framework's own loop calls every step (:mod:`.frameworkhooks`)
        graph_roots, compiled_graph = self.graph_regions()
        prefill = {(i.path, q) for i in self.infos for q, fn in i.functions.items() if self.not_hot.prefill(fn.name)}
        # a replaying function never replays inside a capture: captured code reaching one reaches its callable
        replaying = {(i.path, q) for i in self.infos for q, fn in i.functions.items() if fn.replay_order}
        captured_roots = [r for r in self.roots["graph"] if r[0] not in replaying]
        # a captured call on a field whose class a guard of the capture tests runs only the classes
        # that pass it (:mod:`.classguards`); every other context keeps the edge
        self.graph_calls = without(self.calls, ClassGuards(self.infos, self.index, self.calls, self.graph).pruned(
            captured_roots, prefill | replaying)) if self.graph is not None and guarded_captures(self.infos) else self.calls
        # and one on a receiver runs only the classes that reach it there (:mod:`.receiverclasses`)
        if self.graph is not None and captured_receivers(self.infos):
            self.graph_calls = without(self.graph_calls, ReceiverClasses(self.infos, self.index, self.graph_calls,
                                                                         self.graph).pruned(captured_roots, prefill | replaying))
        graph = bfs(captured_roots, self.graph_calls, prefill | replaying)
        callers = callers_of(self.calls)
        # a decode loop's call runs a model: it reaches a ``forward``, a ``__call__`` or a ``*decode*`` function doing
        # device work, or a captured callable (not an iterative solver's loop, nor a kernel loader captured code calls)
        setup = {(i.path, q) for i in self.infos for q, fn in i.functions.items() if self.not_hot(fn.name, (i.path, q))}
        setup -= self.graph.record_inits() if self.graph is not None else set()  # records are built per step too
        steps = {(i.path, q) for i in self.infos for q, fn in i.functions.items()
                 if fn.device_work and (fn.name in ("forward", "__call__") or "decode" in fn.name.lower())}
        # whatever their names: a library module's installed forward (:mod:`.installed`), a captured method of an object
        # holding tensors (:mod:`.objectsteps`), a model's fed step (:mod:`.loopsteps`), a library model's runner (:mod:`.libmodels`)
        steps |= {fid for fid in self.graph.installed.targets() if self.fn(fid).device_work}
        steps |= {fid for fid in object_steps(self.index, self.by_path, self.recorded_roots()) if self.fn(fid).device_work}
        steps |= fed_model_methods(self, steps, callers)
        steps = (steps | fed_runners(self, steps, callers, setup)) - self.calibrating  # (:mod:`.calibration`)
        # a model run only inside set-up (a constructor's one-forward check, a warm-up) is no per-iteration step
        self.model_reach = reach = reaching((steps - setup) | (graph_roots - self.math_roots(graph_roots, graph, steps)),
                                            callers, setup)
        replayers = self.host_steps(compiled_graph, graph, callers)
        # captured code never replays (see ``replaying``): the way up from a replay does not pass through it;
        # a class whose step replays a graph runs the model too (``mode_reach``, :mod:`.modelmodes`)
        self.mode_reach |= reach | (replay_reach := reaching(set(replayers), callers, set(graph)))
        self.token_loops(compiled_graph, replay_reach, reach, graph)
        self.generator_loops()
        self.serving_loops(replay_reach, reach, graph, steps)
        # the hot-names guess runs only without evidence: nothing captured, replayed or looped per token
        self.evidence = bool(self.captures or replayers or self.loop_bodies["eager"] or self.loop_bodies["host"])
        # a project model a library's ``generate`` drives (:mod:`.libloops`): no evidence for the guess
        self.library_loops()
        self.eager_entries(graph_roots, compiled_graph, replayers, graph, callers)
        compiled_roots = set(self.compiled_roots)
        # evidence is per decode path: a function that replays, or calls a replay once per step, is a
        # host step wherever an eager decode loop reaches it too (``decoder.step()`` of any decoder);
        # what a step loop's body calls besides the way to the replay (an eager decoder's ``step``
        # beside the graph decoder's, the sampler) is not, nor a protocol stage no replay follows
        host_steps = set(replayers) | {fid for fid, _ in self.roots["host"]
                                       if fid in replay_reach and fid not in self.protocol_stages}
        stop = setup | host_steps | self.drivers()
        cleanup = retired_only(self.calls, self.fn) - reach - replay_reach
        cold = setup | graph_roots | capturing_functions(self.infos) | cleanup
        rounds, round_roots = self.eager_rounds(set(graph) | graph_roots, replay_reach, cold | steps, compiled_roots)
        eager, eager_compiled = spread(self.roots["eager"] + round_roots, self.calls, stop, compiled_roots)
        guessed_only: set[FuncId] = set()
        unused_only: set[FuncId] = set()
        weak = set(self.guessed_roots) | set(self.unused_roots)
        if weak:  # what evidence the engine runs reaches keeps its severity, and its chain from that evidence
            sure, _ = spread([r for r in self.roots["eager"] if r not in weak] + round_roots, self.calls, stop, compiled_roots)
            only = set(eager) - set(sure)
            guessed_only = only if self.guessed_roots else set()  # (never both: see ``unused``)
            unused_only = only | (self.unused_loops - set(sure)) if self.unused_roots or self.unused_loops else set()
            eager = {**eager, **sure}
        elif self.unused_loops:
            unused_only = set(self.unused_loops)
        eager_host = self.eager_host_logic(eager, steps, setup)
        results = result_reads(self.infos, self.graph, reach, self.loop_bodies["eager"], self.serving, steps,
                               self.shaped_models, set(self.loop_bodies["host"]))
        # a capture routine the host step calls (``graph = trace(model, bs)``) runs once per graph: set-up, not the
        # step's, no replay point; and a request's clean-up, run once per finished request (:mod:`.retiring`)
        host, host_compiled = spread(self.roots["host"], self.calls, cold, compiled_roots)
        conds = {f: self.fn(f).replay_conds for f in replayers}  # the branch each replay sits in
        steps_reach = replay_reach - recording_only(self.infos)
        points, after = post_replay(host, self.loop_bodies["host"], self.calls, steps_reach, replayers, cold, conds=conds)
        # the host step functions' reads of what their replay produced, by the data (:mod:`.hostreads`)
        optional = self.optional_graph(graph, prefill | replaying)
        host_results = host_result_reads(self.infos, self.graph, replay_reach | graph_roots, self.host_loops(),
                                         [f for f in points if f not in replayers], self.calls, set(optional))
        if host_results[3]:
            _, after = post_replay(host, self.loop_bodies["host"], self.calls, steps_reach, replayers,
                                   cold, host_results[3])
        placement = Placement({"graph": graph, "eager": eager, "host": host}, self.loop_bodies,
                              {"eager": eager_compiled, "host": host_compiled, "graph": spread(captured_roots,
                               self.graph_calls, prefill | replaying, compiled_roots)[1]}, points, after,
                              multi_device=called_per_device(self.calls), eager_host=eager_host,
                              guessed=guessed_only, unused=unused_only, eager_results=results,
                              advanced_attrs={a for i in self.infos for a in i.advanced_attrs},
                              host_results=host_results,
                              uncalled=uncalled_graph(self.roots["graph"], self.graph_calls, self.fn, prefill | replaying),
                              optional=optional)
        placement.eager_rounds, placement.quiet = rounds, QuietCalls(self.graph, self.fn, self.calls) if self.graph else None
        walk = lambda roots: bfs(roots, self.graph_calls, prefill | replaying)  # noqa: E731
        placement.symbolic = symbolic_only(self.roots["graph"], graph, self.dynamic_chains, walk)
        placement.restaged = same_params(self.calls, host, self.loop_bodies["host"],
                                         lambda fid: self.by_path[fid[0]].flows.get(fid[1]))
        return Contexts(placement, self.entries, self.captures, self.evidence, outer_loops=list(self.outer.found))

    def optional_graph(self, graph: dict[FuncId, Chain], stop: set[FuncId]) -> dict[FuncId, str]:
        """Captured code that only a compile under a switch off by default captures (``if use_torch_compile:
        self.step = torch.compile(self.step, mode="max-autotune")``): function -> the switch. The
        default path calls the same callable eagerly, every step -- where the switch is a parameter of
        the step loop's own function (a ``generate`` API whose callers get eager decoding unless they
        ask). A CLI entry's switch (``main(compile=False)`` compiling for a loop elsewhere, a script's
        ``--compile``) picks the run its operator measures: the captured one."""
        optional = {chain: switch for chain, switch in self.optional_roots.items()
                    if chain[0] in self.loop_bodies["host"] or chain[0] in self.loop_bodies["eager"]
                    or api_default(switch)}
        if not optional:
            return {}
        sure = bfs([r for r in self.roots["graph"] if r[1] not in optional and r[0] in graph], self.graph_calls, stop)
        switch = shown(next(iter(optional.values())))
        return {f: switch for f in graph if f not in sure}

    def field_stores(self, attr: str) -> list:
        """Every value stored into a field named ``attr``: what decides a compile switch's default. Read
        from the summaries per switch: a second :class:`.argvalues.ArgValues` beside the link's for
        a few switches held every function's facts again through the link (on all of torch)."""
        return [v for info in self.infos for v in info.field_stores.get(attr, ())]

    def drivers(self, steps_too: bool = False) -> set[FuncId]:
        """Functions that start a decode loop without being one (``generate()`` picking ``_sample``): their
        code runs once per decode; entered from another decode path (a draft's ``generate()`` every assisted
        step) only the loops they start count, as entries. A loop inside the model starts no decode
        (:mod:`.outerloops`); a speculative step that calls the model's forward on what the draft loop it
        starts produced (:meth:`.OuterLoops.verifies`) is a step of the loop calling it (``steps_too``: kept)."""
        decoders = self.outer.decoders
        return {caller for caller, edges in self.calls.items() if caller not in self.looping
                and any(callee in decoders and not site.reference for callee, site in edges)
                and (steps_too or not self.outer.verifies(caller, direct=True))}

    def eager_host_logic(self, eager: dict[FuncId, Chain], steps: set[FuncId], stop: set[FuncId]) -> set[FuncId]:
        """An eager engine's host logic: the per-token loops' own code and what it calls outside the
        model step (drafting, acceptance, stop checks written in the loop, bookkeeping) -- what runs
        between replays once the model step is captured. The model step is every model-step
        function (see ``steps`` in :meth:`run`) the loops reach and every eager entry that is no
        loop (configured, declared, hot-named), with all they call -- never a function that runs a
        per-token loop or starts one: a model step runs one token, so a ``decode()`` that loops over
        tokens, or that calls such a loop (a window loop's ``decode_with_fallback``), drives the
        model, and the loop's logit filters and beam update stay its host logic."""
        loops = set(self.loop_bodies["eager"]) | set(self.loop_bodies["host"]) | self.drivers(steps_too=True)
        roots = [(f, (f,)) for f in sorted(self.step_entries | {f for f in eager if f in steps}) if f not in loops]
        model = bfs(roots, self.calls, stop | loops)
        return {f for f in (*eager, *self.loop_bodies["eager"]) if f not in model}

    def graph_regions(self) -> tuple[set[FuncId], dict[FuncId, set[str] | None]]:
        """Captured callables (graph roots), and the torch.compile'd CUDA-graph functions among them
        with the modules whose calls run the compiled version (None: every caller's, a decorator).
        ``f = torch.compile(f)`` rebinds ``f`` in the module that says so; calls elsewhere stay eager."""
        self.compiled_roots: list[FuncId] = []
        self.protocol_stages: set[FuncId] = set()
        self.optional_roots: dict[FuncId, str] = {}  # captured only by compiles under an off switch (:attr:`RegionDecl.opt_in`)
        compiled_graph: dict[FuncId, set[str] | None] = {}
        weak = self.graph.weak() if self.graph is not None else set()
        unrun = ReceiverClasses(self.infos, self.index, self.calls, self.graph).unrun_captures() if self.graph else set()
        for caller in sorted(self.calls):
            for callee, site in self.calls[caller]:
                if site.in_capture and not self.runs_capture(callee, caller) and (caller, id(site), callee) not in unrun:
                    self.add("graph", callee, f"captured: called inside a CUDA-graph capture in {caller[1]}"
                             + (WEAK_NOTE if callee in weak else ""), self.capture_site(caller), (caller, callee))
        captured = {fid for fid, _ in self.roots["graph"]}
        self.dynamic_chains = {chain: False for _, chain in self.roots["graph"]}  # compiled roots' (:mod:`.symbolic`)
        for info in self.infos:  # ``runner.capture(self._token_forward, x)``: hands over what is captured
            for qual in sorted(info.functions):
                for target, order in self.graph.handed(info, qual) if captured else ():
                    known = self.requesters.get((info.path, qual))
                    if target in captured and (known is None or order < known[1]):
                        self.requesters[(info.path, qual)] = (target, order)
        for info in self.infos:
            for qual, fn in sorted(info.functions.items()):
                if fn.compiled:
                    self.compiled_roots.append((info.path, qual))
                if fn.compiled.startswith("graph") and (info.path, qual) not in self.calibrating:
                    compiled_graph[(info.path, qual)] = None
                    note_root(self.dynamic_chains, ((info.path, qual),), fn.compiled == "graph-dynamic")
                    self.add("graph", (info.path, qual), "@torch.compile with CUDA graphs (mode='reduce-overhead')")
            for region in info.regions:
                caller = (info.path, region.function)
                self.protocol_stage(info, region)
                for fid in self.graph.region_functions(info, region):
                    where, chain = (info.path, region.where), (caller, fid)
                    if region.kind == "region" and not region.capturable:
                        if not self.options.entries:
                            self.add("eager", fid, f"Region(..., capturable=False) declared in {region.function}",
                                     where, chain)
                    elif region.kind == "region":
                        self.add("graph", fid, f"Region declared (capturable) in {region.function}", where, chain)
                    elif region.kind == "graphed":
                        self.add("graph", fid, f"torch.cuda.make_graphed_callables in {region.function}", where, chain)
                    elif fid in self.calibrating or eager_default(region.opt_in, self.field_stores):
                        continue  # a calibration model's compile (:mod:`.calibration`), or none made by default
                    else:
                        switch = region.opt_in or method_switch(self.infos, self.graph, self.calls, caller, fid)
                        off = bool(switch) and field_off(switch, self.field_stores)
                        if not (off and api_default(switch)) or id(region) in self.graph.graph_compiles:
                            self.compiled_roots.append(fid)  # not ``if cfg.compile:`` off by default: eager then
                        if id(region) in self.graph.graph_compiles:  # a literal mode, or one read from settings
                            if compiled_graph.get(fid, ()) is not None:
                                compiled_graph[fid] = {*compiled_graph.get(fid, ()), info.path}
                            self.add("graph", fid, f"torch.compile with CUDA graphs in {region.function}", where, chain)
                            note_root(self.dynamic_chains, chain, region.dynamic)
                            if off:
                                self.optional_roots.setdefault(chain, switch)
        self.compiled_calls(compiled_graph)
        # the captured callables are the entries once found; one unresolved (``forward_fn(*args)``) leaves names on
        self.captures = bool(self.roots["graph"])
        return {fid for fid, _ in self.roots["graph"]}, compiled_graph

    def protocol_stage(self, info: ModuleInfo, region) -> None:
        """The target protocol (:mod:`graphlint.dynamic.target`): a class whose ``regions()`` declares
        its step's ``Region``s has its ``stage(step)`` run before them every step -- a host step,
        though only the harness (or the engine's own driver) calls it."""
        cls, _, method = region.function.rpartition(".")
        stage = (info.path, f"{cls}.stage")
        if method == "regions" and region.kind == "region" and stage[1] in info.functions \
                and stage not in self.protocol_stages:
            self.protocol_stages.add(stage)  # no replayer: an eager decode step that stages runs it eagerly too
            self.add("host", stage, f"stage() of a target whose regions() declares Regions ({cls})", (info.path, region.where))

    def runs_capture(self, callee: FuncId, capturer: FuncId) -> bool:
        """Whether the value a capture calls is the code that runs that capture: a graph runner
        kept in the field that held the model it wraps (``self.model = Runner(self.model)``) is
        among what the flow-insensitive field holds, so ``self.model(...)`` under the runner's
        capture resolves to the runner too. A capture never captures its own caller (it would
        capture again, recursively): such a callee is no captured code -- unless code hands it
        over as a value (a function or bound method passed as an argument, ``Graphed(self.step)``):
        then it is what its receiver captures by intent, and it reaches the capturer through
        another instance (a generic graphing class whose step calls a second graphed callable,
        which runs eagerly under the first capture): :mod:`.handed`."""
        if callee == capturer or capturer not in bfs([(callee, (callee,))], self.calls):
            return False
        if self._handed is None:
            self._handed = handed_functions(self)
        return callee not in self._handed

    def capture_site(self, fid: FuncId) -> tuple[str, tuple]:
        info = self.by_path[fid[0]]
        where = next((s.where for s in info.sites if s.kind == "capture" and s.function == fid[1]), ())
        return (fid[0], where)

    def loop_targets(self, info: ModuleInfo, qual: str, loop) -> list[FuncId]:
        return self.graph.loop_targets(info, qual, loop)
