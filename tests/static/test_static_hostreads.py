"""The hot-code layer's evidence and ratings (branch ``hostreads``, issue 19 items 1-2).

- A host step's reads follow the data (:mod:`graphlint.static.hostreads`): only the read of what
  the replay produced is the step's result (``info``); the allocator's ``.item()``, a
  compactness ``nonzero`` and a metadata constructor's ``.max().item()`` are costs (warnings),
  before the replay or after it.
- A loop whose only "model" is a captured callable that runs no model -- a residual or sampling
  kernel captured on its own, called eagerly by a speculative tree's acceptance walk -- is no
  per-token loop (:meth:`graphlint.static.entries.Discovery.math_roots`); a loop calling a
  captured callable that runs the model still is.
- A capture nobody calls makes no hot code (:mod:`graphlint.static.uncalled`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "hostreads"


@pytest.mark.parametrize("name", ["bookkeeping", "acceptwalk", "uncalled", "library"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_reads_before_the_replay_are_costs_and_the_sampled_ids_the_result(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "bookkeeping")
    infos = {(f.path.rsplit("/", 1)[-1], f.line) for f in result.findings if f.severity == "info"}
    assert ("engine.py", 66) in infos  # ``append``'s ``.tolist()`` of the sampled ids
    assert not {("engine.py", line) for line in (23, 26, 28, 33, 51, 61)} & infos


def test_an_acceptance_walk_over_a_captured_kernel_is_no_per_token_loop(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "acceptwalk")
    loops = {e.function[1] for e in result.entries if e.context == "eager" and not e.guessed}
    assert loops == {"draft_loop"}  # not ``Tree.verify``: its loop calls ``residual``, no model


def test_a_capture_nothing_calls_ranks_below_the_called_ones(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "uncalled")
    assert not [f for f in result.findings if f.severity == "error"]
    assert all("nothing in the checked paths calls" in f.message for f in result.findings if f.severity == "warning")
    library = check_fixture(monkeypatch, tmp_path, FIXTURES, "library")
    assert [f.rule for f in library.findings if f.severity == "error"] == ["GL109"]  # no capture called: a library
