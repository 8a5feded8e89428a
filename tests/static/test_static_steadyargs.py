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
