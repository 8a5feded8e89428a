"""Project calls a synchronize's flow may step over: callees that launch nothing, or end in a wait.

The flow of :mod:`.syncpending` sees one function; a call into the project between the host's
last wait and a synchronize (a stop-string check, a scheduler's bookkeeping, a metrics hook)
counts as a launch, because the walk cannot see the callee, and a runner that synchronizes
after its replay is no wait to its caller. What a callee does is known only when the whole
project is linked. So the walk keeps, per function (``FunctionInfo.quiet``):

- what its own code launches, by the same events (:mod:`.deviceevents`), with the calls that look
  like the project's set aside, and those calls' callees (flow IR). A function with device work of
  its own (a torch op, a sub-module call, a tensor method) launches without asking;
- whether every way out of it (a ``return``, its end) comes after a wait with nothing launched
  since, and under which of its project calls' summaries (not a generator's or a coroutine's);
- for a synchronize the flow finds free only once some project calls are taken as quiet (no
  device event) or as ending in a wait (a launch, then a block), those calls, and a conditional
  flag (``sync-idle-if:<loop>:<k>``, ``sync-after-wait-if:<k>``, ``sync-waited-if:<k>``; ``k``
  indexes them). :func:`set_aside` finds the least it needs: every call it met is tried as a launch.

At link time (:class:`QuietCalls`) a call is quiet when every function it resolves to launches
nothing, at any depth, and ends in a wait when every one of them does; an unresolved callee, one
that may hold a library's object, a cycle or a chain deeper than :data:`DEPTH` fails. A
conditional flag holds when each of its calls is what it needs.
"""

from __future__ import annotations

from graphlint.static.deviceevents import DeviceEvents, containers

DEPTH = 6
#: the most project calls one synchronize's trial puts back one by one (two flows each): past it, reported
TRIALS = 24


def note_launches(func, body, oracle, imports: dict[str, str], project: dict[int, tuple]) -> None:
    """Keep what ``func``'s own code launches, with the project calls it made set aside."""
    if func.device_work:
        func.quiet = _with(func, 0, True) if func.quiet else ()
        return
    events = DeviceEvents(set(), oracle, imports, containers(body))
    events.deferred = project
    own = any(e == "launch" for e in events.of(body))  # cheap first: most host code calls something unknown
    if not own:
        events.learn(body)
        events.skipped = set()
        own = any(e == "launch" for e in events.of(body))
    calls = () if own else _exprs(events.skipped, project)
    func.quiet = _with(func, 0, own, calls)


def set_aside(events: DeviceEvents, project: dict[int, tuple], check, waits: bool = True) -> tuple | None:
    """The project calls ``check()`` needs taken as launching nothing, and those it needs taken as
    ending in a wait (``waits``: may one), as ids; None when it fails even so. First every call is
    taken as quiet, then (``waits``) as ending in a wait; from there each call it met is tried as
    quiet, then each quiet one as a launch, keeping the least it needs (the model's call before the
    step's read stays a launch)."""
    try:
        for top in ("quiet", "wait") if waits else ("quiet",):
            events.deferred, events.skipped, events.modes = dict(project), set(), {c: top for c in project}
            if not check():
                continue
            met = sorted(events.skipped, key=lambda c: repr(project[c]))
            if len(met) > TRIALS:
                return None
            for weaker in ("quiet", "launch"):
                for call in met:
                    if events.modes[call] != weaker:
                        before, events.modes[call] = events.modes[call], weaker
                        if not check():
                            events.modes[call] = before
            return ({c for c in met if events.modes[c] == "quiet"}, {c for c in met if events.modes[c] == "wait"})
        return None
    finally:
        events.deferred, events.skipped, events.modes = {}, set(), {}


def add_condition(func, calls: tuple, project: dict[int, tuple]) -> int:
    """Index of the condition ``calls`` (ids to launch nothing, ids to end in a wait) among ``func``'s
    (added when new)."""
    conds = _parts(func)[2]
    cond = (_exprs(calls[0], project), _exprs(calls[1], project))
    if cond not in conds:
        func.quiet = _with(func, 2, conds := (*conds, cond))
    return conds.index(cond)


