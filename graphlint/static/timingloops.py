"""Loops that time a step instead of decoding: what a benchmark loop is, read from the code.

A loop that feeds a call's output back (:mod:`.loops`) is a per-token loop only if the tokens it
makes go somewhere: a decode loop yields them, collects them (``out.append(tok)``), stores them
(``tokens[:, cur] = tok``, ``self.ids = ...``), hands them to a callback or a print, or returns
what it carried after the loop (``idx = torch.cat((idx, nxt), 1)`` then ``return idx``). A loop
in a function that reads a clock (``time.time()``, ``perf_counter()``, ``Event.elapsed_time``),
whose iterations emit nothing, and that either

- carries a product nothing reads after the loop (a throughput loop: ``for i in range(n): token =
  model(token, pos); token = argmax(token); torch.cuda.synchronize()``, then ``t1 = time.time()``), or
- runs a literal number of times with an unused index (``for i in range(10): sync(); t0 = time();
  emb, _, mask = embed(ids, media, mask); sync(); t1 = time()``: the same work ten times over),

measures the step: it is no decode loop, and what only it reaches is not the decode path. What a
clock reading computes (``t1 - t0``, ``times.append(t1 - t0)``, ``print(i, t1 - t0)``) is no
emission. A loop that emits anything else stays a decode loop, timed or not (a stream generator
that synchronizes and reads the clock around every step and yields the text), and so does one
whose branches or ``while`` test read what it made (a latency benchmark that decodes until the
end-of-text token: ``if ids[0][-1] == eos: terminate = True``).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import children, preorder
from graphlint.static.loopnames import bound_targets, names_read
from graphlint.static.names import resolve

CLOCKS = frozenset(("time.time", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
                    "time.monotonic_ns", "time.time_ns", "time.process_time", "timeit.default_timer"))
STORES = (cst.Assign, cst.AugAssign, cst.AnnAssign)


def reads_clock(node: cst.CSTNode, imports: dict[str, str]) -> bool:
    return any(type(n) is cst.Call and (resolve(n.func, imports) in CLOCKS or (
        type(n.func) is cst.Attribute and n.func.attr.value == "elapsed_time")) for n in preorder(node))


def timing_loop(stmt: cst.For | cst.While, scope: cst.CSTNode | None, imports: dict[str, str],
                product: set[str]) -> bool:
    """Whether ``stmt`` (a loop of the function whose body is ``scope``) measures a step rather than
    decoding; ``product``: the names its fed-back calls' output flows into (:meth:`.loops.LoopFrame.derived`)."""
    if scope is None or any(name.startswith("self.") for name in product) or not reads_clock(scope, imports):
        return False
    if _emits(stmt, imports):
        return False
    return not (product & _read_outside(scope, stmt)) or _repeats(stmt)


def _emits(stmt: cst.For | cst.While, imports: dict[str, str]) -> bool:
    """Whether an iteration hands something other than a clock reading out of the loop, or
    decides on what the loop made whether to go on (``if tok == eos: done = True`` with ``while
    not done``: a decode until the end of the text, timed or not)."""
    clock = _clock_names(stmt.body, imports)
    index = set(names_read(stmt.target)) if isinstance(stmt, cst.For) else set()
    quiet = clock | index
    made = {n for node in preorder(stmt.body) if type(node) in STORES
            for t in ([t.target for t in node.targets] if type(node) is cst.Assign else [node.target])
            for n in bound_targets(t)} - quiet
    if isinstance(stmt, cst.While) and names_read(stmt.test) & made:
        return True
    if any(type(node) is cst.If and names_read(node.test) & made for node in preorder(stmt.body)):
        return True

    def payload(node: cst.CSTNode | None) -> bool:
        return node is not None and bool(names_read(node) - quiet - _GLOBAL_NAMES)

    for node in preorder(stmt.body):
        kind = type(node)
        if kind in (cst.Yield, cst.Await) or (kind is cst.Return and node.value is not None):
            return True
        if kind in STORES:
            targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
            if any(type(t) in (cst.Subscript, cst.Attribute) for t in targets) and (
                    payload(node.value) or kind is cst.AugAssign):
                return True
        elif kind is cst.Expr and type(node.value) is cst.Call:
            call = node.value
            if any(payload(a.value) for a in call.args) or (
                    type(call.func) is cst.Attribute and call.func.attr.value.endswith("_")
                    and not call.func.attr.value.startswith("_")):
                return True  # ``print(decode(tok))``, ``streamer.put(tok)``, ``buf.copy_(x)``
    return False


#: names that are no payload wherever they appear (``torch.cuda.synchronize()``'s module)
_GLOBAL_NAMES = frozenset(("torch", "time", "np", "math", "print", "len", "range", "str", "int", "float"))


def _clock_names(body: cst.CSTNode, imports: dict[str, str]) -> set[str]:
    """Names the body binds from clock readings alone (``t0 = time.time()``, ``dt = t1 - t0``)."""
    clock: set[str] = set()
    assigns = [n for n in preorder(body) if type(n) in STORES and n.value is not None]
    for _ in range(3):
        for node in assigns:
            value = node.value
            if reads_clock(value, imports) or (names_read(value) and names_read(value) <= clock | _GLOBAL_NAMES):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                clock.update(n for t in targets for n in bound_targets(t))
    return clock


def _read_outside(scope: cst.CSTNode, loop: cst.CSTNode) -> set[str]:
    """The names read anywhere in ``scope`` outside ``loop`` (an assignment's plain targets are
    no reads; an augmented one is)."""
    stores: set[int] = set()
    found: set[str] = set()
    stack = [scope]
    while stack:
        node = stack.pop()
        if node is loop:
            continue
        kind = type(node)
        if kind is cst.Assign:
            for t in node.targets:
                stores.update(_target_ids(t.target))
        elif kind in (cst.AnnAssign, cst.For):
            stores.update(_target_ids(node.target))
        elif kind is cst.Name and id(node) not in stores:
            found.add(node.value)
        stack.extend(reversed(list(children(node))))
    return found


def _target_ids(target: cst.BaseExpression) -> set[int]:
    """The ``Name`` nodes a target binds outright (not a subscript's or attribute's base)."""
    if type(target) is cst.Name:
        return {id(target)}
    if type(target) in (cst.Tuple, cst.List):
        return {i for el in target.elements for i in _target_ids(el.value)}
    if type(target) is cst.StarredElement:
        return _target_ids(target.value)
    return set()


def _repeats(stmt: cst.For | cst.While) -> bool:
    """``for i in range(10):`` with ``i`` unread in the body: the same work a fixed number of times."""
    if not isinstance(stmt, cst.For) or type(stmt.target) is not cst.Name:
        return False
    it = stmt.iter
    if not (type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range"
            and len(it.args) == 1 and type(it.args[0].value) is cst.Integer):
        return False
    return stmt.target.value not in names_read(stmt.body)
