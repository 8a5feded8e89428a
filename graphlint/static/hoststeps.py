"""The host step, the part of :class:`graphlint.static.entries.Discovery` that starts at a replay:
functions that replay a CUDA graph (``g.replay()``, a call of a ``torch.compile``\\ d CUDA-graph
function) and the functions that call them once per step -- direct callers, a forwarding wrapper's
callers, a function that hands its callable to a capture and replays it (a capture requester) --
up to the step loop (:mod:`.steploops`). Never set-up: a replay only constructors, warm-up or
capture code run is a check, not a step; nor a prompt's pass replayed before a per-token loop of
the same function (:meth:`HostSteps.prefills`).

A mixin, as :mod:`.named_entries`: it reads the discovery's call graph and adds entries through
``self.add``; :mod:`.entries` says what the host context means for the rules.
"""

from __future__ import annotations

from graphlint.static.contexts import FuncId, reaching, spread
from graphlint.static.facts import CallSite
from graphlint.static.flowir import render
from graphlint.static.steploops import find_step_loops, round_loop


class HostSteps:
    #: functions whose every call is one inference of a solver's fixed run of replays (:func:`.steploops.solver_run`)
    solver_steps: frozenset = frozenset()

    def host_loops(self) -> dict[FuncId, frozenset[int]]:
        """The host step loops whose reads the step result's walk takes per iteration: not a solver
        step's loop, whose call is the step (walked as a host step function, :mod:`.hostreads`)."""
        return {f: ids for f, ids in self.loop_bodies["host"].items() if f not in self.solver_steps}

    def host_steps(self, compiled_graph: dict, graph: dict, callers: dict) -> dict[FuncId, int]:
        """Functions that replay, and the per-step functions that call them. Returns replayers."""
        replayers: dict[FuncId, int] = {}
        moded: set[FuncId] = set()  # a step per call in one mode, a step loop of its own in another
        candidates = {(i.path, q) for i in self.infos for q, fn in i.functions.items() if fn.replay_order}
        candidates.update(c for callee in compiled_graph for c in callers.get(callee, ()))
        compiled_sites = self.graph.compiled_sites()  # calls of a compiled CUDA-graph value, wherever it flowed
        candidates.update(compiled_sites)
        for fid in sorted(candidates):
            info, fn = self.by_path[fid[0]], self.fn(fid)
            # a function that captures only in a capture branch (a graph per batch size, captured on
            # first sight) is no capture routine: its code outside the branch is its host step (:mod:`.regions`)
            if fid in graph or fn.captures or self.not_hot(fn.name, fid) \
                    or fn.device_code or self.setup_only(fid, callers):
                continue
            point, loops, via = fn.replay_order, frozenset(i for each, _ in fn.replay_loops for i in each), ""
            last = point
            for callee, site in self.calls.get(fid, ()):
                if runs_compiled(compiled_graph, callee, fid, site) and (fid, id(site.expr)) not in self.graph.guessed:
                    point, loops, via = min(point or site.order, site.order), loops | site.loops, callee[1]
                    last = max(last, site.order)
            for site in compiled_sites.get(fid, ()):  # its callee may be a library model no value shows
                point, loops, via = min(point or site.order, site.order), loops | site.loops, via or render(site.expr)
                last = max(last, site.order)
            if not point or self.prefills(fid, loops, last):
                continue
            replayers[fid] = point
            step_loops = loops & frozenset(fn.range_loops)
            where = next(((info.path, s.where) for s in info.sites if s.kind == "replay" and s.function == fid[1]),
                         (info.path, ()))
            reason = f"calls {via}, a torch.compile'd CUDA-graph function" if via else "replays a CUDA graph"
            driver = round_loop(self, fid, step_loops, graph, callers) if step_loops else None
            if step_loops and driver is None and replays_per_call(fn, step_loops):
                self.add("host", fid, reason + " once per call in one mode, in a step loop in another", where)
                moded.add(fid)  # its callers run once per decode in the other mode: no step of theirs
            elif driver is not None:  # a fixed run of steps a loop above runs round after round: all of it
                self.add("host", fid, f"{reason} in a fixed run of steps, once per round of {driver[1]}", where)
            elif step_loops:  # the replay runs in a step loop of its own: that loop is the host step
                self.add("host", fid, reason + " in a step loop", where, loops=step_loops)
            else:
                self.add("host", fid, reason, where)
        requesters = self.capture_requesters(replayers, graph, callers)
        stepped = set(replayers) | requesters
        new, climbing = set(stepped) - moded, set(requesters)
        above = False  # past the first callers: the step itself (staging, sampling) is found
        # the callers of a replay, once per step; above a function that hands its callable to the
        # capture (``_decode``: the model's entry behind ``forward``), up to a step loop or a function
        # nothing calls: the scheduler step staging inputs and sampling around it
        while new:
            added, climbed, passed = set(), set(), set()
            for caller in sorted({c for r in new if r not in self.loop_bodies["host"] for c in callers.get(r, ())}):
                fn = self.fn(caller)
                if caller in graph or caller in stepped or fn.captures or self.not_hot(fn.name, caller) or fn.device_code:
                    continue
                made_by = callers.get(caller, ())
                if caller[1] == "<module>" or (made_by and all(c[1].endswith("__init__") for c in made_by)):
                    continue  # a start-up check the constructor runs (a warm-up calling the step is no such thing)
                # above the step a capture requester's caller is (staging, sampling), a function nothing
                # here calls and that loops over nothing (an RPC handler: ``Embed`` beside ``Decode``)
                # is called by what is not checked, per step or per request: no evidence of a step,
                # unless named like one (``hot-names``: lightllm's ``ModelRpcServer.decode``). A
                # forwarding wrapper's caller is the step itself (its caller's loop is the user's)
                unseen = above and not made_by and not fn.range_loops and not self._hot.match(fn.name)
                for callee, site in self.calls[caller]:
                    if callee in new and callee not in self.loop_bodies["host"] and not site.in_capture \
                            and not site.reference and (caller, id(site.expr)) not in self.graph.guessed \
                            and not (unseen and callee in climbing):
                        step_loops = site.loops & frozenset(fn.range_loops)
                        if step_loops:
                            self.add("host", caller, f"calls {callee[1]}, which replays, in a step loop",
                                     loops=step_loops)
                        else:
                            self.add("host", caller, f"calls {callee[1]}, which replays, once per step")
                        added.add(caller)
                        if callee in climbing:
                            climbed.add(caller)
                        elif not step_loops and self.forwards(caller):
                            passed.add(caller)  # a wrapper's callers call the replay through it
                        break
            stepped |= added
            new, climbing = climbed | passed, climbed
            above = True
        # above a replay in a step loop of its own nothing runs per step; above the others, the step loop
        find_step_loops(self, {r for r in (*replayers, *requesters)
                               if r not in self.loop_bodies["host"] and r not in moded},
                        graph, callers)
        return replayers

    def compiled_calls(self, compiled_graph: dict[FuncId, set[str] | None]) -> None:
        """What a call of a callable compiled with CUDA graphs runs, wherever the value was carried
        (``decode_model(x)`` of a parameter: :meth:`CallGraph.compiled_sites`) is captured code; a
        target only an installed guess gives is not (its caller is no host step for it either)."""
        for caller, edges in sorted(self.calls.items()):
            for callee, site in edges:
                if (caller, id(site.expr)) not in self.graph.guessed and callee not in compiled_graph \
                        and self.graph.runs_graph(caller, site):
                    self.compiled_roots.append(callee)
                    self.add("graph", callee, f"captured: a torch.compile'd CUDA-graph callable called in {caller[1]}",
                             (caller[0], ()), (caller, callee))

    def loop_step(self, info, fn, loop, targets: list[FuncId], sets) -> tuple[str | None, FuncId | None]:
        """(what the loop's replay calls, the model step it calls eagerly) for a per-token loop of
        ``fn``: evidence is per decode path -- a loop whose model call runs eagerly is an eager decode
        loop, even if another of its calls leads to some replay (a draft model's generate); beside a
        call of a compiled CUDA-graph value, only a module's own forward is such a call (a
        ``*decode*`` helper unpacking the replay's output is the host step's). An installed guess
        (:mod:`.installed`) is no evidence that the loop replays. Beside its replay, a call of the
        captured code itself (``graph``) is the replay's eager fallback (a bucket not captured, a
        failed replay): the same step, so no eager decode path of its own."""
        replay_reach, reach, compiled_graph, graph = sets
        fid = (info.path, fn.qualname)
        guessed = [e for e in loop.exprs if (fid, id(e)) in self.graph.guessed]
        sure = self.loop_targets(info, fn.qualname, type(loop)(loop.id, loop.where, [
            e for e in loop.exprs if e not in guessed])) if guessed else targets
        replaying = {t for t in sure if t in replay_reach or compiled_in(compiled_graph, t, fid[0])}
        stepped = min(replaying, default=None)
        compiled = next((render(s.expr) for s in self.graph.compiled_sites().get(fid, ()) if loop.id in s.loops), None)
        # the model step it runs per token: not one only its first iteration calls (``if prev_pos == 0 and
        # images: model.vision(images)``, :mod:`.iterations`), which runs once per decode
        once = compiled is not None or any(loop.id in site.first_iter for site in fn.calls)
        model = next((t for t in (self.later_targets(info, fn, loop) if once else targets)
                      if t in reach and t not in replaying and not (t in graph and self.replays_in(fid, loop.id, replay_reach))
                      and (compiled is None or t[1].rpartition(".")[2] in ("forward", "__call__"))), None)
        return (stepped[1] if stepped is not None else compiled), model

    def replays_in(self, fid: FuncId, loop: int, replay_reach: set[FuncId]) -> bool:
        """Whether a call of ``fid`` in its loop ``loop`` leads to a replay, fed by the loop or not."""
        return any(loop in site.loops and callee in replay_reach for callee, site in self.calls.get(fid, ()))

    def later_targets(self, info, fn, loop) -> list[FuncId]:
        """What the loop's eager calls run from its second iteration on: not the compiled step's
        calls, nor ``if i == 0: model(prompt)``, the prefill before the compiled step takes over."""
        first = {site.expr for site in fn.calls if loop.id in site.first_iter} - {
            site.expr for site in fn.calls if loop.id in site.loops and loop.id not in site.first_iter}
        first.update(site.expr for site in self.graph.compiled_sites().get((info.path, fn.qualname), ()))
        later = type(loop)(loop.id, loop.where, [e for e in loop.exprs if e not in first])
        return self.loop_targets(info, fn.qualname, later)

    def prefills(self, fid: FuncId, loops: frozenset[int], last: int) -> bool:
        """Whether every replay of ``fid`` runs before, and outside, a per-token loop of its own (one
        whose call runs the model: :mod:`.loops`): the graph it replays there is the prompt's pass,
        once per decode, and the loop after it is the decode (``next_token(draft, prompt)``,
        ``next_token(target, prompt)``, then ``while pos < limit: ... speculative_step(...)``). The
        function is then no host step: what it does before its loop runs once per decode, and its
        loop is judged as a loop (:meth:`.entries.Discovery.token_loops`)."""
        if loops:
            return False
        info, fn = self.by_path[fid[0]], self.fn(fid)
        return any(loop.id > last and any(t in self.model_reach for t in self.loop_targets(info, fid[1], loop))
                   for loop in fn.loops)

    def forwards(self, fid: FuncId) -> bool:
        """A wrapper that only passes its call on (``def call(*a, **k): return graph_wrapper(*a,
        **k)``): its callers call what it wraps, once per step each."""
        flow = self.by_path[fid[0]].flows.get(fid[1])
        stmts = flow.stmts if flow is not None else ()
        return len(self.fn(fid).calls) == 1 and len(stmts) == 2 and stmts[0][0] == "e" and stmts[1] == ("r", stmts[0][1])

    def setup_only(self, fid: FuncId, callers: dict) -> bool:
        """Called, and only by set-up: warm-up, capture or constructor code (a replay checking a
        fresh graph, a warm-up loop of replays)."""
        made_by = callers.get(fid, ())
        return bool(made_by) and all(
            self.not_hot(self.fn(c).name, c) or c[1].endswith("__init__")
            or self.fn(c).captures for c in made_by)

    def capture_requesters(self, replayers: dict[FuncId, int], graph: dict, callers: dict) -> set[FuncId]:
        """A function that hands a callable to a capture (``runner.capture(self._step, x)``, whose
        ``fn(x)`` inside ``torch.cuda.graph`` the points-to resolves to ``_step``) and leads to a replay
        (``runner.capture(self._step, x)`` on a batch size's first step, ``runner.replay(x)`` after):
        the host step around that graph. Its eager fallback (``self._step(x)`` for batch sizes with
        no graph) is graph code's business, like any host step's."""
        reach = reaching(set(replayers), callers)
        found = set()
        for fid, (target, _) in sorted(self.requesters.items()):
            fn = self.fn(fid)
            if fid in replayers or fid in graph or fn.captures or self.not_hot(fn.name, fid) or fn.device_code:
                continue
            via = next((c for c, site in self.calls.get(fid, ()) if c in reach and not site.reference
                        and not site.in_capture), None)
            if via is not None and fid[1] != "<module>":
                found.add(fid)
                self.add("host", fid, f"hands {target[1]} to a CUDA-graph capture and replays it through {via[1]}")
        self.host_requesters = found
        return found

    def eager_rounds(self, captured: set[FuncId], replay_reach: set[FuncId], skip: set[FuncId],
                     compiled_roots: set[FuncId]) -> tuple[set[FuncId], list]:
        """The host step's eager rounds (:func:`eager_rounds`), and the captured code they run
        themselves as eager roots: the model a verify round runs on K+1 tokens runs eagerly every
        round, whatever its capture does for the one-token step. ``skip``: cold code and the model
        steps themselves (a ``forward`` calling a shared captured layer is model code, no round)."""
        host, _ = spread(self.roots["host"], self.calls, skip, compiled_roots)
        rounds = {fid for fid in eager_rounds(host, self.calls, replay_reach, captured) if fid not in skip}
        return rounds, [(callee, (fid, callee)) for fid in sorted(rounds) for callee, site in self.calls.get(fid, ())
                        if callee in captured and not (site.reference or site.in_capture)]