def note_ends(func, calls: tuple, project: dict[int, tuple]) -> None:
    """``func`` ends in a wait on every way out, if ``calls`` do as :func:`set_aside` found."""
    func.quiet = _with(func, 3, (_exprs(calls[0], project), _exprs(calls[1], project)))


def note_entries(func, entries: dict) -> None:
    """Keep, per callee of its calls in its one loop, under which condition (an index, None: none)
    nothing is pending when the call is made, through the loop's back edge."""
    func.quiet = _with(func, 4, tuple(entries.items()))


#: ``FunctionInfo.quiet`` when nothing is known: (own code launches, its project calls, the
#: conditions of its synchronizes, how it ends in a wait, its calls entered with nothing pending)
UNKNOWN = (True, (), (), None, ())


def _parts(func) -> tuple:
    return func.quiet if func.quiet else UNKNOWN


def _with(func, index: int, *values) -> tuple:
    """``func.quiet`` with ``values`` from ``index`` on."""
    parts = list(_parts(func))
    parts[index:index + len(values)] = values
    return tuple(parts)


def _exprs(calls, project: dict[int, tuple]) -> tuple:
    out = []
    for call in calls:
        expr = project[call]
        if expr not in out:
            out.append(expr)
    return tuple(sorted(out, key=repr))


class QuietCalls:
    """Which functions launch nothing, at any depth, once the call graph is linked."""

    def __init__(self, graph, fn, calls: dict | None = None):
        self.graph, self.fn, self.calls = graph, fn, calls or {}
        self.known: dict = {}
        self.callers: dict | None = None

    def entered_idle(self, fid, per_token) -> bool:
        """``fid`` is called only from per-token loops (``per_token(caller, loop id)``), each call made
        with nothing pending through its loop's back edge (the caller's condition holds, and what the
        call runs ends in a wait: the previous step's call was the last device event)."""
        if self.callers is None:
            self.callers = {}
            for caller, edges in self.calls.items():
                for callee, site in edges:
                    self.callers.setdefault(callee, []).append((caller, site))
        sites = self.callers.get(fid, ())
        return bool(sites) and all(self._entered(caller, site, per_token) for caller, site in sites)

    def _entered(self, caller, site, per_token) -> bool:
        if site.reference or len(site.loops) != 1 or not per_token(caller, next(iter(site.loops))):
            return False
        quiet = self.fn(caller).quiet
        k = dict(quiet[4]).get(site.expr) if quiet else None
        return k is not None and self._holds(caller, quiet[2][k], 0) and \
            self._call(caller, site.expr, 0, self.ends_waiting)

    def holds(self, fid, k: int) -> bool:
        """``fid``'s ``k``-th condition holds: its quiet calls launch nothing, its waiting ones end in a wait."""
        quiet = self.fn(fid).quiet
        return bool(quiet) and k < len(quiet[2]) and self._holds(fid, quiet[2][k], 0)

    def _holds(self, fid, cond: tuple, depth: int) -> bool:
        return all(self._call(fid, e, depth) for e in cond[0]) and \
            all(self._call(fid, e, depth, self.ends_waiting) for e in cond[1])

    def ends_waiting(self, fid, depth: int = 0) -> bool:
        """Every way out of ``fid`` (a return, its end) comes after a wait, with nothing launched since."""
        key = ("ends", fid)
        known = self.known.get(key)
        if known is not None:
            return known
        if depth > DEPTH:
            return False
        self.known[key] = False  # a cycle back here: to be safe
        quiet = self.fn(fid).quiet
        verdict = bool(quiet) and quiet[3] is not None and self._holds(fid, quiet[3], depth)
        if verdict or depth == 0:
            self.known[key] = verdict
        else:
            del self.known[key]
        return verdict

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

    def _call(self, fid, expr: tuple, depth: int, each=None) -> bool:
        """Every function the call of ``expr`` in ``fid`` may run launches nothing (``each``: passes that test)."""
        node = self.graph.node(fid[0], fid[1], expr)
        if node is None or self.graph.foreign(fid[0], fid[1], expr):
            return False  # not compiled, or it may hold a library's object
        callees = self.graph.callees(node)
        each = each or self.launches_nothing
        return bool(callees) and all(each(c, depth + 1) for c in callees)
