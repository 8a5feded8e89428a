"""A device-wide synchronize with nothing pending, or one the next read waits for anyway.

The README's rule for a synchronize on the per-step path (``syncrule``): it costs nothing when no
device work was launched since the host last blocked on the device (a blocking read or another
synchronize), and nothing extra when a blocking read follows it with no launch between. This
module decides both for a function's own code, at the end of its walk, and flags the candidate:

- ``sync-idle:<loop>``: on every path that reaches the synchronize through the back edge of the
  innermost loop around it, the last device event is a wait. The loop's entry path is ignored:
  the linker trusts the flag only when that loop is a per-token (or step) loop of the function
  itself, whose first iteration is the prompt's, not a step (:meth:`.contexts.Placement.place`).
- ``sync-waited``: in its own block, the next device event after it is a wait.

A forward flow over the function's statements with two states, idle and pending (None where no
path runs). Waits are the function's own read-back candidates (the host-sync rules that block:
their matchers know a tensor from a host value) and the synchronizes themselves; a non-blocking
copy is none. Every call launches unless it is known host code: builtins, the clock, logging, a
tokenizer, a local list's or dict's own methods, a string literal's; an operator or a subscript
launches when the tensor facts say an operand is a tensor. A ``yield`` of values with no tensor
in them hands the consumer host data and launches nothing; an ``await`` launches. Anything the
flow does not model (``try``, ``match``, a ``with`` of a context manager that is not known host
code) leaves work pending: when in doubt the synchronize stays reported. The call graph is not
followed: a call of a project function between the read and the synchronize keeps it reported.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.facts import PROTOCOL_LOOP
from graphlint.static.names import dotted_name, resolve

#: the host-sync rules whose candidates block the host until the device is done (not GL107: a
#: stream's or an event's wait is not the device's; not GL109/GL110/GL113, whose anchors are calls
#: that may launch after reading)
WAIT_CODES = frozenset({"GL101", "GL102", "GL103", "GL104", "GL105", "GL106", "GL108", "GL111"})
HOST_BUILTINS = frozenset({
    "len", "print", "range", "isinstance", "issubclass", "str", "repr", "int", "float", "bool", "list", "tuple",
    "dict", "set", "frozenset", "enumerate", "zip", "sorted", "reversed", "hasattr", "id", "type", "format",
    "hash", "ord", "chr", "abs", "round", "exit", "quit"})
HOST_MODULES = ("time.", "logging.", "math.", "json.", "os.", "sys.", "warnings.")
#: context managers and calls of torch that launch nothing
HOST_TORCH = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.autocast",
                        "torch.cuda.amp.autocast", "contextlib.nullcontext"})
CONTAINER_METHODS = frozenset({"append", "extend", "insert", "get", "items", "keys", "values", "setdefault",
                               "update", "pop", "index", "count"})
STRING_METHODS = frozenset({"join", "format", "split", "strip", "startswith", "endswith", "replace", "lower",
                            "upper"})
LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
IDLE, PENDING = False, True


def mark_idle_syncs(raws: list, start: int, body: cst.CSTNode, oracle, imports: dict[str, str]) -> None:
    """Flag the function's synchronize candidates (rules with ``idle_sync``) that cost nothing."""
    targets = [i for i in range(start, len(raws)) if raws[i].rule.params.get("idle_sync")]
    if not targets:
        return
    waits = {id(r.anchor) for r in raws[start:] if r.rule.code in WAIT_CODES and not _non_blocking(r.anchor)}
    events = _Events(waits, oracle, imports, _containers(body))
    events.learn(body)
    for i in targets:
        raw = raws[i]
        flags = set()
        loops = _loops_around(body, raw.anchor)
        ids = [loop for loop in raw.loops if loop != PROTOCOL_LOOP]
        if loops and len(loops) == len(ids) and _Flow(events, raw.anchor, loops[-1]).idle():
            flags.add(f"sync-idle:{ids[-1]}")
        if _waited(events, body, raw.anchor):
            flags.add("sync-waited")
        if flags:
            raw.flags = raw.flags | flags


def _non_blocking(anchor: cst.CSTNode) -> bool:
    return type(anchor) is cst.Call and any(a.keyword is not None and a.keyword.value == "non_blocking"
                                            for a in anchor.args)


def _containers(body: cst.CSTNode) -> frozenset[str]:
    """Local names every binding of which in the function is a list or dict display (or ``list()``,
    ``dict()``): their methods are the container's, host code."""
    kinds: dict[str, bool] = {}
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) in SCOPES:
            continue
        if type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.WithItem):
            value = getattr(node, "value", None)
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else \
                [getattr(node, "target", None) or getattr(node, "asname", None)]
            for target in targets:
                if type(target) is cst.Name:
                    kinds[target.value] = kinds.get(target.value, True) and type(node) in (cst.Assign, cst.AnnAssign) \
                        and _display(value)
                elif target is not None:
                    for name in _names(target):
                        kinds[name] = False
        stack.extend(node.children)
    return frozenset(name for name, ok in kinds.items() if ok)


