"""The eager per-token loop's read-back of the step's result: by design once per step.

A captured engine's host step reads the step's result back after the replay (``info``, see
:mod:`.contexts`). An eager engine must do the same: it reads the sampled token -- or a
speculative step's accepted length -- once per step to stop, print or append it, and that read is
not what keeps the step from being captured. So, in an eager per-token loop:

- **the step's result** is what a name bound from the loop's *model call* holds (the first call in
  the loop body that reaches a model step, :mod:`.entries`) and every name derived from such a name
  in the loop's function (``tok = sample(logits)``, ``ids.append(tok)``, ``best, n =
  evaluate(logits, cands)``: a call's result derives from its arguments), and in a function the
  loop calls *after* the model call, the parameters given such names and what derives from them
  (:mod:`.stepflow` records how names derive, flow-insensitively);
- **a read of it** is a candidate of a rule marked ``result_readback`` or ``eager_result``
  (``.item()``, ``.tolist()``, ``int(t)``, ``if n == 0:``, ``nonzero``...) reading such a name; a
  call after the model call passing one to a function that reads it (the read happens there, at
  the call); or a slice bounded by it (``cands[:, : n + 1]``: GL111's finding where ``n`` is known
  to be a 0-dim device tensor, else a read all the same that no rule reports);
- **this step's result, statement by statement** (:class:`StepResult`): in the loop's own function
  a name counts from the statement that derives it from the model call's result on; before that
  statement it holds what an earlier iteration left (``tokens`` handed to a logit filter or a beam
  update before this step's update rebinds it), and reading that again re-reads the step before's
  result -- an extra read, which keeps its severity;
- **never the by-design read**: a read in a loop that visits every element of the step -- nested in
  the per-token loop, or any loop of a function the loop calls, with no ``break`` or ``return`` out
  of it (:func:`.sidereads.per_element`): every row or beam read one by one where one transfer of the whole
  would do (a loop that stops at the first rejected draft token decides element by element, and
  its read may be the one); a read under ``if i == 0:`` of the per-token loop runs once per decode
  and is no per-step cost at all (:mod:`.iterations`, dropped when placing);
- **never a read of the result at all: an intermediate** (:func:`.sidereads.intermediate`): a read whose host
  value the function then combines with the data it read -- one later statement or call takes both
  (``max_p = probs[..., 0].item(); cut(probs, max_p * min_p)``, ``probs[probs < thr] = 0``): a
  threshold, a count or a scale the host needs to launch the rest of the step. The step's result
  does not exist yet when it is read (the sampler is still computing it), so it is neither the
  by-design read nor one that later reads follow; it keeps its severity. The read of the finished
  value (the sampled ids a streamer or stop check reads) is still the step's one read; so is a
  helper's returned read (``return int(out)``) after reads of a side computation on the data it
  is drawn from (a sorted cumulative distribution, a cut-off: :func:`.sidereads.side_read`);
- **the step's result read at the top of the next iteration** (:meth:`ResultReads.carried`): when
  no read after the model call is the first, what the iteration carried over from the result
  (``cur = nxt.view(1, -1)``) is read first at the loop's top, before the next model call;
- **the first read** in an iteration is one that no other read of the step's result runs before on
  every way through the iteration (:func:`.stmtpaths.follows_a_read`: earlier in an enclosing
  block, earlier in its own statement, or an earlier ``if`` all of whose arms read). That read is
  ``info``; every later one keeps its severity: a second read of the same result is a second sync
  the engine could fold into the first (``x.tolist()`` to print, then ``x.item() == eos`` is two).
  "The same value" is therefore the step's result as a whole, not one name: reading the token and
  then the accepted length is two reads.

Never the first read, though each is a read that the reads after it follow: a batch stop check
over a reduction or membership (``if done.all():``, ``torch.isin``, ``eos in ids``: one bit the
engine could keep on the device -- the issue names ``if finished.all(): break`` as a hazard); in an
eager loop, its own stop test (``if nxt[0] == eos: break``, ``stop = True``: :func:`.stopchecks.stops_loop`;
not a helper's ``return`` or an inner loop's ``break``), a per-token sync by the labels' rule for eager
loops, which a later read the host needs (to print) does not follow (around a replay, :mod:`.hostreads`); and
``nonzero``/``torch.where(c)`` (``eager_result: false``: the host learns a size, not the step's
data) -- except in a speculative step's verifier (:meth:`ResultReads.verified`), where the size the
acceptance's ``nonzero`` reads is the accepted length, the step's by-design read. Not reads at all: one whose value nothing uses (``discarded``; ``returned`` by a helper
whose caller drops it). Reads before the model call (what gates the step: ``if tok.item() in
stop:`` at the top of the loop reads the previous step's token a second time), reads inside the
model (never followed) and reads of what the step did not produce keep their severity; so does a
first read in a function the loop also calls before its model call.
"""

