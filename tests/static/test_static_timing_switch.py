"""A switch whose branches read a clock is instrumentation: what its branches do is off the decode
path, while an unconditional sync and a read-back under a switch that times nothing stay findings
(:mod:`graphlint.static.timingswitch`)."""

from __future__ import annotations

from pathlib import Path

from test_static_fixture import expected, markers
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "timingswitch"


def test_switched_timer_branches_are_not_findings(monkeypatch, tmp_path):
    name = "switched_timer.py"
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    found = {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"}
    files = {(FIXTURES / name).relative_to(ROOT).as_posix(): (FIXTURES / name).read_bytes()}
    assert found == expected(files)
    severities = {(f.path, f.line, f.rule): f.severity for f in result.findings}
    for path, line, code in markers(files):
        rule, severity = code.split("/")
        assert severities[(path, line, rule)] == severity, (line, rule)
