"""The fifteenth set's recall gaps, each a mechanism with fixtures of its own (branch ``f15recall``).

- A compile switched off by an option's default (:mod:`graphlint.static.compileswitch`):
  ``torch.compile(step, mode="reduce-overhead", disable=not cfg.use_graphs)`` and ``if
  cfg.compile_model: model = torch.compile(model)``, where a dataclass declares the field off and
  no analysed code turns it on, leave the default path eager: the step's stop test is a sync, the
  factories of what only the disabled compile would capture or fuse are per-token allocations. A
  switch on by default keeps the compile.
- A reduction given ``dim=`` / ``keepdim=`` is a tensor method whatever its receiver
  (:func:`graphlint.static.gathers.reduced_over_dim`): ``mask.sum(dim=1).max()`` of an untyped helper
  parameter is a 0-dim device tensor, its truth test and slice bound read it back; numpy's ``axis=``
  and a bare positional dimension decide nothing.
- Host data the uploads were not vouched for (:mod:`graphlint.static.listrows`,
  :func:`graphlint.static.matchers.call_args.is_python_data`): ``torch.tensor(float("-inf"),
  device=d)`` copies a constant like any literal (without a device it stays a CPU scalar operand),
  and the rows of a list given ``[]`` are Python lists, so ``torch.tensor(row, device=d)`` of one
  is a per-row upload; a list only given unknown slices stays unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import check_fixture
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "f15recall"


@pytest.mark.parametrize("name", ["offswitch", "offcompile", "dimreduce", "hostrows"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_step_disabled_by_default_is_no_replay(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "offswitch")
    rated = {(f.line, f.rule): (f.severity, f.message) for f in result.findings if f.path.endswith("engine.py")}
    assert rated[(28, "GL105")][0] == "error"  # the eager loop's stop test: a sync (no compile by default)
    assert rated[(46, "GL105")][0] == "info"  # the replaying loop's one read
    note = next(f.message for f in result.findings if f.path.endswith("model.py"))
    assert "captured" not in note  # branch compiledmode: the step compiled only under a field off by default is eager


def test_only_the_off_compile_leaves_its_model_eager(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "offcompile")
    assert {f.line for f in result.findings if f.path.endswith("model.py")} == {8}  # not shifted_fast's (13)


def test_a_dim_keyword_types_the_reduction(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "dimreduce")
    assert {f.line for f in result.findings if f.rule in ("GL105", "GL111")} == {13, 16}  # not numpy's (21) nor 27


def test_constant_and_row_uploads(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "hostrows")
    # not the CPU scalar (13) nor the rows of a list of unknown slices (36)
    assert {f.line for f in result.findings if f.rule == "GL204"} == {12, 27}