from __future__ import annotations

from graphlint.static.facts import CallSite, Candidate, FunctionInfo, ModuleInfo
from graphlint.static.sidereads import intermediate, per_element, side_read
from graphlint.static.stepflow import derived
from graphlint.static.stmtpaths import follows_a_read
from graphlint.static.stepvalues import StepResult, device_derives, rotated

FuncId = tuple[str, str]
Key = tuple[str, int, int, str]  # (path, line, col, code) of a candidate
MAX_DEPTH = 4


class ResultReads:
    """Finds each eager per-token loop's first read of its step's result (see the module docstring)."""

    #: a batch stop check (``if done.all():``) may be the first read, and the step's result carried
    #: to the top of the next iteration may be read first there (:meth:`carried`): not in an eager
    #: loop, where the issue names the loop's stop check a hazard and a counter the loop advances by
    #: the result's shape (``pos = pos + tok.shape[-1]``) looks derived from it (:mod:`.hostreads`
    #: says why a host step loop differs)
    stop_checks = False

    def __init__(self, infos: list[ModuleInfo], graph, model: set[FuncId],
                 shaped: set[tuple[FuncId, tuple]] = frozenset(), hosted: set[FuncId] | frozenset = frozenset()):
        self.hosted = hosted  # loops that are host step loops too: the stop test may be the one read
        self.eager_stops = not self.stop_checks  # this loop's stop tests are syncs (:meth:`loop`)
        self.judged: set[Key] = set()  # every read of a step's result met: the first ones and the rest
        #: reads in a step loop's own body, after its model call, of what the step did not produce
        #: (``input_pos.sum().item()`` after the replay): no read of the result at all
        self.others: set[Key] = set()
        self.by_path = {i.path: i for i in infos}
        self.graph = graph
        self.model = model  # functions that reach a model step (the loop's model call is a call of one)
        self.shaped = shaped  # unresolved model calls known by their loop's shape (:mod:`.sampledcarry`)
        self.reads: dict[FuncId, list[Candidate]] = {}
        for info in infos:
            for cand in info.candidates:
                if cand.reads:
                    self.reads.setdefault((info.path, cand.function), []).append(cand)
        self.first: set[Key] = set()
        self.gating: set[FuncId] = set()  # host functions a loop calls before its model call
        self.memo: dict[tuple, bool] = {}
        self.owner: dict[Key, str] = {}  # a first read's function
        #: walking a verifier (:meth:`verified`): a ``nonzero`` there may be the read of the accepted length
        self.accepting = False
        self.walked: StepResult | None = None  # the last loop's step result (:meth:`loop`)

    def fn(self, fid: FuncId) -> FunctionInfo | None:
        info = self.by_path.get(fid[0])
        return info.functions.get(fid[1]) if info is not None else None

    def targets(self, fid: FuncId, expr: tuple) -> list[FuncId]:
        """What the call runs, with what a helper runs for this caller (:mod:`.passedcalls`: the
        helper's call of the model it was handed is this caller's model call)."""
        found = self.graph.targets(fid[0], fid[1], CallSite(expr))
        passed = self.graph.passed.get(fid, {}).get(expr, ())
        return [*found, *(t for t in passed if t not in found)] if passed else found

    def run(self, loops: dict[FuncId, frozenset[int]], serving: dict[FuncId, frozenset[int]] | None = None,
            steps: set[FuncId] = frozenset()) -> set[Key]:
        self.steps = steps
        for fid, ids in sorted(loops.items()):
            self.loop(fid, ids)
        descended: set[FuncId] = set()
        for fid, ids in sorted((serving or {}).items()):
            fn = self.fn(fid)
            for call in fn.arg_calls if fn is not None else ():
                if call.loops & ids:
                    for target in self.targets(fid, call.expr):
                        if target in self.model and target not in steps:
                            self.runs_step(target, steps, descended, 0)
        return {k for k in self.first if (k[0], self.owner[k]) not in self.gating}

    def runs_step(self, fid: FuncId, steps: set[FuncId], seen: set[FuncId], depth: int) -> None:
        """A serving loop's model call is a worker method (``execute_model``) that runs the model
        further down (``runner.run`` -> ``self.model(...)``, then the sampler): the step's result is
        what the first function on that way to call the model step itself gets back, and its reads
        there and after it (the sampler's ``.cpu()`` of the ids) are the step's, as in a per-token
        loop's own function -- the whole function is one iteration."""
        fn = self.fn(fid)
        if fn is None or fid in seen or depth > MAX_DEPTH:
            return
        seen.add(fid)
        model_calls = [(c, [t for t in self.targets(fid, c.expr) if t in self.model]) for c in fn.arg_calls]
        model_calls = [(c, ts) for c, ts in model_calls if ts]
        direct = [c for c, ts in model_calls if any(t in steps for t in ts)]
        if not direct:  # the way goes on below: a helper that calls the model
            for _, ts in model_calls:
                for t in ts:
                    self.runs_step(t, steps, seen, depth + 1)
            return
        start = min(c.order for c in direct)
        bound_at = {start}
        derives = device_derives(fn, self.reads.get(fid, ()))
        result = StepResult({t for order, t, _ in fn.derives if order in bound_at}, derives, start)
        # the model steps it calls after the first (a sampler module given the logits) finish the
        # step: their reads of what they are given are followed, as any callee's
        later = {t for c, ts in model_calls if c.order > start for t in ts if t in steps}
        model, self.model = self.model, self.model - later
        try:
            self.walk(fid, result, lambda order, loops: order > start, True, 0)
        finally:
            self.model = model

    def loop(self, fid: FuncId, ids: frozenset[int]) -> None:
        fn = self.fn(fid)
        if fn is None:
            return
        self.eager_stops = self.eager_loop(fid, fn, ids)
        in_loop = [c for c in fn.arg_calls if c.loops & ids]
        model_calls = [c for c in in_loop if (fid, c.expr) in self.shaped
                       or any(t in self.model for t in self.targets(fid, c.expr))]
        if not model_calls:
            sites = [s for s in fn.calls if s.loops & ids and not s.reference
                     and any(t in self.model for t in self.targets(fid, s.expr))]
            if sites:
                self.verified(fid, max(sites, key=lambda s: s.order))
            return
        start = min(c.order for c in model_calls)
        bound_at = {c.order for c in model_calls}
        derives = device_derives(fn, self.reads.get(fid, ()))
        seeds = {t for order, t, _ in fn.derives if order in bound_at}
        begin = rotated(fn, self.reads.get(fid, ()), in_loop, ids, seeds, start) if len(bound_at) == 1 else None
        if begin is not None:  # the model call ends the iteration: the next one reads its result first
            result = StepResult(seeds, derives, begin - 1)
            result.copied = fn.derives
            self.walked = result
            self.walk(fid, result, lambda order, loops: begin <= order < start and bool(loops & ids), True, 0,
                      per_token=ids)
            return
        result = self.walked = StepResult(seeds, derives, start)
        result.copied = fn.derives  # what derives from it through its host copies too (:meth:`StepResult.anywhere`)
        result.resets = sorted({c.order for c in model_calls if c.order > start})
        for call in in_loop:
            if call.order < start:
                self.gate(fid, call)
        marked = len(self.first)
        self.walk(fid, result, lambda order, loops: order > start and bool(loops & ids), True, 0, per_token=ids)
        if len(self.first) == marked and len(bound_at) == 1 and self.stop_checks:
            self.carried(fid, fn, in_loop, ids, seeds, derives, start)

    def verified(self, fid: FuncId, last) -> None:
        """A step written as argument-less methods of the engine, its state on the object
        (``self.build_tree(); done = self.verify()``: a speculative step's draft, replayed or not,
        then its verification): no call hands the loop a result it could read. The step's result is
        what its last model call computes -- the verifier runs the target model on the draft and
        accepts -- and, as for a serving loop's worker method (:meth:`runs_step`), the first read
        there, after that function's own model call, is the step's one read."""
        self.accepting = True
        try:
            for target in self.targets(fid, last.expr):
                if target in self.model and target not in self.steps:
                    self.runs_step(target, self.steps, set(), 0)
        finally:
            self.accepting = False

    def eager_loop(self, fid: FuncId, fn: FunctionInfo, ids: frozenset[int]) -> bool:
        """Whether the loop runs its step eagerly: its own stop test is then a per-token sync."""
        return not self.stop_checks and fid not in self.hosted

    def carried(self, fid: FuncId, fn: FunctionInfo, in_loop: list, ids: frozenset[int], seeds: set[str],
                derives: list[tuple], start: int) -> None:
        """No read after the model call is the step's first (none at all, or only per-row reads, or
        intermediates): the iteration hands its result over to the next one (``cur = nxt.view(1, -1)``,
        ``done |= nxt == eos``) and the host reads it there, at the top of the loop before the next
        model call (``if (cur == eos).any(): break``, ``while done_count.max() > 0:``) -- once per
        step, the step's one read. What the iteration derives from the result after the model call
        is the step before's result in the statements of the loop up to the model call, read the
        first time there; the later reads there follow it, as the reads after a first one do."""
        mine = [c for c in self.reads.get(fid, ()) if ids & set(c.loops)]
        orders = [c.order for c in in_loop] + [c.order for c in mine]
        if not orders:
            return
        begin = min(orders)
        after = [c.order for c in (*fn.arg_calls, *self.reads.get(fid, ())) if c.order > start and not ids & set(c.loops)]
        end = min(after, default=None)  # the first statement after the loop that the facts show
        carried = derived(seeds, [d for d in derives if start <= d[0] and (end is None or d[0] < end)])
        if not any(begin <= c.order < start and carried.intersection(c.reads) for c in mine):
            return
        result = StepResult(carried, derives, begin - 1)
        result.copied = fn.derives
        self.walk(fid, result, lambda order, loops: begin <= order < start and bool(loops & ids), True, 0,
                  per_token=ids)

    def gate(self, fid: FuncId, call) -> None:
        todo = [t for t in self.targets(fid, call.expr) if t not in self.model]
        while todo:
            f = todo.pop()
            if f in self.gating:
                continue
            self.gating.add(f)
            fn = self.fn(f)
            for c in fn.arg_calls if fn is not None else ():
                todo.extend(t for t in self.targets(f, c.expr) if t not in self.model)

    def walk(self, fid: FuncId, result, within, mark: bool, depth: int, dropped: bool = False,
             per_token: frozenset[int] = frozenset()) -> bool:
        """Whether ``fid`` reads the result (``result``: its names, or a :class:`StepResult` in the
        loop's own function) in the statements ``within`` accepts; with ``mark``, its first reads are
        recorded; ``dropped``: its caller throws away what it returns (a read it returns is then used
        by nothing); ``per_token``: the per-token loops, in the loop's own function (a loop nested in
        them runs per element, as every loop of a function the loop calls does)."""
        fn = self.fn(fid)
        if fn is None or not result:
            return False
        at = result.at if isinstance(result, StepResult) else lambda order: result
        events: list[tuple[tuple, tuple, object, bool]] = []
        for cand in self.reads.get(fid, ()):
            if isinstance(result, StepResult) and cand.reads and within(cand.order, frozenset(cand.loops)) \
                    and not result.anywhere().intersection(cand.reads):
                self.others.add((fid[0], cand.line, cand.col, cand.code))
            if within(cand.order, frozenset(cand.loops)) and at(cand.order).intersection(cand.reads) \
                    and "discarded" not in cand.flags and not (dropped and "returned" in cand.flags):
                self.judged.add((fid[0], cand.line, cand.col, cand.code))
                origin = frozenset() if isinstance(result, StepResult) else frozenset(result)
                if intermediate(fn, cand, self.reads[fid], lambda c: bool(self.targets(fid, c.expr)), origin) \
                        or side_read(fn, cand, self.reads[fid]):
                    continue  # the step's result is still being computed: no read of it, kept as it is
                events.append(((cand.order, 0, cand.line, cand.col), cand.branch, cand,
                               per_element(fn, cand.loops, per_token)))
        reported = {(e[0][0], name) for e in events for name in e[2].reads}  # a rule's read at that statement
        for order, path, loops, names in fn.implicit_reads:
            if within(order, loops) and at(order).intersection(names) and not any((order, n) in reported for n in names):
                events.append(((order, 0, 0, -1), path, None, False))
        if depth < MAX_DEPTH:
            for call in fn.arg_calls:
                if not within(call.order, call.loops):
                    continue
                for callee in self.targets(fid, call.expr):
                    if callee not in self.model:
                        given = self.given(callee, call, at(call.order))
                        if given:
                            events.append(((call.order, 1, 0, 0), call.path, (callee, given, call.dropped),
                                           per_element(fn, call.loops, per_token)))
        # a later model call in the iteration (a verifier replayed after the draft) makes a result of
        # its own, which the host reads once too: the reads before it are not followed across it
        events += [((order, -1, 0, 0), None, "reset", False) for order in (result.resets if isinstance(result, StepResult) else ())]
        events.sort(key=lambda e: e[0])
        seen: list[tuple] = []
        # a host loop's exit test may be its one read after a size or bookkeeping read
        # (``idx = done.nonzero()``), never after a read of the step's data (:mod:`.hostreads`)
        seen_data: list[tuple] = []
        found = False
        for _, path, event, each in events:
            if event == "reset":
                seen, seen_data = [], []
                continue
            exit_test = self.stop_checks and isinstance(event, Candidate) and (
                "stop-check" in event.flags or ("stop-check-end" in event.flags and bool(event.loops)
                                                and event.loops[-1] in per_token))
            first = mark and not each and not follows_a_read(seen_data if exit_test else seen, path)
            if event is None:  # a slice bounded by the result: read, never reported here
                reads = True
            elif isinstance(event, Candidate):
                reads = True
                stop = self.eager_stops and "stop-test" in event.flags and bool(event.loops) \
                    and event.loops[-1] in per_token  # not an inner loop's own exit
                # in a verifier, the size an acceptance's ``nonzero`` reads is the accepted length: the step's read
                size = self.accepting and "on-device" in event.flags
                if first and ("not-the-result" not in event.flags or exit_test or size) and not stop:
                    key = (fid[0], event.line, event.col, event.code)
                    self.first.add(key)
                    self.owner[key] = fid[1]
                if stop:  # a sync of its own: the read the host needs (to print, to append) may follow
                    found = True
                    continue
            else:
                callee, given, thrown = event
                memo = (callee, given, first, thrown)
                if memo not in self.memo:
                    self.memo[memo] = False  # a recursive call reads nothing more
                    callee_fn = self.fn(callee)
                    self.memo[memo] = callee_fn is not None and self.walk(
                        callee, derived(set(given), callee_fn.derives), lambda order, loops: True, first, depth + 1,
                        thrown)
                reads = self.memo[memo]
            if reads:
                seen.append(path)
                if not (isinstance(event, Candidate) and "not-the-result" in event.flags and not exit_test):
                    seen_data.append(path)
                found = True
        return found

    def given(self, callee: FuncId, call, result: set[str]) -> frozenset[str]:
        """The callee's parameters that receive the result."""
        flow = self.by_path[callee[0]].flows.get(callee[1])
        if flow is None:
            return frozenset()
        params = flow.call_params()
        out = set()
        for i, names in enumerate(call.args):
            if names and names[0] == "*":
                break
            if i < len(params) and result.intersection(names):
                out.add(params[i])
        for keyword, names in call.kwargs:
            if result.intersection(names) and (keyword in params or keyword in flow.kwonly):
                out.add(keyword)
        return frozenset(out)


def result_reads(infos: list[ModuleInfo], graph, model: set[FuncId], loops: dict[FuncId, frozenset[int]],
                 serving: dict[FuncId, frozenset[int]] | None = None, steps: set[FuncId] = frozenset(),
                 shaped: set[tuple[FuncId, tuple]] = frozenset(), hosted: frozenset | set = frozenset()) -> set[Key]:
    """The candidates that are an eager loop's first read of its step's result (``serving``: the
    serving loops among ``loops``, whose model call runs the model further down, ``steps``;
    ``shaped``: (function, call) of unresolved model calls a loop's shape vouches for; ``hosted``: host loops too)."""
    return ResultReads(infos, graph, model, shaped, hosted).run(loops, serving, steps)