def _display(value) -> bool:
    if type(value) in (cst.List, cst.Dict, cst.ListComp, cst.DictComp):
        return True
    return type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in ("list", "dict")


def _names(node: cst.CSTNode) -> list[str]:
    out, stack = [], [node]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name:
            out.append(node.value)
        stack.extend(node.children)
    return out


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


class _Events:
    """The device events an expression makes, in evaluation order: "wait", "launch" or the target."""

    def __init__(self, waits: set[int], oracle, imports: dict[str, str], containers: frozenset[str]):
        self.waits, self.oracle, self.imports, self.containers = waits, oracle, imports, containers
        self.suspects: set[str] = set()

    def of(self, node: cst.CSTNode | None, target: cst.CSTNode | None = None):
        if node is None:
            return
        stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
        while stack:
            current, done = stack.pop()
            if type(current) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if not done:
                stack.append((current, True))
                stack.extend((child, False) for child in reversed(current.children))
                continue
            if current is target:
                yield "target"
                yield "wait"
            elif id(current) in self.waits:
                yield "wait"
            elif type(current) is cst.Call:
                if not self.host_call(current):
                    yield "launch"
            elif type(current) in (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.Subscript):
                if any(self.tensor(c) for c in current.children if isinstance(c, cst.BaseExpression)) or \
                        any(self.tensor(e) for e in getattr(current, "comparisons", getattr(current, "slice", ()))):
                    yield "launch"
            elif type(current) is cst.Await:
                yield "launch"
            elif type(current) is cst.Yield:
                if current.value is not None and self.tensor(current.value):
                    yield "launch"  # the consumer gets device data
            elif type(current) is cst.AugAssign:
                if self.tensor(current.target) or self.tensor(current.value):
                    yield "launch"
            elif type(current) is cst.AssignTarget and type(current.target) is cst.Subscript:
                if self.tensor(current.target.value):
                    yield "launch"  # a copy into a device buffer

    def tensor(self, node: cst.CSTNode) -> bool:
        """The value may live on the device: the tensor facts say so, or it derives from a call
        that is neither a read nor host code (a model's output, a torch factory), or from a name
        some binding in the function gives such a value (:meth:`learn`)."""
        kind = type(node)
        if id(node) in self.waits:
            return False  # a read's value is the host's
        if kind in (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString,
                    cst.Imaginary, cst.Ellipsis):
            return False
        if kind is cst.Name:
            return node.value in self.suspects or self._oracle(node)
        if kind is cst.Call:
            return not self.host_call(node) or type(node.func) is cst.Name and node.func.value in ("list", "tuple") \
                and any(self.tensor(a.value) for a in node.args)
        if kind is cst.Attribute:
            if node.attr.value in ("shape", "dtype", "device", "ndim", "is_cuda"):
                return False
            return self._oracle(node) or self.tensor(node.value)
        if kind in (cst.Subscript, cst.UnaryOperation, cst.BinaryOperation, cst.Comparison, cst.BooleanOperation,
                    cst.Tuple, cst.List, cst.Set, cst.Dict, cst.IfExp, cst.Element, cst.StarredElement,
                    cst.DictElement, cst.StarredDictElement, cst.SubscriptElement, cst.Index, cst.Slice,
                    cst.ComparisonTarget, cst.FormattedStringExpression):
            return any(self.tensor(c) for c in node.children if isinstance(c, cst.BaseExpression) or type(c) in (
                cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement, cst.SubscriptElement,
                cst.Index, cst.Slice, cst.ComparisonTarget, cst.FormattedStringExpression))
        return True  # not modelled (a comprehension, a lambda, an await): the device's, to be safe

    def _oracle(self, node: cst.CSTNode) -> bool:
        try:
            return self.oracle.is_tensor(node)
        except Exception:  # an expression the tensor facts do not model: a tensor, to be safe
            return True

    def learn(self, body: cst.CSTNode) -> None:
        """The names some binding in the function gives a value that may live on the device."""
        bindings = []
        stack = [body]
        while stack:
            node = stack.pop()
            if type(node) in SCOPES and node is not body:
                continue
            kind = type(node)
            if kind is cst.Assign:
                bindings.extend((t.target, node.value) for t in node.targets)
            elif kind in (cst.AnnAssign, cst.AugAssign) and node.value is not None:
                bindings.append((node.target, node.value))
            elif kind is cst.NamedExpr:
                bindings.append((node.target, node.value))
            elif kind is cst.For:
                bindings.append((node.target, node.iter if not _range(node.iter) else cst.Integer("0")))
            elif kind is cst.WithItem and node.asname is not None:
                bindings.append((node.asname.name, node.item))
            elif kind in (cst.CompFor,):
                bindings.append((node.target, node.iter))
            stack.extend(node.children)
        changed = True
        while changed:
            changed = False
            for target, value in bindings:
                names = [n for n in _names(target) if n not in self.suspects]
                if names and self.tensor(value):
                    self.suspects.update(names)
                    changed = True

    def host_call(self, call: cst.Call) -> bool:
        func = call.func
        if type(func) is cst.Name:
            return func.value in HOST_BUILTINS
        name = resolve(func, self.imports) or ""
        if name in HOST_TORCH or name.startswith(HOST_MODULES):
            return True
        if type(func) is not cst.Attribute:
            return False
        method, receiver = func.attr.value, func.value
        if type(receiver) in (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString):
            return method in STRING_METHODS
        spelled = (dotted_name(receiver) or "").lower()
        if spelled.rsplit(".", 1)[-1].endswith("tokenizer"):
            return True  # a tokenizer's methods work on host ids and strings
        if spelled.rsplit(".", 1)[-1] in ("logger", "logging", "log") and method in LOG_METHODS:
            return True
        return type(receiver) is cst.Name and receiver.value in self.containers and method in CONTAINER_METHODS


