"""The points-to solver: sets of abstract values per node, propagated to a fixpoint.

Flow-insensitive and inclusion-based (Andersen-style, as PyCG is): a *node* is anything that holds
values -- a variable of a scope, a return value, an instance field per class, a class attribute,
a container's elements, an intermediate expression -- and its set only grows. Constraints are
either plain copy edges (``dst ⊇ src``) or *watchers*: a function run on every value that newly
reaches a node, which may add values and install further edges (an attribute load learns which
class it reads from only when an instance reaches its object). Propagation is by difference: a
node's watchers and successors see each new value once, so the cost is proportional to the edges
times the values that cross them, not to the number of rounds.

Values are small tuples (see :mod:`.objects`), interned as ints in order of first use: sets of
ints are compact and fast, and iterate in the same order in every process (tuples of strings
would follow the per-process hash seed), so the result never depends on the run. Most nodes never
hold a value (a load from something that turns out to be a tensor): a node's set, its successors
and its watchers exist only once it has some.

A node holding more than :data:`CAP` values is *megamorphic*: it keeps what it has and takes
nothing more (a variable bound to a container's elements -- ``for p in processors`` -- up to
:data:`ELEMENT_CAP`; containers' elements and module globals -- registries of model classes -- up
to :data:`WIDE_CAP`; instance fields, a constructor's expressions and what ``self.x`` loads -- the
model classes a factory hands one constructor, ``self.model = model_class(...)``, and the forwards
read back from it -- up to :data:`ELEMENT_CAP`). A call through such a node has more targets than any reader could use, and
generic library code (torch's dynamo passes every ``VariableTracker`` through every helper) would
otherwise spread each value to tens of thousands of nodes; the engines measured never come near
(transformers' logits-processor loop holds 33, lightllm's largest node a few dozen). Values are
cut in id order, so the result stays the same in every run. A budget bounds the work on huge
inputs: past it the solver stops and says so (``exhausted``); the call graph is then what was
found so far.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from typing import Callable, Hashable, Iterable

Value = tuple
CAP = 16
ELEMENT_CAP = 64
WIDE_CAP = 4096
#: run on a node's new values: a callable, or a tuple ``(function, *arguments)`` run as
#: ``function(*arguments, values)`` -- one object where ``functools.partial`` of a bound method is
#: three (the partial, its arguments, the bound method): on all of torch some 600,000 watchers,
#: about 90 MB of the link's peak
Watcher = Callable[[Iterable[int]], None] | tuple
EMPTY: frozenset[int] = frozenset()


class Solver:
    def __init__(self, budget: int = 20_000_000):
        self.ids: dict[Hashable, int] = {}
        self.value_ids: dict[Value, int] = {}
        self.value_of: list[Value] = []  # value id -> the value
        self.count = 0  # nodes made
        #: only nodes that hold something; one value is a 1-tuple shared by every node that holds
        #: just it (most nodes: a set each was a fifth of the solve's memory; a frozenset each of the
        #: 150,000 values that reach a node alone on torch, 35 MB), copied into a set on growth
        self.pts: dict[int, set[int] | tuple[int]] = {}
        self.single: dict[int, tuple[int]] = {}
        self.succ: dict[int, int | set[int]] = {}
        self.watchers: dict[int, Watcher | list[Watcher]] = {}
        self.caps: dict[int, int] = {}  # nodes allowed WIDE_CAP
        #: one byte per node, 1 where the node may hold up to ELEMENT_CAP: every field and every
        #: ``self.x`` load is one, and a dict entry each was 60 MB of the link's peak on torch
        self.element_nodes = bytearray()
        #: ranges of node ids allowed ELEMENT_CAP: the expressions of constructors (:meth:`widen`)
        self.wide: list[tuple[int, int]] = []
        #: per capturing function, the names its captured calls are made through: the model a factory
        #: picked reaches it as a parameter (``trace(model, ...)``), and what the capture runs must not
        #: be cut at 16. Only those (and the callee expressions, :meth:`.CallGraph._compile_queries`)
        #: hold up to ELEMENT_CAP: every name of the function widened let a generic helper's many values
        #: through (whole torch: dynamo's dispatch reached flex attention from a benchmarking capture)
        self.capture_roots: dict[tuple[str, str], frozenset[str]] = {}
        self.full: set[int] = set()  # nodes at their cap: they take nothing more, so nothing is tried
        #: values a node has not yet passed on; its shared one-value tuple until it grows (most
        #: nodes get one value while compiling: a set each was a tenth of the link's peak memory)
        self.pending: dict[int, set[int] | tuple[int]] = {}
        self.queue: deque[int] = deque()
        self.budget = budget
        self.work = 0
        self.exhausted = False

    # -- nodes -----------------------------------------------------------------------------
    def node(self, key: Hashable) -> int:
        """The node named ``key`` (made on first use)."""
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = self.fresh()
            if key[0] == "el" or (key[0] == "v" and key[2] == "<module>") or (key[0] == "fd" and key[3] == "[]"):
                self.caps[found] = WIDE_CAP
            elif key[0] == "fd" or (key[0] == "v" and (key[2].endswith("__init__") or key[3] in self.capture_roots.get(
                    (key[1], key[2]), ()))):
                self.elementwise(found)  # a factory's model classes, built and kept as parts, and captured
        return found

    def fresh(self) -> int:
        """An anonymous node (an intermediate expression)."""
        self.count += 1
        return self.count - 1

    def elementwise(self, node: int | None) -> None:
        """``node`` holds a container's elements (``for p in processors``): up to :data:`ELEMENT_CAP`."""
        if node is not None:
            marks = self.element_nodes
            if node >= len(marks):
                marks.extend(bytes(max(node + 1 - len(marks), len(marks))))
            marks[node] = 1

    def widen(self, start: int) -> None:
        """The nodes made since ``start`` (a constructor's expressions: ``self.model =
        model_class(...).eval()``) may hold up to :data:`ELEMENT_CAP`: a factory hands one
        constructor every model class of a project, and the one it builds must not be cut at 16."""
        if self.count > start:
            self.wide.append((start, self.count))

    def cap(self, node: int) -> int:
        found = self.caps.get(node)
        if found is not None:
            return found
        if node < len(self.element_nodes) and self.element_nodes[node]:
            return ELEMENT_CAP
        i = bisect_right(self.wide, (node, 1 << 62)) - 1
        return ELEMENT_CAP if i >= 0 and self.wide[i][0] <= node < self.wide[i][1] else CAP

    def _cut(self, node: int, have: set[int], new) -> list[int]:
        room = self.cap(node) - len(have)
        if len(new) < room:
            return list(new)
        self.full.add(node)
        return sorted(new)[:max(room, 0)]

    def values(self, node: int) -> list[Value]:
        return [self.value_of[v] for v in sorted(self.pts.get(node, EMPTY))]

    def vid(self, value: Value) -> int:
        found = self.value_ids.get(value)
        if found is None:
            found = self.value_ids[value] = len(self.value_of)
            self.value_of.append(value)
        return found

    # -- constraints -------------------------------------------------------------------------
    def add_values(self, node: int, values: Iterable[Value]) -> None:
        self.add(node, [self.vid(v) for v in values])

    def add(self, node: int, values: Iterable[int]) -> None:
        if node in self.full:
            return
        have = self.pts.get(node, EMPTY)
        new = [v for v in values if v not in have]
        if len(have) + len(new) > CAP:
            new = self._cut(node, have, new)
        if not new:
            return
        self._grow(node, have, new)
        pending = self.pending.get(node)
        if pending is None:  # a node's first value: its shared one-value set stands for the delta too
            self.pending[node] = self.pts[node] if not have and len(new) == 1 else set(new)
            self.queue.append(node)
        elif type(pending) is set:
            pending.update(new)
        else:
            grown = self.pending[node] = set(pending)
            grown.update(new)

    def _grow(self, node: int, have, new) -> None:
        """``have`` (the node's values) plus ``new``, none of them in it."""
        if not have and len(new) == 1:
            (v,) = new
            single = self.single.get(v)
            if single is None:
                single = self.single[v] = (v,)
            self.pts[node] = single
        elif type(have) is set:
            have.update(new)
        else:
            grown = self.pts[node] = set(have)
            grown.update(new)

    def edge(self, src: int, dst: int) -> None:
        """``dst ⊇ src`` from now on."""
        if src == dst:
            return
        succ = self.succ.get(src)  # one successor is an int (most nodes have one), more a set
        if succ is None:
            self.succ[src] = dst
        elif type(succ) is int:
            if succ == dst:
                return
            self.succ[src] = {succ, dst}
        elif dst in succ:
            return
        else:
            succ.add(dst)
        have = self.pts.get(src)
        if have and dst not in self.full:
            self.add(dst, list(have))

    def watch(self, node: int, watcher: Watcher) -> None:
        """Run ``watcher`` on the node's values, now and whenever new ones arrive."""
        known = self.watchers.get(node)  # one watcher is itself (most nodes have one), more a list
        if known is None:
            self.watchers[node] = watcher
        elif type(known) is list:
            known.append(watcher)
        else:
            self.watchers[node] = [known, watcher]
        have = self.pts.get(node)
        if have:
            values = [self.value_of[v] for v in have]
            if type(watcher) is tuple:
                watcher[0](*watcher[1:], values)
            else:
                watcher(values)

    def done(self) -> None:
        """The solve is over: drop the watchers (closures and tuples over the analysis, which would otherwise
        keep it alive in reference cycles until the cyclic collector found them) and the edges."""
        self.watchers = {}
        self.succ = {}
        self.single = {}
        self.pending.clear()

    # -- fixpoint ----------------------------------------------------------------------------
    def run(self) -> None:
        queue, pending, pts, full, succs, watching = \
            self.queue, self.pending, self.pts, self.full, self.succ, self.watchers
        work, budget, popleft, push = self.work, self.budget, queue.popleft, queue.append
        while queue:
            if work > budget:
                self.exhausted = True
                queue.clear()
                pending.clear()
                break
            node = popleft()
            delta = pending.pop(node, None)
            if not delta:
                continue
            work += len(delta)
            succ = succs.get(node)
            if succ is not None:
                for dst in (succ,) if type(succ) is int else succ:
                    if dst in full:
                        continue
                    have = pts.get(dst)
                    if have is None:
                        new = set(delta)
                        if len(new) > CAP and len(new) > self.cap(dst):
                            new.clear()
                            new.update(self._cut(dst, new, delta))
                        if len(new) == 1:
                            self._grow(dst, EMPTY, new)
                            pending[dst] = pts[dst]
                        else:
                            pts[dst] = new
                            pending[dst] = set(new)
                        push(dst)
                        continue
                    if type(delta) is tuple:  # a node's first value, alone
                        if delta[0] in have:
                            continue
                        new = set(delta)
                    else:  # (a set against a set: the same order of elements as ever)
                        new = delta - (set(have) if type(have) is tuple else have)
                        if not new:
                            continue
                    size = len(have) + len(new)
                    if size > CAP and size > self.cap(dst):
                        new = set(self._cut(dst, have, new))
                        if not new:
                            continue
                    if type(have) is not set:
                        have = pts[dst] = set(have)
                    have |= new
                    waiting = pending.get(dst)
                    if waiting is not None:
                        if type(waiting) is set:
                            waiting |= new
                        else:
                            pending[dst] = set(waiting) | new
                    else:
                        pending[dst] = new
                        push(dst)
            watchers = watching.get(node)
            if watchers:
                value_of = self.value_of
                values = [value_of[v] for v in delta]
                self.work = work
                for watcher in list(watchers) if type(watchers) is list else (watchers,):
                    if type(watcher) is tuple:
                        watcher[0](*watcher[1:], values)
                    else:
                        watcher(values)
                queue, work = self.queue, self.work
        self.work = work
