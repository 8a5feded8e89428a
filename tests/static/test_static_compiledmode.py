"""Branch ``compiledmode``: what a ``torch.compile`` region means for the code around it.

- A CUDA-graph compile made only under a configuration key read with an off default of its own
  (``if self.config.get("compile", False):``) that no code sets is not made by default
  (:func:`graphlint.static.compileswitch.eager_default`): the compiled callable is no replay, the
  loop around it an eager per-token loop and the block that calls it eager model code -- not a
  host step around a capture. Read with an on default, it is the capture it was.
- Inside a ``torch.compile`` region, ``torch.tensor`` of a Python constant (literals, a mask list
  built from literals and shapes, a setting's default, a configuration field) is lifted into the
  graph, made once (:mod:`graphlint.static.liftedconst`): no GL204. A per-step value passed in
  (a position, a parameter without a default) still is one, and so is any constant inside a graph
  recorded by hand with ``torch.cuda.graph``.
- The host step around a compiled call uploads each observation field with
  ``torch.from_numpy(...).to(self._torch_device)``: a field named as a device is one, as a local of
  that name is (:func:`graphlint.static.matchers.host_copy.device_field`); one named for the host
  (``self._cpu_device``) is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "compiledmode"


@pytest.mark.parametrize("name", ["offkey", "onkey", "lifted", "hoststep"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_compile_under_a_key_off_by_default_leaves_the_block_eager(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "offkey")
    rated = {(f.path.rpartition("/")[2], f.line, f.rule): f.severity for f in result.findings}
    assert rated[("model.py", 23, "GL101")] == "error"  # eager model code, every token
    assert rated[("engine.py", 15, "GL207")] == "error"  # an eager loop's growing ids


def test_a_key_read_with_an_off_default_is_a_field_switch():
    import libcst as cst

    from graphlint.static.compileswitch import field_off, field_switch, shown

    test = lambda src: field_switch(cst.parse_expression(src))  # noqa: E731
    assert shown(test('self.config.get("compile", False)')) == "compile"
    assert field_off(test('cfg.get("compile")'), lambda attr: [])
    assert not field_off(test('cfg.get("compile")'), lambda attr: [("c", True)])  # some code sets it on
    assert test('cfg.get("compile", True)') == "" and test('os.environ.get("COMPILE", "")') == ""


def test_only_per_step_data_or_a_recorded_graph_keeps_an_upload(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "lifted")
    lines = {f.line for f in result.findings if f.rule == "GL204"}
    assert lines == {38, 39, 51}  # the position, the offset, the recorded step's constant; not 29, 35-37
