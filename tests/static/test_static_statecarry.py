"""A state the per-token loop hands back from each call (branch ``statecarry``,
:func:`graphlint.static.iterations.carried_results`).

``out, state = model.forward(tokens, state)`` in the loop: from the loop's second call on, the
callee's ``if state == None:`` zero-state set-up does not run (once per request, as ``if i == 0:``),
so what it builds is not reported; a loop that also drops the state every token keeps it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from graphlint.static.iterations import RESULT, carried_results
from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "statecarry"


def test_a_state_handed_back_skips_the_callees_first_call_set_up(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "carried")
    assert_marked(result.findings, load(FIXTURES / "carried"))


def test_a_state_dropped_every_token_keeps_the_set_up(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "reset")
    assert_marked(result.findings, load(FIXTURES / "reset"))


def _loop(src: str):
    return cst.parse_module(src).body[0]


def test_only_a_name_every_binding_hands_back_is_carried():
    assert carried_results(_loop("for i in r:\n    while t:\n        out, s = f(t, s)\n        t = t[1:]\n")) == {"s": RESULT}
    assert carried_results(_loop("for i in r:\n    out, s = f(t, s)\n    s = None\n")) == {}
    assert carried_results(_loop("for i in r:\n    out, s = f(t, s)\n    for s in q:\n        pass\n")) == {}
    assert carried_results(_loop("for s in r:\n    out, s = f(t, s)\n")) == {}
    assert carried_results(_loop("for i in r:\n    out, s = f(t, x)\n")) == {}
