"""The eleventh set's recall gaps, each a mechanism with fixtures of its own (branch ``f11miss``).

- A callable handed to ``torch.compile`` before the loop is no call: the edge the call graph keeps
  for a callee reached both as a reference and as a call takes its first *call*'s order
  (:func:`graphlint.static.link._merge`). The host step's replay point was the compile statement,
  so a read of the loop's own device counter before the step was "after the replay" and rated
  the by-design read (info).
- A SCREAMING_SNAKE_CASE module constant bound to Python data is host data in the functions below
  it (:meth:`graphlint.static.hosttaint.HostTaint.is_module_constant`): ``torch.tensor(HIGH_TEMP,
  device=t.device, dtype=t.dtype)`` uploads it every token (GL204), as ``torch.tensor([0], ...)`` does.
- A module helper whose one statement returns arithmetic of its parameters keeps what it is given
  (:func:`graphlint.static.scalars.arith_helpers`): ``_round_up(counts.sum(-1).max(), 8)`` is a 0-dim
  device tensor, and a buffer it sizes reads it back (GL111); given ``ids.shape[1]`` it is a number.
- Boolean masks the oracle cannot type (:mod:`graphlint.static.masks`): an element-wise comparison
  bound to a name and used as a tensor's whole index (``m = ids == tok``; ``rows[m]``, ``x[m] = t``)
  with ``ids`` an untyped helper parameter, and a parameter named like a selector (``out_mask``)
  indexing a value not known to be host data (GL303).
- A list's current segment grown in place (``segments[-1] = torch.cat([segments[-1], tok])``): an
  integer key is one storage place as a string key is (:func:`graphlint.static.matchers.
  growing_concat.same_place`), GL207.
- A step compiled with CUDA graphs only under a compile switch off by default (``if use_compile:
  self._step = torch.compile(self._step, mode="max-autotune")``, :attr:`graphlint.static.facts.
  RegionDecl.opt_in`) that is a parameter of the step loop's own function: the default path runs it
  eagerly every token, so the allocations the capture would hide are reported there
  (:attr:`graphlint.static.contexts.Placement.optional`), less the buffers the step fills with its
  own data (:func:`graphlint.static.stepflow.mark_step_data`: a mask written where a local says, or
  rebuilt from itself by ``scatter``). A CLI entry's switch (``main(compile=False)`` compiling for a
  loop elsewhere) picks the run its operator measures, the captured one: nothing changes there."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "f11miss"


@pytest.mark.parametrize("name", ["compiledhost", "constupload", "scalarsize", "maskindex", "growseg", "optcompile"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_counter_read_before_a_compiled_step_is_no_result_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "compiledhost")
    rated = {(f.line, f.rule): f.severity for f in result.findings if f.path.endswith("engine.py")}
    assert rated[(25, "GL101")] == "warning"
    assert rated[(28, "GL102")] == "info"


def test_module_constants_uploaded_per_token(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "constupload")
    lines = {f.line for f in result.findings if f.rule == "GL204"}
    assert lines == {20, 21}  # not the step's own tensor (23) nor a module tensor constant (24)


def test_a_helper_rounding_a_device_count_keeps_it_on_the_device(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "scalarsize")
    assert {f.line for f in result.findings if f.rule == "GL111"} == {17}  # not the host width's (19)


def test_masks_from_untyped_comparisons_and_selector_parameters(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "maskindex")
    # not the masked fill of a number (18) nor a host test (19)
    assert {f.line for f in result.findings if f.rule == "GL303"} == {15, 17, 24}


def test_a_segment_grown_at_a_constant_index(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "growseg")
    assert {f.line for f in result.findings if f.rule == "GL207"} == {16}  # not the join into another slot (17)


def test_a_step_compiled_only_when_asked_runs_eagerly_by_default(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "optcompile")
    found = {(f.line, f.rule) for f in result.findings}
    assert found == {(15, "GL202")}  # not the mask rebuilt by scatter (12), nor Always's step (45)
