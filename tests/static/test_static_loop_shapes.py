"""Per-token loops in shapes the local carry test does not see (issue 19 item 2): a loop whose
state goes round through ``self`` fields that the methods it calls store and read
(:mod:`graphlint.static.fieldcarry`), and a per-token loop inline in a function named for both
the prompt's pass and the decode (:meth:`graphlint.static.coldcode.ColdCode.both_phases`). One
fixture file per shape in ``fixtures/static/loopshape/``, each linked on its own; ``# expect:``
markers are its findings, ``GL123/severity`` their severity."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

from test_static_fixture import expected, markers

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "loopshape"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "field_carry.py": {("eager", "Engine.generate")},
    "prefill_and_generate.py": {("eager", "prefill_and_generate")},
}


def _check(monkeypatch, tmp_path, name: str):
    monkeypatch.chdir(ROOT)
    path = (FIXTURES / name).relative_to(ROOT).as_posix()
    return run(resolve(load_config(cwd=tmp_path), paths=[path], jobs=1, use_cache=False))


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_shape_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = _check(monkeypatch, tmp_path, name)
    found = {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"}
    files = {(FIXTURES / name).relative_to(ROOT).as_posix(): (FIXTURES / name).read_bytes()}
    assert found == expected(files)
    severities = {(f.path, f.line, f.rule): f.severity for f in result.findings}
    for path, line, code in markers(files):
        if "/" in code:
            rule, severity = code.split("/")
            assert severities[(path, line, rule)] == severity, (line, rule)
    assert {(e.context, e.function[1]) for e in result.entries} == ENTRIES[name]
