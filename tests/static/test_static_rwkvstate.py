"""A state the per-token loop hands back from each call (branch ``rwkvstate``, :mod:`graphlint.static.handback`).

``out, state = model.forward(tokens, state)`` in the loop, and a callee whose ``if state is None:``
block binds the state and whose every ``return`` hands it back at the unpacked position: from the
loop's second call on the set-up cannot run (a request's first call builds the state), so what only
it runs is not reported. A loop that drops the state every token keeps it, and so does a count
handed back that stays None until an end token is seen (the scan in its None branch runs every
token until then)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from graphlint.static.handback import carried_results, ends_in_exit, set_binding
from test_static_fixture import assert_marked, load
from static_helpers import check_fixture, summarize

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "rwkvstate"


def test_a_state_handed_back_skips_the_callees_set_up(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "zerostate")
    assert_marked(result.findings, load(FIXTURES / "zerostate"))


def test_a_state_dropped_every_token_keeps_the_set_up(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "reset")
    assert_marked(result.findings, load(FIXTURES / "reset"))


def test_a_count_that_stays_none_keeps_its_none_branch(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "delays")
    assert_marked(result.findings, load(FIXTURES / "delays"))


def _loop(src: str):
    stmt = cst.parse_module(src).body[0]
    return carried_results(stmt)


def test_only_a_name_the_loop_binds_once_from_the_call_it_passes_it_to_is_carried():
    found = _loop("for i in r:\n    while t:\n        out, s = f(t, s)\n        t = t[1:]\n")
    assert {k: v[:2] for k, v in found.items()} == {"s": ("hb", 1)}
    assert _loop("for i in r:\n    out, s = f(t, s)\n    s = None\n") == {}
    assert _loop("for i in r:\n    out, s = f(t, s)\n    for s in q:\n        pass\n") == {}
    assert _loop("for s in r:\n    out, s = f(t, s)\n") == {}
    assert _loop("for i in r:\n    out, s = f(t, x)\n") == {}
    assert _loop("for i in r:\n    out, s = f(t, s)\n    s, b = g(s)\n") == {}


def test_the_set_up_is_a_binding_under_a_none_test_of_the_parameter():
    stmt = cst.parse_statement("state = [None] * n\n").body[0]
    assert set_binding(stmt, (("eq", ("p", "state"), None),)) == "state"
    assert set_binding(stmt, (("not", ("not", ("is", ("p", "state"), None))),)) == "state"
    assert set_binding(stmt, (("is", ("p", "other"), None),)) is None
    assert set_binding(cst.parse_statement("state = None\n").body[0], (("is", ("p", "state"), None),)) is None


def test_a_body_that_never_falls_off_its_end():
    body = lambda src: cst.parse_module(src).body[0].body  # noqa: E731
    assert ends_in_exit(body("def f(x):\n    with g():\n        return x\n"))
    assert ends_in_exit(body("def f(x):\n    if x:\n        return 1\n    elif y:\n        return 2\n    else:\n        raise E\n"))
    assert not ends_in_exit(body("def f(x):\n    if x:\n        return 1\n"))


def test_hands_back_is_recorded_only_where_every_return_gives_the_parameter():
    files = {
        "m.py": "def a(x, s):\n    if s is None:\n        s = [0]\n    return x, s\n\n"
                "def b(x, s):\n    if x:\n        return x, s\n    return x, None\n\n"
                "def c(x, s):\n    s = None\n    return x, s\n\n"
                "def d(x, s):\n    return a(x, s)\n\n"
                "def e(x, s):\n    yield x\n    return x, s\n\n"
                "def g(x, s):\n    if (s := None) is None:\n        pass\n    return x, s\n",
    }
    info = summarize(files)[0].data
    facts = {q: fn.hands_back for q, fn in info.functions.items()}
    assert {p: items for p, items, _ in facts["a"]} == {"x": (("k", 0),), "s": (("k", 1),)}
    assert "s" not in {p for p, _, _ in facts["b"]} and "s" not in {p for p, _, _ in facts["c"]}
    assert {p: items for p, items, _ in facts["d"]}["s"] == (("via", ("n", "a"), 1),)
    assert facts["e"] == ()  # a generator's call returns no tuple
    assert "s" not in {p for p, _, _ in facts["g"]}  # a walrus rebinds it
