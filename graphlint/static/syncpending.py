"""A device-wide synchronize with nothing pending, or one the next read waits for anyway.

The README's rule for a synchronize on the per-step path (``syncrule``): it costs nothing when no
device work was launched since the host last blocked on the device (a blocking read or another
synchronize), and nothing extra when a blocking read follows it with no launch between. This
module decides both for a function's own code, at the end of its walk, and flags the candidate:

- ``sync-idle:<loop>``: on every path that reaches the synchronize through the back edge of the
  one loop of its function around it, the last device event is a wait. The loop's entry path is
  ignored: the linker trusts the flag only when that loop is a per-token (or step) loop of the
  function itself, whose first iteration is the prompt's, not a step (:func:`.syncplaced.idle_placed`). A
  loop inside another is never flagged: its entry may run once per step of the outer one (a
  speculative round's draft loop).
- ``sync-after-wait``: on every path from the function's entry, the last device event before it
  is a wait of the function's own (whatever its caller left pending): free wherever it is called.
- ``sync-waited``: in its own block, the next device event after it is a blocking read (not
  another synchronize: of two with nothing launched between, the first carries the cost).

A forward flow over the function's statements with two states, idle and pending (None where no
path runs), over the device events :mod:`.deviceevents` finds. Waits are the function's own
read-back candidates of the host-sync rules that block (their matchers know a tensor from a host
value) and the synchronizes themselves; a non-blocking copy is none. Anything the flow does not
model (``try``, ``match``, a ``with`` of a context manager that is not known host code, an
iterator's ``next()``) leaves work pending: when in doubt the synchronize stays reported. An
``if`` on the same test as one around the synchronize, a test the loop cannot change (a timer's
``if device.type == "cuda":``), goes the synchronize's way only (:mod:`.syncguards`). A
call of a project function between them is set aside only by a second flag,
``sync-idle-if:<loop>:<k>`` / ``sync-waited-if:<k>``, which holds at link time when every such
call launches nothing (:mod:`.quietcalls`).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.facts import PROTOCOL_LOOP
from graphlint.static.deviceevents import DeviceEvents, containers, is_range, walk
from graphlint.static.syncguards import assumed_tests, decided
from graphlint.static.quietcalls import add_condition, note_ends, note_entries, set_aside

#: the host-sync rules whose candidates block the host until the device is done (not GL107: a
#: stream's or an event's wait is not the device's; not GL109/GL110/GL113, whose anchors are calls
#: that may launch after reading)
WAIT_CODES = frozenset({"GL101", "GL102", "GL103", "GL104", "GL105", "GL106", "GL108", "GL111"})
LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
IDLE, PENDING = False, True


def mark_idle_syncs(raws: list, start: int, body: cst.CSTNode, oracle, imports: dict[str, str], func=None,
                    project: dict[int, tuple] | None = None) -> None:
    """Flag the function's synchronize candidates (rules with ``idle_sync``) that cost nothing, or
    that cost nothing if the project calls around them launch nothing (:mod:`.quietcalls`)."""
    targets = [i for i in range(start, len(raws)) if raws[i].rule.params.get("idle_sync")]
    waits = {id(r.anchor) for r in raws[start:] if r.rule.code in WAIT_CODES and not _non_blocking(r.anchor)}
    follow = bool(project) and func is not None
    ends = follow and _may_end_waiting(body, waits, project)
    entries = _loop_calls(body, project) if follow else []
    if not targets and not ends and not entries:
        return
    events = DeviceEvents(waits, oracle, imports, containers(body))
    events.learn(body)
    if ends and (calls := set_aside(events, project, lambda: _Flow(events, None, None).exits_idle(body))):
        note_ends(func, calls, project)
    if entries:
        _note_entries(events, func, project, entries)
    # waited for anyway only by a read: of two synchronizes with nothing launched between, the first carries the cost
    reads = DeviceEvents({w for w in waits if w not in {id(raws[i].anchor) for i in targets}}, oracle, imports,
                         events.containers)
    reads.suspects = events.suspects
    for i in targets:
        raw = raws[i]
        flags = set()
        loops = _loops_around(body, raw.anchor)
        ids = [loop for loop in raw.loops if loop != PROTOCOL_LOOP]
        if len(loops) == len(ids) == 1:
            idle = lambda: _Flow(events, raw.anchor, loops[0]).idle()  # noqa: E731
            if idle():
                flags.add(f"sync-idle:{ids[-1]}")
            elif follow and (calls := set_aside(events, project, idle)) is not None:
                flags.add(f"sync-idle-if:{ids[-1]}:{add_condition(func, calls, project)}")
        after = lambda: _Flow(events, raw.anchor, None).from_entry(body)  # noqa: E731
        first = lambda: _Flow(events, raw.anchor, None).from_entry(body, IDLE)  # noqa: E731
        if after():
            flags.add("sync-after-wait")
        elif follow and (calls := set_aside(events, project, after)) is not None:
            flags.add(f"sync-after-wait-if:{add_condition(func, calls, project)}")
        elif first():
            flags.add("sync-first")  # nothing launched before it: free when every caller enters idle
        elif follow and (calls := set_aside(events, project, first)) is not None:
            flags.add(f"sync-first-if:{add_condition(func, calls, project)}")
        waited = lambda: _waited(reads, body, raw.anchor)  # noqa: E731
        if waited():
            flags.add("sync-waited")
        elif follow and (calls := set_aside(reads, project, waited, waits=False)) is not None:
            flags.add(f"sync-waited-if:{add_condition(func, calls, project)}")
        if flags:
            raw.flags = raw.flags | flags


#: the most project calls of one loop whose entry state is worked out (one flow, or a trial, each)
ENTRY_CALLS = 8


def _loop_calls(body: cst.CSTNode, project: dict[int, tuple]) -> list[tuple]:
    """(call, loop) for each project call in exactly one loop of the function's own code (not its
    head), in loops with at most :data:`ENTRY_CALLS` of them."""
    per_loop: dict = {}
    stack: list[tuple] = [(body, None, 0)]
    while stack:
        node, loop, depth = stack.pop()
        if type(node) in SCOPES:
            continue
        if type(node) is cst.Call and id(node) in project and depth == 1:
            per_loop.setdefault(loop, []).append(node)
        if type(node) in LOOPS:
            stack.extend((c, node, depth + 1) for c in node.children if c is node.body)
            stack.extend((c, loop, depth) for c in node.children if c is not node.body and c is not node.orelse)
            stack.extend((c, loop, depth) for c in node.children if c is node.orelse)
        else:
            stack.extend((c, loop, depth) for c in node.children)
    return [(c, loop) for loop, calls in per_loop.items() if len(calls) <= ENTRY_CALLS for c in calls]


def _note_entries(events: DeviceEvents, func, project: dict[int, tuple], entries: list[tuple]) -> None:
    """Under which condition each loop call's callee is entered with nothing pending through the
    loop's back edge (the call itself taken as ending in a wait: checked at link time)."""
    verdict: dict = {}
    for call, loop in entries:
        expr = project[id(call)]
        if expr in verdict and verdict[expr] is None:
            continue
        idle = lambda: _Flow(events, call, loop).idle()  # noqa: E731, B023
        calls = (set(), set()) if idle() else set_aside(events, project, idle)
        k = None if calls is None else add_condition(func, calls, project)
        verdict[expr] = k if verdict.get(expr, k) == k else None
    note_entries(func, verdict)


