"""The points-to solver's sets (graphlint.static.pointsto): a node that holds one value shares one
1-tuple with every other such node, and grows into a set of its own; every value reaches every
successor and every watcher exactly once, whatever shape the node's values had when it moved."""

from __future__ import annotations

from graphlint.static.pointsto import Solver


def test_one_value_nodes_share_a_tuple_and_grow_apart():
    s = Solver()
    a, b, c, d = (s.node(("v", "m.py", "f", n)) for n in "abcd")
    seen: dict[int, list] = {c: [], d: []}
    s.watch(c, seen[c].extend)
    s.watch(d, seen[d].extend)
    s.add_values(a, [("k", "m.py", "A")])
    s.add_values(b, [("k", "m.py", "A")])
    assert s.pts[a] is s.pts[b] and type(s.pts[a]) is tuple
    s.edge(a, c)
    s.edge(b, d)
    s.run()
    s.add_values(d, [("k", "m.py", "B")])  # d grows: a set of its own; a and b keep the shared tuple
    s.edge(c, d)
    s.add_values(a, [("k", "m.py", "C")])
    s.run()
    assert type(s.pts[b]) is tuple and s.values(b) == [("k", "m.py", "A")]
    assert sorted(s.values(d)) == [("k", "m.py", n) for n in "ABC"]
    assert sorted(seen[d]) == sorted(s.values(d)) and len(seen[d]) == 3  # each value once
    assert sorted(seen[c]) == [("k", "m.py", "A"), ("k", "m.py", "C")]


def test_a_tuple_watcher_runs_as_its_function_with_its_arguments_then_the_values():
    """A watcher may be ``(function, *arguments)`` (one object instead of a partial of a bound
    method): it sees the values already there when installed and each new one once, as a
    callable watcher does, and beside one on the same node."""
    s = Solver()
    a = s.node(("v", "m.py", "f", "a"))
    s.add_values(a, [("k", "m.py", "A")])
    s.run()  # A passed on: a watcher installed now sees it once, when installed
    calls: list[tuple] = []
    plain: list = []

    def record(tag, n, values):
        calls.append((tag, n, list(values)))

    s.watch(a, (record, "x", 1))
    s.watch(a, plain.extend)
    s.run()
    s.add_values(a, [("k", "m.py", "B")])
    s.run()
    assert calls == [("x", 1, [("k", "m.py", "A")]), ("x", 1, [("k", "m.py", "B")])]
    assert plain == [("k", "m.py", "A"), ("k", "m.py", "B")]
