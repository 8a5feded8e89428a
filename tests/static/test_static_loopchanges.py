"""What each call inside loops sees change around it (:func:`graphlint.static.restaged._loop_changes`):
the names its loops bind or mutate, loops nested in any statement found, calls outside every loop
and inside nested scopes given nothing."""

from __future__ import annotations

import libcst as cst

from graphlint.static.restaged import _loop_changes

SOURCE = '''
def step(xs, n):
    before(xs)
    if n:
        try:
            with ctx():
                for x in xs:
                    a = f(x)
                    while n:
                        n -= 1
                        g(a)
                    def inner():
                        h(x)
                    rows.append(k(x))
        finally:
            after(n)
    match n:
        case 1:
            for y in xs:
                m(y)
'''


def _changed_by_callee() -> dict[str, set[str]]:
    defn = cst.parse_module(SOURCE).body[0]
    changed: dict[int, frozenset] = {}
    _loop_changes(defn.body, changed)
    calls = {}
    stack = [defn]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call and type(node.func) is cst.Name:
            calls[id(node)] = node.func.value
        stack.extend(node.children)
    return {calls[i]: set(names) for i, names in changed.items() if i in calls}


def test_calls_in_loops_see_their_loops_changes_and_no_other_call_is_given_any():
    assert _changed_by_callee() == {
        "f": {"x", "a", "rows", "n"},  # ``n -= 1`` in the inner loop changes it in the outer one too
        "k": {"x", "a", "rows", "n"},
        "g": {"x", "a", "rows", "n"},
        "m": {"y"},
    }