def _may_end_waiting(body: cst.CSTNode, waits: set[int], project: dict[int, tuple]) -> bool:
    """Worth asking whether every way out of the function comes after a wait: it has a wait of its
    own, or its last statement or a ``return`` calls into the project; never a generator's or a
    coroutine's body (a call of it runs none of the body)."""
    if any(type(n) in (cst.Yield, cst.Await) for n in _own(body)):
        return False
    if waits:
        return True
    tails = [n for n in _own(body) if type(n) is cst.Return] + list(body.body[-1:])
    return any(id(n) in project for tail in tails for n in walk(tail))


def _own(body: cst.CSTNode):
    """The function's own nodes (not those of a nested def, class or lambda)."""
    stack = [body]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in node.children if type(c) not in SCOPES)


def _non_blocking(anchor: cst.CSTNode) -> bool:
    return type(anchor) is cst.Call and any(a.keyword is not None and a.keyword.value == "non_blocking"
                                            for a in anchor.args)


def _loops_around(body: cst.CSTNode, anchor: cst.CSTNode) -> list[cst.CSTNode]:
    """The ``for`` / ``while`` statements around ``anchor`` in the function, outermost first
    ([] when it is not in the function's own code)."""
    stack: list[tuple[cst.CSTNode, tuple]] = [(body, ())]
    while stack:
        node, loops = stack.pop()
        if node is anchor:
            return list(loops)
        if type(node) in SCOPES:
            continue
        inner = loops + (node,) if type(node) in LOOPS else loops
        stack.extend((child, inner) for child in node.children)
    return []


