"""The cross-reference lists static-only findings only in code the probed step ran: a clean
full-graph decoder's report listed 28 rows of the eager reference decoder it never ran."""

from __future__ import annotations

import pytest

from graphlint.crossref import STATIC_ONLY, cross_reference

TWO_DECODERS = """\
import torch


class GraphDecoder:
    def step(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class EagerDecoder:
    def step(self, x: torch.Tensor) -> torch.Tensor:
        n = x.sum().item()
        return x + torch.zeros(8, device=x.device)
"""


def _package(root):
    (root / "eng").mkdir()
    (root / "eng" / "__init__.py").write_text("")
    (root / "eng" / "decoders.py").write_text(TWO_DECODERS)


def test_static_only_rows_come_from_the_functions_the_step_ran(tmp_path, monkeypatch):
    _package(tmp_path)
    monkeypatch.chdir(tmp_path)
    everything = cross_reference([], [], ["eng/decoders.py"])  # no record of what ran: the old behaviour
    assert [f.line for f in everything.static_only] == [11, 12]
    graph_only = cross_reference([], [], ["eng/decoders.py"], ran=["eng/decoders.py:5-6"])
    assert graph_only.static_only == [] and "2 line(s) it flags in code the probed step never ran" in graph_only.detail
    eager = cross_reference([], [], ["eng/decoders.py"], ran=["eng/decoders.py:10-12"])
    assert [(f.line, eager.of(f)) for f in eager.static_only] == [(11, STATIC_ONLY), (12, STATIC_ONLY)]
    assert "never ran" not in eager.detail


@pytest.mark.slow
def test_the_tracer_records_the_spans_of_what_stage_and_the_regions_ran(monkeypatch):
    from pathlib import Path

    from graphlint.dynamic.tracer import trace_phase
    from graphlint.rules import load_rules

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    from dsv4.target import make_target

    result = trace_phase(make_target, ["cpu"], {"decoder": "full-graph"}, load_rules([]), "cpu")
    files = {span.rpartition(":")[0] for span in result.ran}
    assert "dsv4/full_graph.py" in files
    import ast

    tree = ast.parse((root / "dsv4" / "engine.py").read_text())
    eager = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EagerDecoder")
    engine = [tuple(map(int, s.rpartition(":")[2].split("-"))) for s in result.ran if s.startswith("dsv4/engine.py:")]
    assert not [span for span in engine if eager.lineno <= span[0] <= eager.end_lineno]  # never the eager decoder
    assert all(int(a) <= int(b) for a, b in (s.rpartition(":")[2].split("-") for s in result.ran))
