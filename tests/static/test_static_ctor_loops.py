"""A decode loop whose model is an untyped constructor argument (issue 19 item 2, engine C's
shape): when nothing checked builds the engine, the loop is per-token by its shape -- a ``self``
field's callable called with the ids sampled the iteration before (:mod:`graphlint.static.sampledcarry`)
-- and its body's hazards are reported at full severity; when a script builds it with a model a
``load_model`` helper returns, the model's ``forward`` resolves and its layers are reached.
A script's per-token loop at module level is one too: its body's hazards are reported
(import-time code outside a loop never is). ``# expect:`` markers are the findings, ``GL123/severity`` their severity."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "ctorloop"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "untyped_model.py": {("eager", "Engine.generate"), ("eager", "Engine.stream")},
    "loaded": {("eager", "Engine.generate")},
    # a benchmark script's decode loop at module level, bare and under ``if __name__ == "__main__":``
    "script": {("eager", "<module>")},
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_shape_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    base = FIXTURES / name
    assert_marked(result.findings, load(base) if base.is_dir() else {base.relative_to(ROOT).as_posix(): base.read_bytes()})
    assert {(e.context, e.function[1]) for e in result.entries} == ENTRIES[name]
    assert not any(e.guessed for e in result.entries)


def test_the_shape_is_evidence_not_a_guess(monkeypatch, tmp_path):
    entries = check_fixture(monkeypatch, tmp_path, FIXTURES, "untyped_model.py").entries
    assert {e.function[1] for e in entries} == {"Engine.generate", "Engine.stream"}  # not Counter.run, Solver.solve
    assert all("fed the ids it sampled" in e.reason and not e.guessed for e in entries)