def _join(*states):
    live = [s for s in states if s is not None]
    return any(live) if live else None


class _Flow:
    """Idle or pending before ``target``, walking the function with ``loop``'s entry ignored."""

    def __init__(self, events: DeviceEvents, target: cst.CSTNode, loop: cst.CSTNode):
        self.events, self.target, self.loop = events, target, loop
        # the tests of its own ``if``\ s the loop cannot change
        self.assumed = assumed_tests(loop, target) if loop is not None else {}
        self.before: bool | None = None
        self.returns: list | None = None  # the states at each ``return`` (:meth:`exits_idle`)
        self.exits: list[tuple[list, list]] = []  # per loop walked: (continue states, break states)

    def idle(self) -> bool:
        """The synchronize runs with nothing pending on every path through the loop's back edge."""
        return self._idle(self.loop)

    def from_entry(self, body, start: bool = PENDING) -> bool:
        """Nothing pending at the synchronize on every path from the function's entry (whatever the
        caller left pending; ``start`` IDLE: nothing launched before it in the function)."""
        self.before = None
        self.block(body.body, start)
        return self.before is IDLE

    def exits_idle(self, body) -> bool:
        """Every way out of the function (a ``return``, its end) comes after a wait with nothing launched since."""
        self.returns = []
        end = self.block(body.body, PENDING)
        live = [s for s in (*self.returns, end) if s is not None]
        return bool(live) and not any(live)

    def _idle(self, loop: cst.CSTNode) -> bool:
        self.before = None
        self.loop_stmt(loop, None)
        return self.before is IDLE

    def expr(self, node, state):
        for event in self.events.of(node, self.target):
            if event == "target":
                self.before = _join(self.before, state) if self.before is not None else state
            else:
                state = state if state is None else event == "launch"
        return state

    def block(self, stmts, state):
        for stmt in stmts:
            if state is None:
                return None
            state = self.stmt(stmt, state)
        return state

    def suite(self, suite, state):
        return self.block(suite.body, state) if isinstance(suite, cst.IndentedBlock) else \
            self.block([cst.SimpleStatementLine(body=suite.body)], state)

    def stmt(self, stmt, state):
        kind = type(stmt)
        if kind is cst.SimpleStatementLine:
            for small in stmt.body:
                state = self.small(small, state)
                if state is None:
                    return None
            return state
        if kind is cst.If:
            test = self.expr(stmt.test, state)
            known = decided(stmt.test, self.assumed)  # the synchronize's own switch: one way only
            body = None if known is False else self.suite(stmt.body, test)
            other = None if known is True else test if stmt.orelse is None else (
                self.stmt(stmt.orelse, test) if type(stmt.orelse) is cst.If else self.suite(stmt.orelse.body, test))
            return _join(body, other)
        if kind in LOOPS:
            return self.loop_stmt(stmt, state)
        if kind is cst.With:
            for item in stmt.items:
                state = self.expr(item.item, state)
            state = self.suite(stmt.body, state)
            if all(type(i.item) is cst.Call and self.events.host_call(i.item) for i in stmt.items):
                return state
            self._jumps_pending(stmt)  # a context manager's exit may launch, on a jump out too
            return None if state is None else PENDING
        if kind in (cst.FunctionDef, cst.ClassDef):
            return state
        self._jumps_pending(stmt)  # try, match: not modelled
        self.before = PENDING if self._contains(stmt) else self.before
        return PENDING

    def _jumps_pending(self, stmt) -> None:
        """A ``continue``, ``break`` or ``return`` under ``stmt`` goes round or out with work pending."""
        if self.exits and any(type(n) in (cst.Continue, cst.Break) for n in walk(stmt)):
            self.exits[-1][0].append(PENDING)
            self.exits[-1][1].append(PENDING)
        if self.returns is not None and any(type(n) is cst.Return for n in walk(stmt)):
            self.returns.append(PENDING)

    def _contains(self, node) -> bool:
        return any(n is self.target for n in walk(node))

    def small(self, small, state):
        kind = type(small)
        if kind is cst.Break:
            self.exits[-1][1].append(state) if self.exits else None
            return None
        if kind is cst.Continue:
            self.exits[-1][0].append(state) if self.exits else None
            return None
        state = self.expr(small, state)
        if kind is cst.Return and self.returns is not None:
            self.returns.append(state)
        return None if kind in (cst.Return, cst.Raise) else state

    def loop_stmt(self, loop, state):
        """A loop: its head joins the entry (not for the target's loop, whose entry is ignored),
        the body's end and its ``continue``\\ s, to a fixed point."""
        own = loop is self.loop
        entry = self.expr(loop.iter, state) if type(loop) is cst.For else state
        per_item = type(loop) is cst.For and not is_range(loop.iter)  # ``next()`` of an iterator may launch
        head = IDLE if own else entry
        for _ in range(3):
            self.exits.append(([], []))
            first = self.before
            start = self.expr(loop.test, head) if type(loop) is cst.While else (PENDING if per_item and head is not None else head)
            end = self.suite(loop.body, start)
            continues, breaks = self.exits.pop()
            new = _join(end, *continues) if own else _join(entry, end, *continues)
            if own and new is None:
                new = PENDING  # nothing comes back round: the body runs once per entry
            if new == head:
                break
            head, self.before = new, first if own else self.before
        out = _join(start if type(loop) is cst.While else head, *breaks)
        if loop.orelse is not None:
            out = _join(self.suite(loop.orelse.body, head), *breaks)
        return None if own else out


def _waited(events: DeviceEvents, body: cst.CSTNode, anchor: cst.CSTNode) -> bool:
    """In the synchronize's own block, the next device event after it is a wait (the rest of its
    statement line, then the block's following simple statements; a compound one ends the search)."""
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) in SCOPES and node is not body:
            continue
        stmts = getattr(node, "body", None)
        if isinstance(stmts, (list, tuple)):
            for i, stmt in enumerate(stmts):
                if type(stmt) is cst.SimpleStatementLine and any(n is anchor for n in walk(stmt)):
                    return _next_is_wait(events, stmt, anchor, stmts[i + 1:])
        stack.extend(node.children)
    return False


def _next_is_wait(events: DeviceEvents, line, anchor, rest) -> bool:
    after = None  # the events of the line from the synchronize's own wait on
    for small in line.body:
        for event in events.of(small, anchor):
            if event == "target":
                after = 0
            elif after == 0:
                after = 1  # the synchronize's own wait
            elif after == 1:
                return event == "wait"
    for stmt in rest:
        if type(stmt) is not cst.SimpleStatementLine:
            return False
        for event in events.of(stmt):
            return event == "wait"
    return False
