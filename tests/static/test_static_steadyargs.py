"""Arguments the same on every call of their caller (``fixtures/static/steadyargs``, :mod:`graphlint.static.steadyargs`).

``Segmented.apply(out, x, start_idx, end_idx)`` slices a fixed column segment: its callers compute
it from the fused sizes, a shape and the process group, with an offset reset at each call and
advanced by a loop over the fused projections. Under a capture that is no per-step position. A
segment start taken from the caller's own parameter, a field another method advances, or a
per-token loop's counter stays one."""

from __future__ import annotations

from pathlib import Path

from static_helpers import check_fixture, summarize

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "steadyargs"


def _files(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / name).glob("*.py"))}


def _checked(monkeypatch, tmp_path, name: str, rule: str) -> list[tuple[str, int]]:
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    return sorted((Path(f.path).name, f.line) for f in result.findings if f.rule == rule)


def test_a_fixed_segment_every_caller_computes_per_call_is_no_position(monkeypatch, tmp_path):
    found = _checked(monkeypatch, tmp_path, "segments", "GL308")
    assert not [f for f in found if f[0] == "adapters.py"]
    assert ("cache.py", 14) in found  # ``put``: a caller's parameter, and a field ``append`` advances


def test_the_value_rounds_say_which_parameters_are_steady():
    from graphlint.static.valueflow import value_facts_of

    facts = {f for fs in value_facts_of(summarize(_files("segments"))).values() for f in fs}
    assert "param:Segmented.apply:start_idx=steady" in facts
    assert not any(f.startswith("param:Window.") and f.endswith("=steady") for f in facts)
    assert not any(f.startswith("param:Engine.") and f.endswith("=steady") for f in facts)


def test_a_capture_keeps_what_it_calls_wide_and_the_rest_of_its_function_narrow():
    """``regload`` widened every name of a capturing function to 64 values; only the names its
    captured calls go through need it: ``model`` of ``model.forward(...)`` in
    ``fixtures/static/callgraph/registry_load`` (twenty architectures), not the capture's other
    names (a helper beside them may pass a generic helper's many values on)."""
    from graphlint.static.pointsto import CAP, ELEMENT_CAP
    from test_static_callgraph import call_graph

    graph, _ = call_graph(FIXTURES.parent / "callgraph" / "registry_load")
    solver = graph.solver
    scope = ("graphs.py", "GraphRunner.trace")
    model = solver.ids[("v", *scope, "model")]
    assert solver.cap(model) == ELEMENT_CAP and len(solver.values(model)) > CAP
    assert {solver.cap(solver.ids[("v", *scope, name)]) for name in ("batch_size", "static_ids", "graph")} == {CAP}
