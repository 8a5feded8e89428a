"""The tenth set's recall gaps, each a mechanism with fixtures of its own (branch ``f10rest``).

- What a call handed a tensor returns is device data, not a host value derived from the position
  it is also given (:meth:`graphlint.static.hosttaint.HostTaint.gets_tensor`): ``out =
  model(ids, start_pos=pos)`` made ``out`` -- and the logits sliced from it -- a "position", host
  data, so a second read-back per token (``logits.sum().item()`` after the by-design
  ``int(argmax)``) was not reported at all.
- A field the host step loop advances from outside (``params.seqlen_offset += n``), declared by one
  class and never lowered, is a per-step int wherever it is read
  (:attr:`graphlint.static.fieldkinds.FieldKinds.advanced`): under capture, a cache written at
  ``params.seqlen_offset`` writes the captured slot on every replay (GL308). A count raised and
  lowered (``params.live -= 1``) is none. Also where no class resolves the receiver (``params =
  kwargs.get("params")``, fixture ``frozenkw``): the one class declaring the field is its owner.
- A transform of a weight alone in the forward (``F.normalize(self.lm_head.weight)``) recomputes a
  constant every step, every replay inside a capture: GL211 (``weight_arg`` of the call matchers);
  the same transform done once at load is silent.
- A capture routine a host step calls on a cache miss (``graph = Traced.trace(model, bs)``) runs once
  per graph: its static buffers, warm-up and syncs are no host step code
  (:meth:`graphlint.static.entries.Discovery.run`: the host context stops at a function that
  captures); the step's own staging stays a cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "f10rest"


@pytest.mark.parametrize("name", ["secondread", "frozenslot", "frozenkw", "weighthead", "tracesetup"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_second_read_after_the_steps_read_is_an_error(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "secondread")
    rated = {(f.path.rsplit("/", 1)[-1], f.line, f.rule): f.severity for f in result.findings}
    assert rated[("stream.py", 22, "GL104")] == "info"
    assert rated[("stream.py", 24, "GL101")] == "error"


def test_a_field_the_loop_advances_is_a_position_and_one_it_lowers_is_not(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "frozenslot")
    lines = {f.line for f in result.findings if f.rule == "GL308" and f.path.endswith("model.py")}
    assert lines == {13, 16}  # the write at the offset and the window up to it; not ``cache[:rows]`` (15)


def test_a_capture_routine_the_host_step_calls_is_set_up(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "tracesetup")
    rated = {(f.line, f.rule): f.severity for f in result.findings if f.path.endswith("graphs.py")}
    assert rated == {(26, "GL501"): "info", (50, "GL201"): "warning"}  # nothing from trace or static_inputs
