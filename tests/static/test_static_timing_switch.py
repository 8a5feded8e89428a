"""A switch whose branches read a clock is instrumentation: what its branches do is off the decode
path, while an unconditional sync and a read-back under a switch that times nothing stay findings
(:mod:`graphlint.static.timingswitch`)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "timingswitch"


def test_switched_timer_branches_are_not_findings(monkeypatch, tmp_path):
    name = "switched_timer.py"
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result, FIXTURES, name)
