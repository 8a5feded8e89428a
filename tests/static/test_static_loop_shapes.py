"""Per-token loops in shapes the local carry test does not see (issue 19 item 2): a loop whose
state goes round through ``self`` fields that the methods it calls store and read
(:mod:`graphlint.static.fieldcarry`), and a per-token loop inline in a function named for both
the prompt's pass and the decode (:meth:`graphlint.static.coldcode.ColdCode.both_phases`); and what such evidence is not: a layer
loop picking its layer through a local, a carry through fields alone in a model's forward (at most
warnings), a capture of the runner that runs it (:meth:`.entries.Discovery.runs_capture`). One
fixture file per shape in ``fixtures/static/loopshape/``, each linked on its own; ``# expect:``
markers are its findings, ``GL123/severity`` their severity."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marker_severities, expected
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "loopshape"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "field_carry.py": {("eager", "Engine.generate")},
    "prefill_and_generate.py": {("eager", "prefill_and_generate")},
    # a layer loop picking its layer through a getter: no per-token loop, the hot-names guess only
    "layer_getter.py": {("eager", "Stack.forward")},
    # a carry through fields alone, in a model's forward: listed, at most warnings
    "fields_in_forward.py": {("eager", "Refiner.forward")},
    # a capture never captures its own caller: the runner kept in the model's field is a host step
    # (``Agent.step``'s ``self.model(ids, decoding=True)`` cannot run ``Model.forward``, which takes no
    # ``decoding``: no eager step there, :mod:`graphlint.static.arity`)
    "runner_in_model_field.py": {("graph", "Model.forward"), ("host", "SingleRunner.forward"),
                                 ("host", "GraphRunner.__call__"), ("host", "Agent.step")},
    # ... but a step handed to a generic graphing class (``Graphed(self.step)``) that reaches the capturer
    # through another instance stays captured (:mod:`graphlint.static.handed`)
    "generic_graphed.py": {("graph", "set_mask"), ("graph", "Decoder.step"), ("host", "Graphed.__call__"),
                           ("host", "Decoder.generate")},
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_shape_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    found = {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"}
    files = {(FIXTURES / name).relative_to(ROOT).as_posix(): (FIXTURES / name).read_bytes()}
    assert found == expected(files)
    assert_marker_severities(result.findings, files)
    assert {(e.context, e.function[1]) for e in result.entries} == ENTRIES[name]


def test_a_layer_getter_loop_is_guessed_not_a_token_loop(monkeypatch, tmp_path):
    assert all(e.guessed for e in check_fixture(monkeypatch, tmp_path, FIXTURES, "layer_getter.py").entries)


def test_a_field_only_loop_in_a_forward_says_why_it_ranks_lower(monkeypatch, tmp_path):
    (loop,) = [e for e in check_fixture(monkeypatch, tmp_path, FIXTURES, "fields_in_forward.py").entries
               if e.function[1] == "Refiner.forward"]
    assert "fields alone, in a model's forward" in loop.reason
