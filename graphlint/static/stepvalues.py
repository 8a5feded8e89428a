"""The eager loop's step result as a value (:mod:`.stepresult`), split out of it for size: what
the model call's names hold statement by statement (:class:`StepResult`), the step's derivations
less its host copies (:func:`device_derives`), and where an iteration that ends with its model call
begins reading what it produced (:func:`rotated`)."""

from __future__ import annotations

from graphlint.static.facts import Candidate, FunctionInfo
from graphlint.static.stepflow import derived


class StepResult:
    """The step's result in the loop's own function, statement by statement: the names the model call
    binds, and what derives from them at statements after it and before this one. A name bound from
    the result only further down the iteration holds, here, what an earlier iteration left -- the
    step before's result (``tokens`` handed to a logit filter before this step's update rebinds it):
    reading it again is no read of this step's result, and keeps its severity."""

    def __init__(self, seeds: set[str], derives: list[tuple], start: int):
        self.seeds, self.derives, self.start = seeds, derives, start
        self.resets: list[int] = []  # the iteration's later model calls (see :meth:`ResultReads.walk`)
        self.copied: list[tuple] = derives
        self.memo: dict[int, set[str]] = {}

    def __bool__(self) -> bool:
        return bool(self.seeds)

    def anywhere(self) -> set[str]:
        """What derives from the result at any statement of the function, its host copies included
        (``for t in toks.cpu(): t.item()`` reads the copy, no device): a read of none of it reads
        something the step did not produce, whatever the order (the loop's own state: a position)."""
        names = self.memo.get(-1)
        if names is None:
            names = self.memo[-1] = derived(self.seeds, self.copied)
        return names

    def at(self, order: int) -> set[str]:
        names = self.memo.get(order)
        if names is None:
            names = self.memo[order] = derived(self.seeds, [d for d in self.derives if self.start < d[0] < order])
        return names


def device_derives(fn: FunctionInfo, reads: list[Candidate]) -> list[tuple]:
    """``fn``'s derivations less those a read-back makes: what a statement binds from a read of its
    own sources is the host's copy, no device value of the step's result. Not after ``nonzero`` and
    ``torch.where(c)`` (``on-device``): their output stays a device tensor derived from the data
    (``idx = done.nonzero(); state.done[idx] = True``), only its size was read."""
    copies = [(c.order, set(c.reads)) for c in reads if "on-device" not in c.flags]
    return [d for d in fn.derives if not any(o == d[0] and r.intersection(d[2]) for o, r in copies)]


def rotated(fn: FunctionInfo, reads: list[Candidate], in_loop: list, ids: frozenset[int], seeds: set[str],
            last: int) -> int | None:
    """The first statement of a per-token loop whose one model call ends the iteration: nothing in the
    loop after the model call reads what it bound, a value used only by the next iteration
    (``while True: tok = sample(logits); toks = tok.tolist(); ...; logits = model(ids)``, the prompt's
    logits made before the loop). The iteration is then the step's result first, the model call
    last: its reads before the model call are of the step before's result, and the first of them
    is the by-design read. ``None`` when the result is read after the call too (then a read at the
    top of the loop is the step before's result read a second time, :meth:`ResultReads.loop`). Asked
    only for a loop with one model call: a second one (an end-of-sequence step in a branch after
    the first, torchchat's ``decode_n_tokens``) says the iteration starts at the first."""
    mine = [c for c in reads if ids & set(c.loops)]
    orders = [c.order for c in in_loop] + [c.order for c in mine]
    if not seeds or not orders:
        return None
    end = max(orders)
    if any(last < d[0] <= end and seeds.intersection(d[2]) for d in fn.derives):
        return None
    if any(c.order > last and seeds.intersection(c.reads) for c in mine):
        return None
    if any(c.order > last and seeds.intersection(n for names in (*c.args, *(v for _, v in c.kwargs)) for n in names)
           for c in in_loop):
        return None
    begin = min(orders)
    if not any(begin <= d[0] < last and seeds.intersection(d[2]) for d in fn.derives):
        return None  # nothing before the call reads it either: a loop of another shape
    return begin
