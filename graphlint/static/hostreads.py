"""Which reads of a captured engine's host step are its result, by the data (:mod:`.stepresult`).

The host step reads back what its replay produced -- the logits it samples from, the ids it
appends -- once per step, by design (``info``). Everything else it reads is a cost, wherever it
sits: the allocator's ``.item()`` of its free blocks, a ``nonzero().numel()`` compactness check, a
metadata constructor's ``lengths.max().item()``. Those run every step too, before the replay or
after it, and none of them is the step's output. So a function that calls its way to a replay and
binds what that call returns (``logits = runner(ids)``) is walked as one iteration of a per-token
loop: its first read of that value, or of what derives from it (``nxt = argmax(logits)``,
``self.append(nxt)`` and the read inside ``append``), is the result; a read of anything else after
the call is not (``followed``: those functions answer by the data alone, and what they call after
the replay without handing it the result is no read of it either). A function that replays
itself (``g.replay(); return self.static_out``) binds nothing the walk can follow: reads after
its replay stay the result, as before (:meth:`.contexts.Placement.after_last_replay`)."""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.stepflow import derived
from graphlint.static.stepresult import FuncId, Key, ResultReads
from graphlint.static.stepvalues import StepResult, device_derives


class HostReads(ResultReads):
    """:class:`.stepresult.ResultReads` with the host step functions walked as iterations.

    Here a batch stop check that exits the loop (``if (tok == eos).any(): break``, a ``while``
    test) may be the step's one read: the graph keeps the step on the device, and the host must
    learn once per step whether to replay again -- the stop test is that read when nothing else
    reads the result (labels: the host step around a replay reads its result once, by design). A
    reduction guarding bookkeeping inside the iteration (``if started.any():``) is no exit: work the
    device could do under a mask, never the one read. In an eager loop a stop check stays a hazard,
    as the issue names it (``if finished.all(): break`` in a reference engine's loop)."""

    stop_checks = True

    def __init__(self, *args, calls=None, optional=frozenset(), **kwargs):
        super().__init__(*args, **kwargs)
        self.followed: set[FuncId] = set()
        self.calls = calls or {}
        self.optional = optional  # captured only by a compile under a switch off by default

    def eager_loop(self, fid, fn, ids) -> bool:
        """A loop whose every step call is captured only when a switch off by default asks (dia's
        ``use_torch_compile``) runs its step eagerly by default: its stop test is a sync there."""
        steps = [t for c in fn.arg_calls if c.loops & ids for t in self.targets(fid, c.expr) if t in self.model]
        return bool(steps) and all(t in self.optional for t in steps)

    def loop(self, fid: FuncId, ids: frozenset[int]) -> None:
        """Exactly one read per step is by design: once the walk found it, no other read of the
        loop's own device values derived from the step is the result (``others``), though it sits
        after the replay -- a re-read of what the step before left (``x`` computed before this step,
        read again after it) included. A read of the host's copy (``.cpu()``) reads no device."""
        first, self.walked = set(self.first), None
        super().loop(fid, ids)
        if self.first - first and self.walked is not None:
            device = derived(self.walked.seeds, self.walked.derives)  # not through a host copy (``.cpu()``)
            self.others |= {(fid[0], c.line, c.col, c.code) for c in self.reads.get(fid, ())
                            if ids & set(c.loops) and device.intersection(c.reads)} - self.first
        if self.read_below(fid, ids):  # the step read its result already: what the loop reads is a second read
            self.first &= first
            self.followed.add(fid)

    def read_below(self, fid: FuncId, ids: frozenset[int]) -> bool:
        """Whether the step the loop calls reads its own result back after its replay (a runner's
        ``run``: replay, then ``.tolist()`` of the sampled ids): the step's one read is there, and a
        read in the loop of what else the step hands up (the hidden state a worker pickles to send
        to another process) is a second device-to-host copy per step, not the one by design."""
        stack = [t for t, site in self.calls.get(fid, ()) if site.loops & ids and t in self.model
                 and not site.reference and not site.in_capture]
        seen = set(stack)
        while stack:
            at = stack.pop()
            below = [(callee, site.order) for callee, site in self.calls.get(at, ())
                     if callee in self.model and not site.reference and not site.in_capture]
            callee_fn = self.fn(at)
            point = min([o for _, o in below] + ([callee_fn.replay_order] if callee_fn and callee_fn.replay_order else []),
                        default=0)
            if point and any(c.order > point and not c.loops for c in self.reads.get(at, ())):
                return True
            for callee, _ in below:
                if callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        return False

    def step_function(self, fid: FuncId) -> None:
        """Walk ``fid`` from its first call that leads to a replay, when that call binds names."""
        fn = self.fn(fid)
        if fn is None:
            return
        bound_at = {site.order for callee, site in self.calls.get(fid, ())
                    if callee in self.model and not site.reference and not site.in_capture}
        if not bound_at:
            return
        start = min(bound_at)
        seeds = {t for order, t, _ in fn.derives if order in bound_at}
        if not seeds:
            return
        derives = device_derives(fn, self.reads.get(fid, ()))
        result = StepResult(seeds, derives, start)
        result.copied = fn.derives
        result.resets = sorted(o for o in bound_at if o > start)
        self.followed.add(fid)
        self.walk(fid, result, lambda order, loops: order > start, True, 0)


def host_result_reads(infos: list[ModuleInfo], graph, replay_reach: set[FuncId],
                      loops: dict[FuncId, frozenset[int]], steps: list[FuncId] = (), calls=None,
                      optional=frozenset()) -> tuple[set[Key], set[Key], set[Key], set[FuncId]]:
    """The eager loop's definition (:mod:`.stepresult`) for a captured engine's host step loops,
    whose "model call" is the call on the way to the replay (or a captured callable it calls: a
    compiled step), and for the host step functions ``steps`` (:class:`HostReads`): (the first
    reads of the step's result, every read of it met, the reads after the model call of what the
    step did not produce, the step functions answered by the data). A read after the replay the
    walk met and did not take for the first -- a second read, a per-row read, an intermediate the
    sampler reads -- is no by-design read (:meth:`.contexts.Placement.place`)."""
    reads = HostReads(infos, graph, replay_reach, calls=calls, optional=optional)
    first = reads.run(loops)
    reads.eager_stops = False  # the host step functions' own walks
    for fid in sorted(steps):
        if fid not in loops:
            reads.step_function(fid)
    first = first | {k for k in reads.first if (k[0], reads.owner[k]) not in reads.gating}
    return first, reads.judged, reads.others, reads.followed
