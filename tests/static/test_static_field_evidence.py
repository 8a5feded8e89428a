"""What a loop needs to be per-token, and what a capture captures (issue 19 items 1-2): a layer
loop that picks its layer through a getter or a local is no per-token loop; a loop whose only
carry goes through ``self`` fields, beside a capture, is weak evidence (at most warnings); a
capture never captures the code that runs it (a graph runner kept in the field of the model it
wraps). One fixture file per shape in ``fixtures/static/fieldevidence/``, each linked on its own;
``# expect:`` markers are its findings, ``GL123/severity`` their severity."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

from test_static_fixture import expected, markers

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "fieldevidence"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "layer_getter.py": {("eager", "Stack.forward")},  # the hot-names guess only: no per-token loop
    "fields_beside_capture.py": {("graph", "Sampler.forward"), ("eager", "Engine.run")},
    "runner_in_model_field.py": {("graph", "Model.forward"), ("host", "SingleRunner.forward"),
                                 ("host", "GraphRunner.__call__"), ("host", "Agent.step"), ("eager", "Agent.step")},
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


def test_layer_getter_loop_is_guessed_not_a_token_loop(monkeypatch, tmp_path):
    result = _check(monkeypatch, tmp_path, "layer_getter.py")
    assert all(e.guessed for e in result.entries)


def test_field_only_loop_says_why_it_ranks_lower(monkeypatch, tmp_path):
    result = _check(monkeypatch, tmp_path, "fields_beside_capture.py")
    (loop,) = [e for e in result.entries if e.function[1] == "Engine.run"]
    assert "fields alone, beside a capture" in loop.reason
