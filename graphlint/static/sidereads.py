"""Which reads the eager loop's definition (:mod:`.stepresult`) never takes for the step's one read:
reads per element, intermediates the host needs to go on computing, and side reads before a
helper's returned product."""

from __future__ import annotations

from graphlint.static.facts import Candidate, FunctionInfo
from graphlint.static.stepflow import derived
from graphlint.static.stmtpaths import exclusive


def per_element(fn: FunctionInfo, loops, per_token: frozenset[int]) -> bool:
    """Inside a loop that runs per element of the step -- nested in the per-token loop, or any loop of
    a function the loop calls -- and visits every element (no ``break`` or ``return`` out of it,
    :mod:`.iterations`): every row or beam read one by one, where one transfer of the whole would do.
    Never the by-design read; a loop that stops at the first rejected draft token decides one by one."""
    outer = max((m for m in loops if m in per_token), default=None) if per_token else None
    return any(m not in fn.loop_exits for m in loops if outer is None or m > outer)


def result_sources(cand, fn, origin: frozenset[str], read_at: set[int]) -> set[str]:
    """The names the read's data was computed from earlier in ``fn``, back to (not past) the step's
    result as ``fn`` received it (``origin``): every name between is the same result."""
    earlier = [d for d in fn.derives if d[0] < cand.order and d[0] not in read_at]
    same = derived(set(origin), earlier)
    out, todo = set(), list(cand.reads)
    while todo:
        name = todo.pop()
        for _, target, sources in earlier:
            if target == name:
                new = [n for n in sources if n in same and n not in out]
                out.update(new)
                todo.extend(new)
    return out


def intermediate(fn: FunctionInfo, cand: Candidate, reads: list[Candidate] = (), runs=lambda call: True,
                 origin: frozenset[str] = frozenset()) -> bool:
    """Whether the read's host value (what its statement binds, and what derives from that later)
    meets the data it read (``cand.reads`` and what derives from them without it) in one later
    call of project code (``runs``), or in a later statement that rebinds or stores into that data (``probs[probs < thr] =
    0``; a list collecting host values is no such data): the host reads to go on computing on the device -- a
    threshold, a count, a scale applied back to the same data -- so the value read is an
    intermediate of the step, not its result. ``origin``: in a function the loop calls, the
    parameters given the step's result; the data read then includes the earlier names of the same
    result it was computed from (``sorted_probs = probs[ids]``: a cut applied back to ``probs``
    after ``cumsum(sorted_probs).cpu()`` is one)."""
    if "bound" not in cand.flags:  # ``p[:, n]`` or ``if n < k:`` binds no host value of the read
        return False
    later = [d for d in fn.derives if d[0] > cand.order]
    bound = {t for order, t, _ in fn.derives if order == cand.order}
    host = derived(bound, later)
    if not host:
        return False
    if round_trip(cand, bound, host, reads):
        return True
    read_at = {c.order for c in reads if "bound" in c.flags}  # values read back are host data, not the device's
    # the device data read, and (in a callee) what it was computed from; a name the read rebinds
    # (``probs = probs.cpu()``) holds host data after it. Data the host value later overwrites is
    # host data from then on (``ids[:] = torch.tensor(picked)``), unless it is an earlier name of the
    # result the read came from, updated in place where the host value says (``probs[probs < cut] = 0``)
    ancestors = result_sources(cand, fn, origin, read_at) - bound if origin else set()
    seeds = (set(cand.reads) - bound) | ancestors
    data = derived(seeds, [d for d in later if not host.intersection(d[2]) and d[0] not in read_at]) - (host - ancestors)
    uses = [set(srcs) for _, target, srcs in later if target in data]  # the data recomputed with it
    uses += [{n for names in (*c.args, *(names for _, names in c.kwargs)) for n in names}
             for c in fn.arg_calls if c.order > cand.order and runs(c)]  # project code: ``zip(...)`` computes nothing
    return any(u & host and u & data for u in uses)


def round_trip(cand: Candidate, bound: set[str], host: set[str], reads) -> bool:
    """Whether the read replaces the device data it read by its host copy (``logits =
    logits.cpu().numpy()``), and what the host then computes from it is read again later in the
    step (the ids sampled from the filtered logits, uploaded again): a host round trip inside the
    step -- a numpy top-p filter -- so the step's result does not exist yet when it is read, and the
    read of the result is the later one. A read into a name of its own (``n = accepted.item()``)
    is never taken for one: its host value may only bound what is read next. A read in the other arm
    of an ``if`` (the device path beside a host one) is never the later read: no pass runs both."""
    if not bound & set(cand.reads):
        return False
    computed = host - bound
    return any(c.order > cand.order and computed.intersection(c.reads) and not exclusive(cand.branch, c.branch)
               for c in reads)


def ancestors(names: set[str], derives: list[tuple], before: int) -> set[str]:
    """``names`` and what they were computed from in the statements before ``before``."""
    found, todo = set(names), list(names)
    while todo:
        name = todo.pop()
        for order, target, srcs in derives:
            if target == name and order < before:
                todo.extend(s for s in srcs if s not in found)
                found.update(srcs)
    return found


def side_read(fn: FunctionInfo, cand: Candidate, reads: list[Candidate]) -> bool:
    """Whether a later read of the function hands its host value back (``return int(out)``: the
    helper's product, a sampler's token) and this read is of a side computation on the data that
    product is made from -- what it reads shares a local source with the product but is none of the
    product's own sources (``cum = cumsum(sort(probs)).cpu(); cut = float(...)`` before ``out =
    multinomial(probs); return int(out)``): a threshold the host needs to finish the product, not
    the step's result. A read of the product itself, or of what it is computed from, is no side
    read (reading the token twice stays two reads)."""
    local = {t for _, t, _ in fn.derives}
    mine = set(cand.reads) & local
    if not mine:
        return False
    for other in reads:
        if other.order <= cand.order or "returned" not in other.flags:
            continue
        product = ancestors(set(other.reads) & local, fn.derives, other.order)
        if product and not mine & product and ancestors(mine, fn.derives, cand.order) & product & local:
            return True
    return False
