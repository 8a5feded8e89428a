"""A generator decode loop in a chat engine's shape (issue 19 item 2, recall): prefill before the
loop, then per token a sampling helper, one read-back of the ids, a per-row Python state machine
filling a fresh list, the list uploaded and the model called last with a cache object. Three
mechanisms make it a per-token loop and check what it runs: the carry through a fresh list the
body fills (:meth:`graphlint.static.loops.LoopFrame.exposed`), the cache's methods called on a
``forward`` parameter only presumed a tensor (:func:`graphlint.static.params.object_method`), and
the step's read at the top of an iteration whose model call comes last
(:func:`graphlint.static.stepvalues.rotated`). Beside it, what such engines reach per token and
graphlint did not see: weight casts through a ``ParameterDict`` element or a helper handed a
parameter (:mod:`graphlint.static.weightargs`), an upload of ``list(prompt_tokens)`` inside the
model call's argument, kernels exported through ``types.SimpleNamespace``. ``# expect:`` markers
are the findings."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture, summarize
from graphlint.static.params import object_method

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "enginegen"

ENTRIES = {
    # and the script's loop over the tokens the generator yields (:mod:`graphlint.static.genloops`)
    "rowstream": {("eager", "Streamer.tokens"), ("eager", "main")},
    "batches": set(),  # a fresh list filled from the loop's own data carries nothing
    # weight casts reached through a ParameterDict's element and a helper handed a parameter
    "paramreach": {("eager", "generate")},
    # ``list(prompt_tokens)`` of a ``list[int]`` is host data: its upload inside the model call's argument
    "wholeseq": {("eager", "Generator.generate")},
    # kernels exported through ``types.SimpleNamespace(decode=f, ...)``: its keywords are its attributes
    "namespace": {("eager", "generate")},
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_shape_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))
    assert {(e.context, e.function[1]) for e in result.entries if not e.guessed} == ENTRIES[name]


def test_the_generator_loop_is_per_token_by_its_model_call():
    (info,) = [s.data for s in summarize({"s.py": (FIXTURES / "rowstream" / "streamer.py").read_bytes()})]
    loops = info.functions["Streamer.tokens"].loops
    forward = ("a", ("a", ("n", "self"), "net"), "forward")
    assert [forward in loop.exprs for loop in loops] == [False, True]  # the row loop's appends; the while loop


def test_a_presumed_tensor_parameter_keeps_an_objects_method_call():
    (info,) = [s.data for s in summarize({"m.py": (FIXTURES / "rowstream" / "model.py").read_bytes()})]
    exprs = {site.expr for site in info.functions["Stack.forward"].calls}
    assert ("a", ("n", "state"), "offset") in exprs and ("a", ("n", "state"), "push") in exprs
    method = cst.parse_expression("state.view")
    assert not object_method(method, {"state"})  # a tensor's method stays a tensor's
    assert object_method(cst.parse_expression("state.offset"), {"state"})
    assert not object_method(cst.parse_expression("state.offset"), set())  # an annotated tensor's call is opaque
