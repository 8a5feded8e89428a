"""An entry's option that every call of the analysed code leaves at None is None
(:mod:`graphlint.static.entryparams`): a sampler's guidance branch nobody asks for is no step's; one
that a caller passes stays."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "noneoptions"


def test_an_option_no_caller_passes_is_none(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "sampler.py")
    assert_marked(result, FIXTURES, "sampler.py")
