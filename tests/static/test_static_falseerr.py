"""Branches and indices that are no per-token cost, each a mechanism with a fixture of its own
(branch ``falseerr``, the weakest sets' false errors).

- ``if eos in samples:`` / ``if (tokens == eos).any():`` that does not leave the loop runs on the
  step a row ends: its row bookkeeping is once per row (``stopchecks.finishes_rows``).
- Lazy initialisation may register its buffer (``register_buffer``, ``setattr(self, name, ...)``)
  instead of assigning it (``runonce.is_lazy_init``).
- A flag the loop clears at its own level on every iteration makes a branch on it first-iteration
  only, wherever the clearing is (``iterations.flag_loop``).
- A list of ``slice`` objects indexes as a tuple of slices, no list index (``TensorOracle.slices``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "falseerr"


@pytest.mark.parametrize("name", ["rowfinish.py", "rowfinishnamed.py", "lazybuffer.py", "clearedflag.py", "slicelist.py"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_the_end_test_itself_stays_and_the_finished_rows_bookkeeping_goes(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "rowfinish.py")
    lines = {f.line for f in result.findings}
    assert {30, 50} <= lines  # the membership and the reduction: the step's stop tests
    assert not lines & set(range(31, 37)) and not lines & {51, 52}  # the rows that ended, once each
    assert {54} <= lines  # an arm on a test of no end value runs per token


def test_a_finish_mask_built_into_names_keeps_its_test_and_drops_its_arm(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "rowfinishnamed.py")
    lines = {f.line for f in result.findings}
    assert {36, 52, 65} <= lines  # each loop's test of its mask reads the device
    assert not lines & {37, 38}  # the finished rows' bookkeeping, once per row
    assert {53, 66, 80} <= lines  # a mask kept across steps, of no end, not named for ending rows: per token


def test_a_mask_not_named_for_ending_rows_keeps_its_arm_inside_a_conjunction(monkeypatch, tmp_path):
    """``(again & valid).any()`` tests the redraw mask as ``again.any()`` does: its arm stays per token."""
    text = (FIXTURES / "rowfinishnamed.py").read_text()
    edited = text.replace("        if again.any():", "        if (again & (tokens >= 0)).any():")
    assert edited != text
    folder = tmp_path / "fixtures" / "static" / "falseerr"
    folder.mkdir(parents=True)
    (folder / "rowfinishnamed.py").write_text(edited)
    result = check_fixture(monkeypatch, tmp_path / "cfg", folder, "rowfinishnamed.py")
    assert 80 in {f.line for f in result.findings}  # the redrawn rows' read-back
