"""Project calls a synchronize's flow may step over: those whose callees launch nothing.

The flow of :mod:`.syncpending` sees one function; a call into the project between the host's
last wait and a synchronize (a stop-string check, a scheduler's bookkeeping, a metrics hook)
counts as a launch, because the walk cannot see the callee. Whether it launches is known only
when the whole project is linked. So the walk keeps two things per function (``FunctionInfo.quiet``):

- what its own code launches, by the same events (:mod:`.deviceevents`), with the calls that look
  like the project's set aside, and those calls' callees (flow IR). A function with device work of
  its own (a torch op, a sub-module call, a tensor method) launches without asking.
- for a synchronize the flow finds free only once the project calls are set aside, the callees it
  set aside, and the flag ``sync-idle-if:<loop>:<k>`` / ``sync-waited-if:<k>`` (``k`` indexes them).

At link time (:class:`QuietCalls`) a function launches nothing when its own code launches nothing
and every callee it set aside resolves, and each function it resolves to launches nothing, at any
depth; an unresolved callee, one that may hold a library's object, a cycle or a chain deeper
than :data:`DEPTH` launches. A conditional
flag holds when every call it set aside launches nothing.
"""

from __future__ import annotations

from graphlint.static.deviceevents import DeviceEvents, containers

DEPTH = 6


def note_launches(func, body, oracle, imports: dict[str, str], project: dict[int, tuple]) -> None:
    """Keep what ``func``'s own code launches, with the project calls it made set aside."""
    conds = func.quiet[2] if func.quiet else ()
    if func.device_work:
        func.quiet = (True, (), conds) if conds else ()
        return
    events = DeviceEvents(set(), oracle, imports, containers(body))
    events.deferred = project
    own = any(e == "launch" for e in events.of(body))  # cheap first: most host code calls something unknown
    if not own:
        events.learn(body)
        events.skipped = set()
        own = any(e == "launch" for e in events.of(body))
    calls = () if own else _exprs(events.skipped, project)
    func.quiet = (own, calls, conds)


def set_aside(events: DeviceEvents, project: dict[int, tuple], check) -> set[int] | None:
    """The project calls ``check()`` needs set aside to hold (None when it fails even with every one
    of them set aside): each call it stepped over is put back, one at a time, and stays a launch
    where ``check()`` still holds without it (the model's call before the step's read)."""
    events.deferred, events.skipped = dict(project), set()
    try:
        if not check():
            return None
        needed = set(events.skipped)
        for call in sorted(needed, key=lambda c: repr(project[c])):
            del events.deferred[call]
            if check():
                needed.discard(call)
            else:
                events.deferred[call] = project[call]
        return needed
    finally:
        events.deferred, events.skipped = {}, set()


def add_condition(func, calls: set[int], project: dict[int, tuple]) -> int:
    """Index of the callees ``calls`` make among ``func``'s conditions (added when new)."""
    own, launched, conds = func.quiet if func.quiet else (True, (), ())
    exprs = _exprs(calls, project)
    if exprs not in conds:
        conds = (*conds, exprs)
    func.quiet = (own, launched, conds)
    return conds.index(exprs)


def _exprs(calls, project: dict[int, tuple]) -> tuple:
    out = []
    for call in calls:
        expr = project[call]
        if expr not in out:
            out.append(expr)
    return tuple(sorted(out, key=repr))


class QuietCalls:
    """Which functions launch nothing, at any depth, once the call graph is linked."""

    def __init__(self, graph, fn):
        self.graph, self.fn = graph, fn
        self.known: dict = {}

    def holds(self, fid, k: int) -> bool:
        """Every project call of ``fid``'s ``k``-th condition launches nothing."""
        quiet = self.fn(fid).quiet
        return bool(quiet) and k < len(quiet[2]) and all(self._call(fid, e, 0) for e in quiet[2][k])

    def launches_nothing(self, fid, depth: int = 0) -> bool:
        known = self.known.get(fid)
        if known is not None:
            return known
        if depth > DEPTH:
            return False
        self.known[fid] = False  # a cycle back here: it launches, to be safe
        quiet = self.fn(fid).quiet
        verdict = bool(quiet) and not quiet[0] and all(self._call(fid, e, depth) for e in quiet[1])
        if verdict or depth == 0:
            self.known[fid] = verdict
        else:
            del self.known[fid]  # false only because the chain ran deep: ask again from nearer the top
        return verdict

    def _call(self, fid, expr: tuple, depth: int) -> bool:
        node = self.graph.node(fid[0], fid[1], expr)
        if node is None or self.graph.foreign(fid[0], fid[1], expr):
            return False  # not compiled, or it may hold a library's object
        callees = self.graph.callees(node)
        return bool(callees) and all(self.launches_nothing(c, depth + 1) for c in callees)
