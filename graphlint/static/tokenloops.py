"""Per-token and serving loops, as :class:`.entries.Discovery` finds them (a mixin): which loops
the walker recorded (:mod:`.loops`, :mod:`.fieldcarry`) run the model step per token, which run
it once per message, and which rank below the engine's decode path (at most warnings)."""

from __future__ import annotations

from graphlint.static.chunkloops import inside as _inside, wraps_denoising
from graphlint.static.coldcode import capture_setup_loop
from graphlint.static.contexts import FuncId, bfs, callers_of, reaching
from graphlint.static.facts import PROTOCOL_LOOP, ModuleInfo
from graphlint.static.flowir import render
from graphlint.static.modelmodes import model_modes  # noqa: F401  (for :mod:`.entries`)
from graphlint.static.outerloops import OuterLoop, OuterLoops
from graphlint.static.sampledcarry import field_callable, field_method
from graphlint.static.scriptloops import tool_loops
from graphlint.static.tokenless import picks_no_tokens


class TokenLoops:
    """Mixin of :class:`.entries.Discovery`: the loops that are entries."""

    def token_loops(self, compiled_graph, replay_reach: set[FuncId], reach: set[FuncId], graph) -> None:
        """Per-token loops (:mod:`.loops`): a host step when their call leads to a replay, an eager
        decode path when it reaches a model step (``reach``); never an outer loop, one whose every
        model-reaching call runs a per-token or step loop of its own (:mod:`.outerloops`). An eager
        one that no entry point runs, beside one that an entry point runs, ranks below it (``unused``)."""
        found: list[tuple[FuncId, str, tuple, frozenset[int]]] = []
        self.shaped_models: set[tuple[FuncId, tuple]] = set()  # (function, call): a model by shape alone
        runs: dict[tuple[FuncId, int], tuple] = {}  # (function, loop) -> (its position, the models it runs)
        #: loops whose model is a parameter's ``forward`` nothing checked builds (:mod:`.sampledcarry`):
        #: evidence by shape alone, of a model the engine may never run there (a parity fallback)
        handed: set[FuncId] = set()
        weak: set[FuncId] = set()  # loops whose only evidence is a carry through fields (:meth:`fields_only`)
        self.looping = looping = {
            (info.path, qual)
            for info in self.infos
            for qual, fn in info.functions.items()
            for loop in fn.loops
            if any(t in reach for t in self.loop_targets(info, qual, loop))
        } | set(self.loop_bodies["host"])
        self.outer = outer = OuterLoops(self, looping, callers_of(self.calls), reach)
        for info in self.infos:
            for qual, fn in sorted(info.functions.items()):
                fid = (info.path, qual)
                if not fn.loops or fid in graph or fn.captures or fn.device_code or (
                        self.not_hot(fn.name, fid) and not self.not_hot.both_phases(fn.name, fid)):
                    continue
                for loop in fn.loops:
                    targets = self.loop_targets(info, qual, loop)
                    models = [t for t in targets if t in reach or t in replay_reach]
                    if capture_setup_loop(self.calls.get(fid, ()), loop.id, self.fn):
                        continue
                    decoder = outer.decoder_run(fid, models)
                    if decoder is not None:  # it runs the model only through decoders: a loop over requests
                        outer.found.append(OuterLoop(fid, loop.where, decoder))  # (see :mod:`.outerloops`)
                        continue
                    where, loops = (info.path, loop.where), frozenset((loop.id,))
                    what, model = self.loop_step(info, fn, loop, targets, (replay_reach, reach, compiled_graph, graph))
                    if what is not None and model is None:
                        self.add("host", fid, f"per-token loop calling {what}, which replays", where, loops=loops)
                        continue
                    if model is None and not self.options.entries:
                        unresolved = self.unresolved_model(info, qual, loop)
                        if unresolved is not None:  # evidence by shape: the sampled ids carried into a field's callable
                            self.shaped_models.add((fid, unresolved))
                            by_class = getattr(self.graph, "by_class", {}).get((fid, unresolved))
                            how = f"resolved by class to {', '.join(q for _, q in by_class)}" if by_class else "unresolved"
                            # resolved by class in an engine that captures nothing: the package's own model, and
                            # the loop its decode path (:mod:`.modelroots`); beside a capture, a parity fallback
                            if (not by_class or graph or replay_reach) and not field_callable(unresolved) \
                                    and not field_method(unresolved):
                                handed.add(fid)
                            runs[(fid, loop.id)] = (loop.where, frozenset((unresolved,)), None, None,
                                                    loop.id in fn.while_loops, frozenset())
                            found.append((fid, f"per-token loop calling {render(unresolved)} ({how}), "
                                               "fed the ids it sampled the iteration before", where, loops))
                        continue
                    if model is not None and loop.solver:  # an integrator's steps (:mod:`.solverloops`):
                        continue  # per token only where its caller is, which the call graph decides
                    if model is not None and loop.schedule and (graph or replay_reach):
                        continue  # an eager denoising stage beside a captured step (:mod:`.scheduleloops`)
                    if model is not None and not self.options.entries:
                        kind = "per-token iterator step (one next() per token)" if loop.id == PROTOCOL_LOOP \
                            else "per-token loop"
                        if fn.name == "forward" and self.fields_only(info, fn, loop, reach | replay_reach):
                            weak.add(fid)
                        # an encoder's request loop runs once per request (:mod:`.tokenless`): no entry, but
                        # still the loop a loop around it wraps (``runs``), so that one is no step loop either
                        if not picks_no_tokens(self, info, fn, loop, reach | replay_reach):
                            found.append((fid, f"{kind} calling {model[1]}", where, loops))
                        steps = frozenset(e for e in loop.exprs if any(
                            t in reach or t in replay_reach for t in self.loop_targets(info, qual, type(loop)(loop.id, loop.where, [e]))))
                        runs[(fid, loop.id)] = (loop.where, frozenset(models), frozenset(loop.exprs), steps,
                                                loop.id in fn.while_loops, frozenset(
                                                    c.loops for c in fn.calls if c.expr in steps and loop.id in c.loops))
        found = [row for row in found if not self.wraps_inner_loop(row, runs) and not self.wraps_block_loop(row, runs)]
        entered = {(fid, i) for fid, _, _, ids in found for i in ids}
        for row in [row for row in found if wraps_denoising(self.fn(row[0]), row[3], {i for f, i in entered if f == row[0]})]:
            found.remove(row)  # a loop over clips around a denoising loop (:mod:`.chunkloops`)
            outer.found.append(OuterLoop(row[0], row[2][1], row[0]))
        self.unused_loops = self.unused(found) | weak | handed
        for fid, reason, where, loops in found:
            if fid in weak:
                reason += "; its carry goes through fields alone, in a model's forward: at most a warning"
            elif fid in handed:
                reason += "; a parameter's model, which no checked code builds: at most a warning"
            elif fid in self.unused_loops:
                reason += f"; no entry point of the checked paths runs {fid[1]}: at most a warning"
            self.add("eager", fid, reason, where, loops=loops)

    @staticmethod
    def wraps_inner_loop(row: tuple, runs: dict[tuple[FuncId, int], tuple]) -> bool:
        """Whether a per-token loop only wraps another of its function's per-token loops: a loop over
        windows (or chunks, attempts) whose feeding calls all sit in a nested loop that runs the same
        models. The nested loop is the per-token one (the innermost loop that runs the step, as
        :mod:`.outerloops` decides across functions); the wrapper's own statements -- a window's
        prompt rebuilt -- run once per window. A loop that also feeds a call of its own (``token =
        self.sample(logits)`` after a nested loop feeding the prompt in chunks) is the per-token
        loop, and the nested one its prefill. Calls are compared by what they run, not by site: a
        call of the same model after the nested loop (a draft loop, then a verification) is taken
        for the nested loop's too, so that step's verification is missed, never a false error. A loop
        whose model no call resolves (``calls`` None: :meth:`unresolved_model`) wraps a nested
        ``while`` loop fed the same callable: a block loop around a diffusion LM's denoising
        iterations, whose own calls (the block's schedule) run once per block (a nested ``for`` over
        ``range(k)`` is a speculative round's draft steps, the outer loop the round). So does one around a nested ``while`` loop
        (iterations until a test says the block is done) whose calls include every call of the
        outer loop that runs the model (``steps``), when the outer loop also calls the model outside
        it (``sites``): that call is the block's first pass, the outer loop's other calls (the
        block's schedule) run once per block. An outer loop whose only model call sits in the nested
        loop (a prompt fed in chunks, then one token a call: rwkv's pipeline) stays the per-token one."""
        fid, _, _, loop_ids = row
        mine = [runs[(fid, i)] for i in loop_ids if (fid, i) in runs]
        if len(mine) != 1:
            return False
        where, models, calls, steps, _, sites = mine[0]
        return any(other[1] >= models and (other[2] is None and other[4] if calls is None else other[2] >= calls or (
                   other[4] and other[2] >= steps and any(i not in s for s in sites)))
                   and _inside(other[0], where) for (f, i), other in runs.items() if f == fid)

    def wraps_block_loop(self, row: tuple, runs: dict[tuple[FuncId, int], tuple]) -> bool:
        """Whether a per-token loop runs blocks: a nested loop of its function that runs the same
        models and can stop itself (a ``while`` test, a ``break`` or ``return``: it decides when the
        block is done) is the step loop -- a diffusion engine's iterations over one block -- when
        every call the outer loop feeds and the nested one does not is the block's set-up: made
        before the nested loop, running no model (a per-block schedule). The outer loop's own
        statements -- the block's masks, its cache-update forward, its end-of-text test -- run once
        per block. An extra call after the nested loop (a sample after a chunked prefill) or one
        that runs a model (a verification beside a draft loop that may stop early) keeps the outer
        loop per token (:meth:`wraps_inner_loop` takes the nested loop when it feeds every call)."""
        fid, _, _, loop_ids = row
        if len(loop_ids) != 1 or (fid, next(iter(loop_ids))) not in runs:
            return False
        where, models, calls = runs[(fid, next(iter(loop_ids)))][:3]
        if calls is None:  # a loop over an unresolved model: no calls to tell set-up from steps by
            return False
        fn = self.fn(fid)
        for (f, inner), other in runs.items():
            if f == fid and other[2] is not None and _inside(other[0], where) \
                    and (inner in fn.loop_exits or inner in fn.while_loops) and other[1] >= models \
                    and all(self.block_setup(fid, expr, inner) for expr in calls - other[2]):
                return True
        return False

    def block_setup(self, fid: FuncId, expr: tuple, inner: int) -> bool:
        """A call made before the nested loop ``inner`` (never inside it) that reaches no model."""
        edges = [(callee, site) for callee, site in self.calls.get(fid, ()) if site.expr == expr]
        return bool(edges) and all(site.order < inner and inner not in site.loops and callee not in self.model_reach
                                   for callee, site in edges)

    def unresolved_model(self, info: ModuleInfo, qual: str, loop) -> tuple | None:
        """The field's callable a loop calls with the ids it sampled the iteration before, when the
        call graph resolves it to nothing (an untyped model nothing checked constructs): the shape is
        the evidence (:mod:`.sampledcarry`). A call that resolves is judged by what it runs; one that
        resolves to training code alone (a wrapper's loss ``forward`` through a field of any class:
        :mod:`.losscode`) resolves to no model a decode step runs, as if to nothing."""
        for expr in loop.sampled:
            if all(t in self.not_hot.training for t in self.loop_targets(info, qual, type(loop)(loop.id, loop.where, [expr]))):
                return expr
        return None

    def fields_only(self, info: ModuleInfo, fn, loop, runs: set[FuncId]) -> bool:
        """Whether every call of ``loop`` that runs the model carries only through ``self`` fields
        (:mod:`.fieldcarry`): evidence enough for an eager engine that keeps its state on the object,
        not in a model's ``forward`` (a layer loop, whatever state its layers hand on): such a loop
        is listed, and what only it reaches is at most a warning. Beside a capture it stays evidence:
        demoting every such loop there lost six true errors of ktransformers' eager backend (its
        ``generate`` carries the sampled ids through fields), and the serving loop whose only carry
        is bookkeeping (lmdeploy's pending transfers) is a host step loop once its step is known to
        replay (:meth:`.entries.Discovery.runs_capture`)."""
        if not loop.fields:
            return False
        rest = type(loop)(loop.id, loop.where, [e for e in loop.exprs if e not in loop.fields])
        return not any(t in runs for t in self.loop_targets(info, fn.qualname, rest))

    def unused(self, found: list[tuple[FuncId, str, tuple, frozenset[int]]]) -> set[FuncId]:
        """The eager per-token loops that rank below the engine's own decode path: no entry point of
        the checked paths runs them, while one runs some other loop that runs the step (a host step
        loop, or an eager per-token loop) -- a public batched ``generate`` only the tests call,
        beside the ``generate`` the engine's ``main`` runs. An entry point is module-level code (a
        script's ``if __name__ == "__main__":``, a CLI table of commands), and it runs what it
        reaches through calls and through functions it hands over (a command handed to an
        argument parser). The loop is still a decode loop (its evidence stands, ``graphlint
        entries`` lists it, saying why it ranks lower); what only it reaches is at most a warning,
        as for a guess: the gate fails on the decode path the engine runs. Code with no entry point
        that runs a loop (a library: ``generate()`` is its users' to call) keeps every loop at full
        severity, and so does an iterator's ``__next__``, which a ``for`` runs with no call written --
        but for the loops of its command-line tools beside its own (:mod:`.scriptloops`)."""
        roots = [(fid, (fid,)) for fid in self.calls if fid[1] == "<module>"]
        run = bfs(roots, self.calls) if roots else {}
        loops = {fid for fid, _, _, _ in found} | set(self.loop_bodies["host"])
        if not any(fid in run for fid in loops):  # a library: its tools' loops rank below its own (:mod:`.scriptloops`)
            return tool_loops({fid for fid, _, _, ids in found if PROTOCOL_LOOP not in ids},
                              set(self.loop_bodies["host"]), self.infos)
        return {fid for fid, _, _, loop_ids in found if fid not in run and PROTOCOL_LOOP not in loop_ids}

    def serving_loops(self, replay_reach: set[FuncId], reach: set[FuncId], graph, steps: set[FuncId]) -> None:
        """Serving loops (:mod:`.loops`): a ``while`` loop that feeds nothing back -- its work comes
        from outside, a socket, a queue, a scheduler -- and calls the model step (``reach``) runs it
        once per message: a step loop of an eager engine (a worker's ``while True: msg = recv();
        out = self.execute_model(msg); send(out)``), its body eager, what it calls -- input upload,
        metadata, the model, sampling -- every rule as in any eager decode path. Not when a call
        leads to a replay (that loop is the host step's, :mod:`.steploops`), nor a loop in the model
        step itself (a ``while`` in a ``forward``), nor one whose every model call runs a decoder of
        its own (a request loop around ``generate()``: :mod:`.outerloops`), nor one with a nested
        loop that calls the model (a request loop around a token stream: the inner loop is the
        step), nor one in a module's own method (:meth:`module_method`). The model is a module's
        ``forward``/``__call__`` or captured code, not a ``*decode*``-named helper. A loop that never
        reaches the model (a health check, a start-up wait) is nothing."""
        self.serving: dict[FuncId, frozenset[int]] = {}
        inside = set(bfs([(s, (s,)) for s in steps], self.calls))
        # the model a serving loop runs is a module's forward (or captured code), not any
        # ``*decode*``-named helper doing device work (a KV-transfer worker's ``send_to_decode_node``)
        forwards = {f for f in steps if f[1].rpartition(".")[2] in ("forward", "__call__")}
        reach = reaching(forwards | set(graph), callers_of(self.calls)) if forwards or graph else set()
        for info in self.infos:
            for qual, fn in sorted(info.functions.items()):
                fid = (info.path, qual)
                if not fn.serve_loops or fid in graph or fid in inside or fn.captures or fn.device_code \
                        or self.not_hot(fn.name, fid) or self.module_method(info, fn):
                    continue
                fed = {loop.id for loop in fn.loops} | self.loop_bodies["host"].get(fid, frozenset())
                for loop in fn.serve_loops:
                    targets = self.loop_targets(info, qual, loop)
                    models = [t for t in targets if t in reach]
                    if loop.id in fed or not models or any(t in replay_reach for t in targets) \
                            or capture_setup_loop(self.calls.get(fid, ()), loop.id, self.fn) \
                            or self.steps_inside(fid, loop.id, reach):
                        continue
                    decoder = self.outer.decoder_run(fid, models)
                    if decoder is not None:
                        self.outer.found.append(OuterLoop(fid, loop.where, decoder))
                        continue
                    if not self.options.entries:
                        self.looping.add(fid)
                        self.serving[fid] = self.serving.get(fid, frozenset()) | {loop.id}
                        self.add("eager", fid, f"serving loop calling {models[0][1]} (work arrives each iteration, nothing fed back)",
                                 (info.path, loop.where), loops=frozenset((loop.id,)))

    def module_class(self, owner: tuple[str, str]) -> bool:
        """Whether the class ``owner`` (path, qualname) is a module: it has a ``forward`` (:mod:`.modelmodes`)."""
        info = self.by_path.get(owner[0])
        return info is not None and owner[1] in info.classes and self.index.find_method((info, owner[1]), "forward") is not None

    def module_method(self, info: ModuleInfo, fn) -> bool:
        """A method of a module (its class has a ``forward``): a ``while`` loop there is the model's
        own (a prompt fed in rounds of equal lengths), part of whatever step calls it, no loop of a
        server -- as a loop inside a module is no decode loop (:mod:`.loopsteps`)."""
        return bool(fn.cls) and fn.cls in info.classes and self.index.find_method((info, fn.cls), "forward") is not None

    def steps_inside(self, fid: FuncId, loop_id: int, reach: set[FuncId]) -> bool:
        """Whether a loop nested in the loop ``loop_id`` of ``fid`` calls the model: then the step is
        that inner loop (a request loop around a token stream), not the outer loop's iteration."""
        return any(callee in reach and loop_id in site.loops and any(i > loop_id for i in site.loops)
                   for callee, site in self.calls.get(fid, ()))
