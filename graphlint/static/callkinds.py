"""What call sites pass, once their function is walked: two calls of one callee joined, and the counters a loop
advances settled when the loop turns out per-token or not (:mod:`.valuekinds` says what each argument is)."""

from __future__ import annotations

from graphlint.static.valuekinds import ADVANCED, STEP, UNKNOWN


def settle_advanced(calls: list, loop_id: int, per_token: bool) -> None:
    """The loop ``loop_id`` ended: its advanced counters passed to calls are per-step ints when it
    is a per-token loop (it feeds a call's output back), and nothing known otherwise (a counter
    over layers or chunks is the same on every step)."""
    mark, settled = f"{ADVANCED}{loop_id}", STEP if per_token else UNKNOWN
    for site in calls:
        kinds = site.kinds
        if kinds is None or (mark not in kinds[0] and all(k != mark for _, k in kinds[1])):
            continue
        site.kinds = (tuple(settled if k == mark else k for k in kinds[0]),
                      tuple((n, settled if k == mark else k) for n, k in kinds[1]), *kinds[2:])


def join_args(a: tuple | None, b: tuple | None) -> tuple | None:
    """The same callee called twice from one function: what both calls pass, per argument."""
    if a is None or b is None or len(a[0]) != len(b[0]) or {k for k, _ in a[1]} != {k for k, _ in b[1]}:
        return None
    named = dict(b[1])
    return (tuple(x if x == y else UNKNOWN for x, y in zip(a[0], b[0])),
            tuple((k, v if v == named[k] else UNKNOWN) for k, v in a[1]))
