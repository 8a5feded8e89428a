"""A synchronize with nothing pending, or one the next read waits for anyway, is ``info``
(:mod:`graphlint.static.syncpending`, the README's synchronize rule); its twins stay reported."""

from pathlib import Path

import pytest

from test_static_fixture import assert_marker_severities, expected
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "syncpending"


@pytest.mark.parametrize("name", ["timed_stream.py", "pending_tail.py", "waited.py"])
def test_each_synchronize_has_the_severity_its_marker_says(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    files = {(FIXTURES / name).relative_to(ROOT).as_posix(): (FIXTURES / name).read_bytes()}
    assert {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"} == expected(files)
    assert_marker_severities(result.findings, files)
