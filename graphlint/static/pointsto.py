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
would follow the per-process hash seed), so the result never depends on the run.

A node holding more than :data:`CAP` values is *megamorphic*: it keeps what it has and takes
nothing more (containers' elements and module globals -- registries of model classes -- up to
:data:`WIDE_CAP`). A call through such a node has more targets than any reader could use, and
generic library code (torch's dynamo passes every ``VariableTracker`` through every helper) would
otherwise spread each value to tens of thousands of nodes; the engines measured never come near
(lightllm's largest node holds a few dozen). Values are cut in id order, so the result stays
the same in every run. A budget bounds the work on huge inputs: past it the solver stops and says
so (``exhausted``); the call graph is then what was found so far.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Hashable, Iterable

Value = tuple
CAP = 64
WIDE_CAP = 4096
Watcher = Callable[[Iterable[int]], None]


class Solver:
    def __init__(self, budget: int = 4_000_000):
        self.ids: dict[Hashable, int] = {}
        self.value_ids: dict[Value, int] = {}
        self.value_of: list[Value] = []  # value id -> the value
        self.pts: list[set[int]] = []
        self.succ: list[set[int] | None] = []
        self.watchers: list[list[Watcher] | None] = []
        self.full = bytearray()  # 1 for a node at its cap: it takes nothing more, so nothing is tried
        self.pending: dict[int, set[Value]] = {}
        self.queue: deque[int] = deque()
        self.budget = budget
        self.work = 0
        self.exhausted = False
        self.wide: set[int] = set()  # nodes allowed WIDE_CAP values
        self.saturated = 0  # nodes that reached their cap

    # -- nodes -----------------------------------------------------------------------------
    def node(self, key: Hashable) -> int:
        """The node named ``key`` (made on first use)."""
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = self.fresh()
            if key[0] == "el" or (key[0] == "v" and key[2] == "<module>") or (key[0] == "fd" and key[3] == "[]"):
                self.wide.add(found)
        return found

    def _cut(self, node: int, have: set[int], new) -> list[int]:
        room = (WIDE_CAP if node in self.wide else CAP) - len(have)
        if len(new) < room:
            return list(new)
        self.saturated += 1
        self.full[node] = 1
        return sorted(new)[:max(room, 0)]

    def fresh(self) -> int:
        """An anonymous node (an intermediate expression)."""
        self.pts.append(set())
        self.succ.append(None)
        self.watchers.append(None)
        self.full.append(0)
        return len(self.pts) - 1

    def values(self, node: int) -> list[Value]:
        return [self.value_of[v] for v in sorted(self.pts[node])]

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
        if self.full[node]:
            return
        have = self.pts[node]
        new = [v for v in values if v not in have]
        if len(have) + len(new) > CAP:
            new = self._cut(node, have, new)
        if not new:
            return
        have.update(new)
        pending = self.pending.get(node)
        if pending is None:
            self.pending[node] = set(new)
            self.queue.append(node)
        else:
            pending.update(new)

    def edge(self, src: int, dst: int) -> None:
        """``dst ⊇ src`` from now on."""
        if src == dst:
            return
        succ = self.succ[src]
        if succ is None:
            self.succ[src] = {dst}
        elif dst in succ:
            return
        else:
            succ.add(dst)
        if self.pts[src] and not self.full[dst]:
            self.add(dst, list(self.pts[src]))

    def watch(self, node: int, watcher: Watcher) -> None:
        """Run ``watcher`` on the node's values, now and whenever new ones arrive."""
        known = self.watchers[node]
        if known is None:
            self.watchers[node] = [watcher]
        else:
            known.append(watcher)
        if self.pts[node]:
            watcher([self.value_of[v] for v in self.pts[node]])

    # -- fixpoint ----------------------------------------------------------------------------
    def run(self) -> None:
        queue, pending, pts, full = self.queue, self.pending, self.pts, self.full
        while queue:
            if self.work > self.budget:
                self.exhausted = True
                queue.clear()
                pending.clear()
                return
            node = queue.popleft()
            delta = pending.pop(node, None)
            if not delta:
                continue
            self.work += len(delta)
            succ = self.succ[node]
            if succ:
                for dst in succ:
                    if full[dst]:
                        continue
                    have = pts[dst]
                    new = delta - have
                    if new and len(have) + len(new) > CAP:
                        new = set(self._cut(dst, have, new))
                    if new:
                        have |= new
                        waiting = pending.get(dst)
                        if waiting is None:
                            pending[dst] = set(new)
                            queue.append(dst)
                        else:
                            waiting |= new
            watchers = self.watchers[node]
            if watchers:
                value_of = self.value_of
                values = [value_of[v] for v in delta]
                for watcher in list(watchers):
                    watcher(values)
