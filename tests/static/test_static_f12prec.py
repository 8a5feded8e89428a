"""The twelfth set's false findings, each a mechanism with fixtures of its own (branch ``f12prec``).

- A step loop around a captured step reads what the iteration carried over from the step at the
  top of the next iteration (``if (cur == end).any(): break``, ``while torch.max(left) > 0:``) and
  nowhere after its step: that read is the step's one read (:meth:`graphlint.static.stepresult.
  ResultReads.carried`), and a host step loop's batch stop test may be it (``HostReads.stop_checks``);
  a second read, a per-row read and a read of the loop's own counter stay syncs. In an eager loop a
  batch stop test stays a hazard (the issue names it), and nothing is carried to the loop's top.
- A sampler that reads thresholds back while computing the token and returns the token as a Python
  int: the return is the step's read, the thresholds are side reads
  (:func:`graphlint.static.sidereads.side_read`); a token read twice stays two reads.
- GL306 is not reported in an eager engine's host logic (``nxt[done] = pad`` between model steps):
  nothing captures it, the number is a fill kernel's argument; the model's own store of a Python
  position stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "f12prec"


@pytest.mark.parametrize("name", ["headstop", "eagerstop", "sideread", "maskstore"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_carried_stop_test_is_the_step_loops_one_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "headstop")
    rated = {(f.line, f.rule): f.severity for f in result.findings}
    assert rated[(25, "GL105")] == "info" and rated[(35, "GL105")] == "info"
    assert rated[(41, "GL105")] == "warning"  # per row
    assert rated[(49, "GL105")] == "warning"  # a second read of the token
    assert rated[(58, "GL105")] == "warning"  # the loop's own counter


def test_an_eager_batch_stop_test_stays_a_hazard(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "eagerstop")
    rated = {(f.line, f.rule): f.severity for f in result.findings}
    assert rated[(15, "GL105")] == "error" and rated[(27, "GL101")] == "error"


def test_a_samplers_threshold_reads_are_not_its_token_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "sideread")
    rated = {(f.line, f.rule): f.severity for f in result.findings}
    assert rated[(17, "GL103")] == "error" and rated[(21, "GL104")] == "info"
    assert rated[(25, "GL101")] == "info" and rated[(27, "GL104")] == "error"  # the token read twice


def test_a_masked_store_of_a_number_in_the_loops_own_code_is_no_hazard(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "maskstore")
    assert {(Path(f.path).name, f.line) for f in result.findings if f.rule == "GL306"} == {("model.py", 15)}