def replays_per_call(fn, step_loops: frozenset[int]) -> bool:
    """Whether ``fn`` replays outside its step loops in an arm no looped replay shares (``if mode is
    WHOLE: g.replay()`` / ``elif mode is STEPS: while flag.item(): body.replay()``): in that mode
    each call is one step, and all of the function -- the static buffers it fills before the
    replay, what it clones out after -- runs once per replay. A replay before the loop on the same
    path (a prompt's graph, then the decode's) leaves the loop body the step."""
    looped = [arms for loops, arms in fn.replay_loops if step_loops & set(loops)]
    return any(not step_loops & set(loops) and all(exclusive(arms, other) for other in looped)
               for loops, arms in fn.replay_loops)


def exclusive(one: tuple[tuple[int, int], ...], other: tuple[tuple[int, int], ...]) -> bool:
    """Whether two statements never run in one call: they sit in different arms of one ``if``."""
    taken = dict(one)
    return any(taken.get(at, arm) != arm for at, arm in other)


def compiled_in(compiled_graph: dict[FuncId, set[str] | None], callee: FuncId, path: str) -> bool:
    """Whether a call of ``callee`` from the module ``path`` runs its torch.compile'd CUDA-graph version."""
    return callee in compiled_graph and (compiled_graph[callee] is None or path in compiled_graph[callee])


def runs_compiled(compiled_graph: dict[FuncId, set[str] | None], callee: FuncId, caller: FuncId, site: CallSite) -> bool:
    """Whether this call replays: it runs the torch.compile'd CUDA-graph version of ``callee``."""
    return not (site.in_capture or site.reference) and compiled_in(compiled_graph, callee, caller[0])


def eager_rounds(host: dict, calls: dict, replay_reach: set[FuncId], captured: set[FuncId]) -> set[FuncId]:
    """Host functions that call captured code themselves and reach no replay: a speculative
    runner's verify round beside the graph runner that the engine's step picks by option. It runs
    the step eagerly every token, so what it builds for the model is allocated per round, not
    staged for a graph (no staging exemption: :meth:`.contexts.Placement.step_data`). A function
    that also leads to a replay (an eager fallback for batch sizes no graph holds) stays a host step."""
    return {fid for fid in host if fid not in replay_reach and fid not in captured and any(
        callee in captured and not (site.reference or site.in_capture) for callee, site in calls.get(fid, ()))}