def _join(*states):
    live = [s for s in states if s is not None]
    return any(live) if live else None


class _Flow:
    """Idle or pending before ``target``, walking the function with ``loop``'s entry ignored."""

    def __init__(self, events: _Events, target: cst.CSTNode, loop: cst.CSTNode):
        self.events, self.target, self.loop = events, target, loop
        self.before: bool | None = None
        self.exits: list[tuple[list, list]] = []  # per loop walked: (continue states, break states)

    def idle(self) -> bool:
        """The synchronize runs with nothing pending on every path through the loop's back edge."""
        return self._idle(self.loop)

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
            body = self.suite(stmt.body, test)
            other = test if stmt.orelse is None else (
                self.stmt(stmt.orelse, test) if type(stmt.orelse) is cst.If else self.suite(stmt.orelse.body, test))
            return _join(body, other)
        if kind in LOOPS:
            return self.loop_stmt(stmt, state)
        if kind is cst.With:
            for item in stmt.items:
                state = self.expr(item.item, state)
            state = self.suite(stmt.body, state)
            host = all(type(i.item) is cst.Call and self.events.host_call(i.item) for i in stmt.items)
            return state if host or state is None else PENDING  # a context manager's exit may launch
        if kind in (cst.FunctionDef, cst.ClassDef):
            return state
        for _ in self.events.of(stmt, self.target):  # try, match: not modelled
            pass
        self.before = PENDING if self._contains(stmt) else self.before
        return PENDING

    def _contains(self, node) -> bool:
        return any(n is self.target for n in _walk(node))

    def small(self, small, state):
        kind = type(small)
        if kind is cst.Break:
            self.exits[-1][1].append(state) if self.exits else None
            return None
        if kind is cst.Continue:
            self.exits[-1][0].append(state) if self.exits else None
            return None
        state = self.expr(small, state)
        return None if kind in (cst.Return, cst.Raise) else state

    def loop_stmt(self, loop, state):
        """A loop: its head joins the entry (not for the target's loop, whose entry is ignored),
        the body's end and its ``continue``\\ s, to a fixed point."""
        own = loop is self.loop
        entry = self.expr(loop.iter, state) if type(loop) is cst.For else state
        per_item = type(loop) is cst.For and not _range(loop.iter)  # ``next()`` of an iterator may launch
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


def _range(node) -> bool:
    return type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "range"


def _walk(node):
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _waited(events: _Events, body: cst.CSTNode, anchor: cst.CSTNode) -> bool:
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
                if type(stmt) is cst.SimpleStatementLine and any(n is anchor for n in _walk(stmt)):
                    return _next_is_wait(events, stmt, anchor, stmts[i + 1:])
        stack.extend(node.children)
    return False


def _next_is_wait(events: _Events, line, anchor, rest) -> bool:
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


IDLE_NOTE = (" (nothing pending: on every way round the per-token loop the host's last device event before it is"
             " a blocking read or synchronize, so the device is idle; by the README's synchronize rule it costs nothing)")
WAITED_NOTE = (" (the next device event after it is a blocking read, which waits for the same work:"
               " it costs nothing extra)")


def idle_placed(placed: tuple, fid, cand, loop_bodies: dict, chains: dict) -> tuple:
    """``info`` for a synchronize flagged by :func:`mark_idle_syncs` that costs nothing: waited
    for anyway, or idle through the back edge of a per-token or step loop of its own function
    that no other hot function reaches it through (a loop run once per outer step has its entry
    on the step's path); never in captured code, where any synchronize breaks the capture."""
    flags = cand.flags
    if cand.in_capture or fid in chains.get("graph", ()):
        return placed
    if "sync-waited" in flags:
        return placed[0], "info", WAITED_NOTE
    loops = {int(f[10:]) for f in flags if f.startswith("sync-idle:")}
    own = set().union(*(loop_bodies[c].get(fid, ()) for c in ("eager", "host")))
    if loops and loops <= own and not any(fid in chains[c] and chains[c][fid] != (fid,) for c in chains):
        return placed[0], "info", IDLE_NOTE
    return placed
