"""How often a function binds each name (:func:`graphlint.static.oncebound.binding_counts`): every
kind of binding Python has is counted, nested functions and comprehensions included, and a rebinding
(``+=``, ``del``, ``global``) counts as more than one."""

from __future__ import annotations

import libcst as cst

from graphlint.static.oncebound import binding_counts

SOURCE = '''
def step(a, b=1, *args, c, **kw):
    width = 8
    (d, [e, *f]) = g = pair()
    h: int = 3
    total += 1
    for i, j in items():
        pass
    rows = [k for k in range(3) if (m := k)]
    with open(p) as n:
        pass
    try:
        pass
    except ValueError as o:
        pass
    import q.r
    import s as t
    from u import v, w as x
    del y
    global z
    nonlocal zz
    def inner(aa):
        bb = 1
    class Inner:
        cc = 2
    match thing:
        case [dd, *ee]:
            pass
        case {"k": ff, **gg}:
            pass
        case Point(x=hh) as ii:
            pass
    obj.attr = 1
    seq[0] = 2
'''


def _counts() -> dict[str, int]:
    defn = cst.parse_module(SOURCE).body[0]
    return dict(binding_counts(defn))


def test_every_kind_of_binding_counts_once():
    counts = _counts()
    once = ["step", "a", "b", "args", "c", "kw", "width", "d", "e", "f", "g", "h", "i", "j", "rows", "k", "m",
            "n", "o", "q", "t", "v", "x", "inner", "aa", "bb", "Inner", "cc", "dd", "ee", "ff", "gg", "hh", "ii"]
    assert {name: counts.get(name) for name in once} == dict.fromkeys(once, 1)


def test_rebindings_count_twice_and_stores_into_objects_bind_nothing():
    counts = _counts()
    assert {name: counts.get(name) for name in ("total", "y", "z", "zz")} == dict.fromkeys(("total", "y", "z", "zz"), 2)
    for name in ("obj", "seq", "attr", "w", "u", "r", "s", "thing", "Point", "pair", "items"):
        assert name not in counts, name
