"""The fixture engines of issue 9 under the emulated capture protocol (CPU): each hazard at its line.

Stale addresses (a buffer rebound in ``stage()`` or by an eager region), a position table shorter
than the soak (``max_steps`` and a crash at its step), unseeded inputs (exit 2 naming the buffer),
and the bundled eager decoder, whose stale token buffer crashed the H200 inventory. A kernel that
escapes a capture needs CUDA (test_dynamic_gpu.py); its attribution logic is tested in
test_launches.py.
"""

from __future__ import annotations

import pytest
import torch

import graph_emulator
from dynamic_helpers import TARGETS, plants
from graphlint.dynamic.graph_probe import run_graph_phase
from graphlint.dynamic.target import load_factory
from graphlint.rules import runtime_rules

RULES = runtime_rules()
CPU = [torch.device("cpu")]


@pytest.fixture(autouse=True)
def _emulated(monkeypatch):
    graph_emulator.install(monkeypatch)


def _run(name: str, soak: int = 0, **options):
    return run_graph_phase(load_factory(f"{TARGETS / name}:make_target"), CPU, options, RULES, "cpu", soak_steps=soak)


def test_rebound_buffers_are_stale_addresses_at_the_lines_that_rebind_them():
    result = _run("rebound_buffers.py", soak=24)
    assert {(f.rule, f.line) for f in result.findings} == plants(TARGETS / "rebound_buffers.py")
    assert {r: c["status"] for r, c in result.capture.items()} == {"embed": "stale", "mix": "eager", "head": "stale"}
    by_line = {f.line: f for f in result.findings}
    stage_line = min(by_line)
    assert "`engine.token` is read by the graph of `embed`" in by_line[stage_line].message
    assert "stage() rebound it at step 2" in by_line[stage_line].message
    assert "mix rebound it at step 2" in by_line[max(by_line)].message
    # the graphs were not replayed on stale inputs: replay and soak stay comparable, nothing else is blamed
    assert "identical" in result.outcome("replay").detail
    assert result.outcome("soak").status == "ran" and "no region replays as a graph" in result.outcome("soak").detail


def test_the_eager_dsv4_decoder_completes_with_its_stale_token_buffer_named():
    """What the H200 eager inventory died of (a device-side assert at step 3 in the embed graph):
    in the process that does not capture the failing layers, embed's graph read a freed token buffer."""
    options = {"decoder": "eager", "n_layers": 2, "compress_ratios": (0, 4), "max_seq_len": 16}
    failed = {"layer0": "failed in the first process", "layer1": "failed in the first process"}
    result = run_graph_phase(load_factory("dsv4.target:make_target"), CPU, options, RULES, "cpu", soak_steps=12,
                             known_failed=failed)
    stale = {(f.path, f.line_text) for f in result.findings if f.rule == "GL292"}
    assert ("dsv4/engine.py", "self._tokens = torch.tensor([token], device=self.model.first_device)") in stale
    assert result.capture["embed"]["status"] == "stale"
    assert result.outcome("replay").status == "ran" and result.outcome("soak").status == "ran"


def test_a_declared_step_limit_caps_the_soak_with_a_note():
    result = _run("short_cache.py", soak=64)
    assert result.findings == [] and result.outcome("soak").status == "ran"
    assert "capped at the target's max_steps = 32, asked 64" in result.outcome("soak").detail


def test_running_past_an_undeclared_limit_is_a_crash_at_its_step_and_line_not_a_hazard():
    result = _run("short_cache.py", soak=64, declare_limit=False)
    assert result.findings == []
    assert "identical" in result.outcome("replay").detail  # the replay window (steps 1-7) is fine
    soak = result.outcome("soak")
    assert soak.status == "error" and "stopped at step 32 in lookup" in soak.detail and "IndexError" in soak.detail
    line = next(n for n, text in enumerate((TARGETS / "short_cache.py").read_text().splitlines(), 1) if "# reads past the table" in text)
    assert f"(at fixtures/targets/short_cache.py:{line}): a limit of the target, not of its graphs" in soak.detail


def test_unseeded_inputs_are_a_target_error_naming_the_buffer():
    result = _run("unseeded_inputs.py")
    assert result.meta["target_error"].startswith("stage() is not deterministic")
    assert "`x`" in result.meta["target_error"] and "weights" not in result.meta["target_error"]
    assert result.outcome("replay").status == "error" and not result.findings
