"""What a per-token loop runs once and what it runs per token (issue 19 item 2; branch
``firstiter``). Code under a first-iteration guard runs once per decode, like the prompt's pass
before the loop: a position advanced to the loop's counter and tested against its first value
(``prev = 0; for cur in range(...): if prev == 0 and images: ...; prev = cur``), a flag the branch
clears (``if fresh and extra: ...; fresh = False``) -- and not when the loop can reset the value,
skip its advance or compare it with something else (:mod:`graphlint.static.iterations`). A ``for``
over a per-token generator's items runs its body once per token (:mod:`graphlint.static.genloops`),
and ``f.__get__(obj)`` binds ``f`` to ``obj`` as ``types.MethodType`` does. ``# expect:`` markers are
the findings."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture
from graphlint.static.iterations import flag_loop, loop_counter, stepped_counters

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "firstiter"

ENTRIES = {
    # not ``prompt_only``: its one model call runs on the first iteration only
    "prevpos": {("eager", "generate")},
    "flag": {("eager", "cleared_in_branch"), ("eager", "cleared_each_step"), ("eager", "by_index")},
    "resets": {("eager", "reset_in_loop"), ("eager", "compared_with_another"), ("eager", "skipped_advance"),
               ("eager", "flag_set_again")},
    # the generator's loop, the method passing its items on, the script's loop; not ``whole`` (it
    # yields once, after its loop) nor the loop over ``prompts()``'s list
    "genconsumer": {("eager", "Engine.generate"), ("eager", "Engine.stream"), ("eager", "main"),
                    ("eager", "Engine.whole")},
    "descriptor": {("eager", "generate")},
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))
    assert {(e.context, e.function[1]) for e in result.entries if not e.guessed} == ENTRIES[name]


def test_the_consumer_loops_say_which_generator_they_consume(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "genconsumer")
    reasons = {e.function[1]: e.reason for e in result.entries}
    assert reasons["main"] == "per-token loop over the tokens Engine.stream yields"
    assert reasons["Engine.stream"] == "per-token loop over the tokens Engine.generate yields"


def test_the_loops_model_step_is_one_it_runs_after_the_first_iteration(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "prevpos")
    (entry,) = result.entries
    assert entry.reason == "per-token loop calling Decoder.forward"  # not the images' ``Pictures.forward``


def _loop(code: str) -> cst.For:
    return next(s for s in cst.parse_module(code).body if isinstance(s, (cst.For, cst.While)))


ZERO = {"prev": ((("c", 0), ()),), "fresh": ((("c", True), ()),)}


@pytest.mark.parametrize("code, counted", [
    ("for cur in range(4, n):\n    f(prev)\n    prev = cur\n", True),
    ("for cur in range(4, n):\n    f(prev)\n    prev += 2\n", True),
    ("for cur in range(4, n):\n    f(prev)\n    prev = prev + 1\n", True),
    ("for cur in range(4, n):\n    f(prev)\n    prev = cur\n    if g():\n        prev = 0\n", False),  # reset
    ("for cur in range(4, n):\n    if g():\n        continue\n    prev = cur\n", False),  # advance skipped
    ("for cur in range(4, n):\n    f(prev)\n    if g():\n        prev = cur\n", False),  # under a branch
    ("for cur in range(4, n):\n    prev -= 1\n", False),
    ("for cur in range(4, n):\n    prev += 0\n", False),
    ("for cur in items:\n    prev = other\n", False),
])
def test_a_position_advanced_every_iteration_is_a_counter(code, counted):
    stmt = _loop(code)
    found = [c for c in stepped_counters(stmt, 7, ZERO, loop_counter(stmt, 7)) if c[1] == "prev"]
    assert (found == [(7, "prev", ("int", 0))]) is counted


@pytest.mark.parametrize("code, once", [
    ("while True:\n    if fresh and g():\n        h()\n        fresh = False\n", True),
    ("while True:\n    if fresh:\n        fresh = None\n", True),
    ("while True:\n    if fresh or g():\n        fresh = False\n", False),  # ``or``: taken again
    ("while True:\n    if fresh:\n        if g():\n            continue\n        fresh = False\n", False),
    ("while True:\n    if fresh:\n        h()\n    fresh = g()\n", False),  # set again, not cleared
    ("while True:\n    if fresh:\n        fresh = False\n    if g():\n        fresh = True\n", False),
])
def test_a_flag_the_branch_clears_guards_one_iteration(code, once):
    stmt = _loop(code)
    branch = next(n for n in stmt.body.body if isinstance(n, cst.If))
    assert (flag_loop(branch, stepped_counters(stmt, 3, ZERO)) == 3) is once
