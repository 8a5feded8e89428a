"""The counter of a fixed-length loop inside the step: the same values at every replay.

``for step in range(1, len(t_span)):`` binds ``step``, a name :data:`.params.POSITION_NAMES` takes
for a per-step position, so ``t_span[step + 1]`` and ``if step <= warm:`` were the frozen-value
findings (GL308 / GL309). They are when the loop is the step itself -- an eager decode loop whose
counter is the token's position, which a capture of its body would freeze. A loop that is not a
decode loop (it feeds no call's output back into the next call, or only through an integrator's
update: a flow-matching solver, :mod:`.solverloops`) runs whole inside each step: a capture of
the step records every iteration, and each replay runs them with the same counter values as
long as the range's bounds are themselves the same (a shape, a config value; not a position nor
a read-back). Indexing a device tensor by such an int is a view at a fixed offset, a branch on it
the same branch at every replay.

So the matcher flags a position finding whose position names are all such counters of one loop
(or host ints computed from them alone) with :data:`FLAG` and the loop, and the placement drops
it unless that loop is a per-token loop of its function (:func:`off_the_step`) -- decided when
linking, where the decode loops and the host step loops are known. Kept: a finding inside a
capture region that the loop itself encloses (the loop captures once per iteration: the last
value is the one frozen), a loop whose body replays a graph, and a finding that also reads
another position or a field another object advances.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.admitloops import FLAG as PER_ELEMENT
from graphlint.static.cstwalk import preorder
from graphlint.static.looppositions import off_loops


def note_counter(oracle, name: str, iterable: cst.BaseExpression, loop: tuple, captured: bool) -> None:
    """``for name in range(...)`` made ``name`` a position by its name: a fixed counter of the loop
    (``loop``: its statement and id; ``captured``: it begins inside a capture) when no bound of the
    range is a position or a read-back and the body replays no graph."""
    stmt, loop_id = loop
    fn = oracle.fn
    if oracle.derives_from_position(iterable) or oracle.derives_from_readback(iterable) or _replays(stmt.body):
        fn.fixed_counters.pop(name, None)
    else:
        fn.fixed_counters[name] = (loop_id, captured)


def derived(oracle, names, value: cst.BaseExpression | None) -> None:
    """``nxt = step + 1``: ``names`` hold a fixed counter's value when every position ``value``
    reads is one counter of the same loop; any other binding forgets them."""
    counters = oracle.fn.fixed_counters
    loop = counter_loop(oracle, [value]) if value is not None else None
    for name in names:
        if loop is not None:
            counters[name] = loop
        else:
            counters.pop(name, None)


def counter_loop(oracle, read: list[cst.CSTNode]) -> tuple[int, bool] | None:
    """The loop whose fixed counters are all the positions the nodes ``read`` read, if one is (none
    where a field another object advances may be read too: :meth:`.hosttaint.HostTaint.step_fields`)."""
    fn = oracle.fn
    counters = fn.fixed_counters
    if not counters or oracle.step_fields():
        return None
    loops = {counters.get(n.value) for node in read for n in preorder(node)
             if type(n) is cst.Name and n.value in fn.positions}
    return next(iter(loops)) if len(loops) == 1 and None not in loops else None


def _replays(node: cst.CSTNode) -> bool:
    return any(type(n) is cst.Attribute and n.attr.value == "replay" for n in preorder(node))


def tag_counter(candidate, loop: tuple[int, bool] | None) -> None:
    """Flag a raw candidate read on a fixed counter of ``loop`` -- (its id, whether it began inside a
    capture) -- unless a capture region inside the loop holds it (the loop captures once per
    iteration: the last value is the one frozen)."""
    if loop is not None and not (candidate.in_capture and not loop[1]):
        candidate.flags = candidate.flags | {f"{FLAG}{loop[0]}"}


def off_the_step(placement, fid, cand) -> bool:
    """A candidate flagged on a fixed counter of a loop of ``fid`` that is no per-token loop there
    (no eager decode loop and no host step loop, :attr:`.contexts.Placement.loop_bodies`): the loop
    runs whole inside each step, with the same counter values at every step. So is one flagged in
    a loop admitting the element it takes (:mod:`.admitloops`) that is no per-token loop there: its
    body runs once per element, a request's set-up. So is one read only on loop positions (:mod:`.looppositions`)
    none of whose loops is a per-token loop there, or in a function a capture records."""
    loop_bodies, flags = placement.loop_bodies, cand.flags
    if off_loops(placement, fid, cand):
        return True
    for flag in (FLAG, PER_ELEMENT):
        loops = [int(f[len(flag):]) for f in flags if f.startswith(flag)]
        if loops and not any(loops[0] in loop_bodies[kind].get(fid, ()) for kind in ("eager", "host")):
            return True
    return False


FLAG = "fixed-counter:"
