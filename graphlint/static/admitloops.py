"""Loops that admit the element they take: its set-up, once per element, not every step.

``while pending and len(running) < cap: req = pending.popleft(); slot = torch.zeros(1, V);
counts = torch.cat([counts, slot])``: the loop's test reads a queue, and its body takes one element
from it (``q.popleft()``, ``q.pop()``, ``q.get_nowait()``, ``heapq.heappop(q)``, as a statement of
the body's own level) and never puts one back. Each iteration consumes one queued element and the
loop ends when the queue is empty (or the batch full), so what the body does -- a new request's
state slot, its penalty row, its prompt -- runs once per element: a continuous-batching engine's
admission, called from its per-token loop but costing nothing per token while no request arrives.
The mirror of :mod:`.retiring` (a request's clean-up as it leaves), handled the same way: its call
sites are sites of their own (``FunctionInfo.retire_loops``; what only they call and reaches no
model step is no part of a host step's round, :func:`.retiring.retired_only` -- the eager spread still
reaches it), and a candidate in its body carries ``per-element:<loop>`` and counts only
where that loop is itself a per-token or serving loop of its function (one that runs the model
step on each message it takes: :func:`.fixedcounters.off_the_step`). A loop that puts elements
back into the queue it takes from (a work list, a search frontier) is no admission; nor is one whose
own function builds the queue (``pending = deque(self.requests)``) or fills it again (``keep.append(req)``
in the loop, ``self.running = keep`` after it): every element comes round again on every call.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts
from graphlint.static.cstwalk import preorder, self_attr

TAKERS = frozenset(("popleft", "pop", "get", "get_nowait"))
PUTTERS = frozenset(("append", "appendleft", "extend", "extendleft", "insert", "put", "put_nowait", "add"))
FLAG = "per-element:"


def admits_element(stmt: cst.While, body: cst.CSTNode | None = None) -> bool:
    """See the module docstring: the test reads a queue the body's own level takes one element from,
    which neither the loop nor the rest of its function's ``body`` fills."""
    queues = {q for part in conjuncts(stmt.test) if (q := _tested_queue(part)) is not None}
    if not queues or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    taken = {q for line in stmt.body.body if isinstance(line, cst.SimpleStatementLine)
             for small in line.body if (q := _taken(small)) is not None} & queues
    return bool(taken) and not any(_puts(node, taken) for node in preorder(stmt.body)) \
        and not (body is not None and _refilled(body, stmt, taken))


def _refilled(body: cst.CSTNode, loop: cst.While, queues: set[str]) -> bool:
    """Outside ``loop``, ``body`` puts into one of ``queues``, binds it after the loop, or builds it
    before (a bare name or field bound before is an alias of a queue that outlives the call)."""
    inside = {id(node) for node in preorder(loop)}
    after = False
    for node in preorder(body):
        if node is loop:
            after = True
        if id(node) in inside:
            continue
        if _puts(node, queues):
            return True
        if type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign) and getattr(node, "value", None) is not None:
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
            alias = type(node) is not cst.AugAssign and type(node.value) in (cst.Name, cst.Attribute)
            if any(_key(t) in queues for t in targets) and (after or not alias):
                return True
    return False


def _key(node: cst.BaseExpression | None) -> str | None:
    """``pending`` / ``self.waiting``: a queue's spelling, else None."""
    if type(node) is cst.Name:
        return node.value
    return self_attr(node)


def _tested_queue(part: cst.BaseExpression) -> str | None:
    """``q`` / ``len(q) > 0`` / ``not q.empty()``: the queue a test's conjunct asks for elements."""
    if type(part) is cst.UnaryOperation and type(part.operator) is cst.Not:
        inner = part.expression
        if type(inner) is cst.Call and type(inner.func) is cst.Attribute and inner.func.attr.value == "empty":
            return _key(inner.func.value)
        return None
    if type(part) is cst.Comparison and len(part.comparisons) == 1:
        part = part.left
    if type(part) is cst.Call and type(part.func) is cst.Name and part.func.value == "len" and len(part.args) == 1:
        part = part.args[0].value
    return _key(part)


def _taken(small: cst.BaseSmallStatement) -> str | None:
    """``x = q.popleft()`` / ``x = heapq.heappop(q)``: the queue taken from."""
    if type(small) not in (cst.Assign, cst.AnnAssign) or type(small.value) is not cst.Call:
        return None
    call = small.value
    if type(call.func) is cst.Attribute and call.func.attr.value in TAKERS:
        return _key(call.func.value)
    name = call.func.attr.value if type(call.func) is cst.Attribute else getattr(call.func, "value", None)
    return _key(call.args[0].value) if name == "heappop" and call.args else None


def _puts(node: cst.CSTNode, queues: set[str]) -> bool:
    """``q.append(x)`` / ``heapq.heappush(q, x)`` into one of ``queues``."""
    if type(node) is not cst.Call:
        return False
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in PUTTERS and _key(func.value) in queues:
        return True
    name = func.attr.value if type(func) is cst.Attribute else getattr(func, "value", None)
    return name == "heappush" and bool(node.args) and _key(node.args[0].value) in queues
