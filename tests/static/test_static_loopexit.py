"""The thirteenth set's once-per-generation branches, each a mechanism with fixtures of its own
(branch ``loopexit``).

- A block that leaves its loop at its end (``break`` of that loop, ``return``, ``raise``) runs at
  most once per run of the loop: its findings are no per-token hazards
  (:mod:`graphlint.static.loopexits`); its test still runs every iteration. A ``break`` of an inner
  loop, a block that may ``continue``, a ``raise`` a handler in the loop swallows, a ``try`` whose
  ``finally`` continues, and a block that only defines a function that returns stay per token.
- ``b`` of ``if i == 0 and b:`` is evaluated on the loop's first iteration only (short-circuit);
  ``b and i == 0`` and ``i == 0 or b`` evaluate ``b`` every iteration.
- A host step loop (with an eager fallback) that sets a state object's flag field from the sampled
  ids (``idx = newly.nonzero(); state.done[idx] = True``) and stops on it: the stop test is the
  loop's one read, the ``nonzero`` an extra sync; after a read of the ids themselves the stop test is
  a second read."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "loopexit"


@pytest.mark.parametrize("name", ["exits", "firstand", "hoststop"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_block_that_leaves_the_loop_is_not_per_token(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "exits")
    lines = {f.line for f in result.findings}
    assert not lines & {24, 40, 41, 53, 64, 167}  # stop branch's column, stop test's body, return, raise, loop else
    assert {19, 39} <= lines  # the per-token growth and the stop test itself
    assert {92, 104, 119, 134, 150} <= lines  # inner break, continue, swallowed raise, finally, a nested def's return


def test_a_conjunction_after_a_first_iteration_test_runs_once(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "firstand")
    assert {(f.line, f.rule) for f in result.findings} == {(19, "GL105"), (21, "GL105")}


def test_a_stop_test_over_a_flag_field_is_the_host_loops_one_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "hoststop")
    rated = {(f.line, f.rule): f.severity for f in result.findings if f.path.endswith("runner.py")}
    assert rated[(51, "GL101")] == "info" and rated[(48, "GL302")] == "error"
    assert not {line for line, _ in rated} & {53, 56, 60}  # the stop branch and the early stop: once
    assert rated[(86, "GL102")] == "info" and rated[(89, "GL101")] == "error"  # a read of the ids first
