"""The host step of a serving engine: from each replay up the call graph to the loop that runs
once per step.

A serving engine rarely stages, samples and stops in the function that replays. The per-step
work happens in a loop several calls above it -- a scheduler's ``while True:`` calling
``executor.step()``, which calls ``model_runner.forward()``, which calls ``graph_runner.replay()``
-- and in that loop's other calls: the attention metadata prepared before the step, the sampler
and the stop check after it, often callbacks the loop received as arguments. This module finds
that loop and makes its body host code.

**The step loop** of a replay is the first loop met walking up the call graph from the function
that replays (or from a function that hands its callable to a capture and replays it, or calls a
``torch.compile``\\ d CUDA-graph function): a ``while`` loop (``while True:``, ``while not
done:``, ``while self.running:``) or a ``for ... in range(...)`` loop -- the same loops
:mod:`.loops` calls step loops -- whose body calls, directly, the function on the way to the
replay. A ``for`` over a collection (requests, layers, batch sizes, devices) is no step loop: its
body runs once per item of one step, and the walk goes on above it. Calls resolve by the
points-to call graph, so a callback passed into the loop (``run_loop(preprocess, run_model,
...)`` calling ``run_model(work)``) and a method called through an attribute are followed.

**A fixed run of steps is one round** (:func:`round_loop`): a function that replays in ``for i in
range(n)`` with no exit (several steps per round without syncing, then back to the host) decides
nothing about the end of the decode. When a loop that feeds its results back (a generator's round
loop, yielding the finished rows) calls it, that loop is the step loop, and the whole function is
host code: what sizes the round before its replays runs every round.

**What becomes host code**: the step loop's body (every call in it, before and after the path to
the replay: staging, sampling, read-back, stop checks), and every function on the way from the loop
to the replay (each runs once per step). Not the functions above the loop: they start serving.
A walk that meets no step loop changes nothing (a replay called once per request by code outside
the analysed files keeps the host step :mod:`.entries` gives it: the replaying function and its
direct callers).

**Never walked through** (the walk stops there): set-up, warm-up, capture and prefill-only
functions by name and training code (:mod:`.coldcode`), a function that captures without
replaying itself (a capture routine that checks its graph by replaying it), graph code, kernel
code, ``test_*`` functions, import-time code, a function only constructors call (a start-up
check), and calls inside a capture. So a warm-up loop that replays (``for _ in range(3):
self.step()`` in ``warmup()``) or a loop over batch sizes capturing graphs is no step loop.
Prefill-only branches of the functions on the way (``if is_prefill:``, ``if kind ==
TaskType.Prefill:``) are never walked (:mod:`.guards`), so their calls are no edges; nor is a
call whose only targets are installed guesses (:mod:`.installed`): a guess makes no host step.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from graphlint.static.contexts import FuncId

#: :class:`graphlint.static.entries.Discovery` (not imported: it imports this module)
Discovery = Any


def climbs_through(disc: Discovery, fid: FuncId, graph: dict, callers: dict) -> bool:
    """Whether the walk up from a replay may go through ``fid`` (see the module docstring)."""
    fn = disc.fn(fid)
    if fid in graph or fn.device_code or fid[1] == "<module>" or fn.name.startswith("test_"):
        return False
    if fn.captures or disc.not_hot(fn.name, fid):
        return False
    made_by = callers.get(fid, ())
    return not (made_by and all(c[1].endswith("__init__") for c in made_by))


def round_loop(disc: Discovery, fid: FuncId, loops: frozenset[int], graph: dict, callers: dict) -> FuncId | None:
    """The caller whose per-token loop runs ``fid`` once per round, when ``fid`` replays in ``loops``
    (its own step loops) a fixed number of times: ``for i in range(n)`` with no ``break`` or
    ``return`` in it and no ``while`` test, so nothing in it decides that the decode is over. The
    stop is decided above, in a loop that calls ``fid`` and feeds its results back (:mod:`.loops`:
    a plain loop, a generator yielding per round): that loop is the step loop, and all of ``fid``
    -- what sizes the round before its loop, what copies the state back after -- runs every round.
    A whole decode of a fixed length called per request keeps its own loop as the step: from a
    ``for`` over prompts (no step loop), or from a serving loop, whose work arrives from outside
    each iteration (:mod:`.loops`: a ``while`` that neither yields nor tests what it rebinds) --
    even where the engine's own state carries from one request to the next -- unless that loop
    can stop itself (a ``break`` or ``return`` in it: the stop is decided there)."""
    fn = disc.fn(fid)
    if any(loop in fn.loop_exits or loop in fn.while_loops for loop in loops):
        return None
    for caller in sorted(set(callers.get(fid, ()))):
        if caller == fid or not climbs_through(disc, caller, graph, callers):
            continue
        info, cfn = disc.by_path[caller[0]], disc.fn(caller)
        serving = {loop.id for loop in cfn.serve_loops} - set(cfn.loop_exits)
        if any(not loop.solver and loop.id not in serving and fid in disc.loop_targets(info, caller[1], loop)
               for loop in cfn.loops):
            return caller
    return None


def find_step_loops(disc: Discovery, starts: set[FuncId], graph: dict, callers: dict) -> None:
    """Adds the host step above ``starts`` (replaying functions): each step loop's body and the
    functions between it and the replay (see the module docstring)."""
    below: dict[FuncId, dict[FuncId, None]] = {}  # caller -> the callees it reaches a replay through
    loops_of: dict[FuncId, frozenset[int]] = {}  # function -> its step loops that lead to a replay
    via: dict[FuncId, FuncId] = {}  # a step loop's function -> a callee of the loop on the way
    in_loop: dict[FuncId, dict[FuncId, None]] = {}  # a step loop's function -> the callees its step loops call
    outside: dict[FuncId, FuncId] = {}  # a function -> a callee on the way it calls outside any step loop
    seen, queue = set(starts), deque(sorted(starts))
    while queue:
        callee = queue.popleft()
        for caller in sorted(set(callers.get(callee, ()))):
            if caller in starts or not climbs_through(disc, caller, graph, callers):
                continue
            site = next((s for c, s in disc.calls.get(caller, ()) if c == callee and not s.reference
                         and not s.in_capture and (caller, id(s.expr)) not in disc.graph.guessed), None)
            if site is None:
                continue
            below.setdefault(caller, {})[callee] = None
            step = site.loops & frozenset(disc.fn(caller).range_loops)
            if step:  # the loop that runs once per step: what calls this function starts serving
                loops_of[caller] = loops_of.get(caller, frozenset()) | step
                via.setdefault(caller, callee)
                in_loop.setdefault(caller, {})[callee] = None
            else:
                outside.setdefault(caller, callee)
                if caller not in seen:
                    seen.add(caller)
                    queue.append(caller)
    on_way: dict[FuncId, FuncId] = {}  # a function between a step loop and the replay -> its callee on the way
    # from the step loops' own calls down: a worker's shutdown after its serve loop (``engine.exit()``,
    # which reaches the replay's helper by name) runs once, not per step
    stack = [callee for fid in loops_of for callee in in_loop[fid]]
    while stack:
        fid = stack.pop()
        if fid in on_way or fid in starts or fid in loops_of:
            continue
        on_way[fid] = next(iter(below.get(fid, {None: None})))
        stack.extend(below.get(fid, ()))
    whole = {fid for fid in set(loops_of) & set(outside) if solver_run(disc.fn(fid), loops_of[fid])}
    disc.solver_steps = frozenset(whole)
    for fid in sorted(whole):  # the whole function, no loop body of its own: its step is the call
        disc.add("host", fid, f"calls {outside[fid][1]}, which leads to a replay, once per call, and replays"
                 " in a solver loop: each call is one inference")
    for fid in sorted(set(loops_of) - whole):
        where = _loop_where(disc, fid, loops_of[fid])
        disc.add("host", fid, f"step loop calling {via[fid][1]}, which leads to a replay", where,
                 loops=loops_of[fid])
    for fid in sorted(on_way):
        if on_way[fid] is not None:
            disc.add("host", fid, f"calls {on_way[fid][1]}, which leads to a replay, once per step")


def solver_run(fn, loops: frozenset[int]) -> bool:
    """Whether ``fn``'s step loops that replay are a solver's fixed refinement (``x = x + dt * v``, at
    least one, :mod:`.solverloops`) and none a decode feeding a sampled value back: then a replay it
    makes outside them (an encoder, a prompt's prefix) runs once per inference, as the solver loop
    does, and each call of ``fn`` is one step of those graphs -- a policy's action chunk per control
    step. Its code outside the loop is their host step, not a decode's once-per-request prompt pass
    (:meth:`.hoststeps.HostSteps.prefills` keeps that for a decode loop)."""
    fed = [loop for loop in fn.loops if loop.id in loops]
    return any(loop.solver for loop in fed) and all(loop.solver for loop in fed)


def _loop_where(disc: Discovery, fid: FuncId, loops: frozenset[int]) -> tuple[str, tuple]:
    """Where the first of ``loops`` is, when the walker recorded it (a per-token loop's position)."""
    fn = disc.fn(fid)
    where = next((loop.where for loop in fn.loops if loop.id in loops), ())
    return (fid[0], where)
