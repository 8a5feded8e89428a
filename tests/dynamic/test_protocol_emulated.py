"""The capture/replay/soak protocol on the CPU, against the graph emulator (see graph_emulator.py).

What this proves is graphlint's bookkeeping (capture matrix, which step mismatches, which line is
blamed, replay vs soak); what CUDA does is proven by test_dynamic_gpu.py on a GPU.
"""

from __future__ import annotations

import pytest
import torch

import graph_emulator
from dynamic_helpers import TARGETS, plant_lines, snippet_factory
from graphlint.dynamic.replay import run_graph_phase
from graphlint.dynamic.results import runtime_rules
from graphlint.dynamic.target import load_factory

RULES = runtime_rules()
CPU = [torch.device("cpu")]


@pytest.fixture(autouse=True)
def _emulated(monkeypatch):
    graph_emulator.install(monkeypatch)


@pytest.mark.parametrize("code", ["GL391", "GL392", "GL590"])
@pytest.mark.parametrize("kind", ["bad", "good"])
def test_rule_examples_under_the_emulated_protocol(code, kind, tmp_path):
    factory, _ = snippet_factory(getattr(RULES[code], kind)[0], tmp_path, f"{code}_{kind}")
    result = run_graph_phase(factory, CPU, {}, RULES, "cpu", soak_steps=64 if code == "GL392" else 0)
    assert {f.rule for f in result.findings} == ({code} if kind == "bad" else set())


def test_hazards_mismatch_is_blamed_on_the_frozen_lines():
    path = TARGETS / "hazards.py"
    result = run_graph_phase(load_factory(f"{path}:make_target"), CPU, {}, RULES, "cpu")
    statuses = {r: c["status"] for r, c in result.capture.items()}
    assert statuses["sync_item"] == statuses["bincount"] == statuses["nonzero"] == "failed"
    assert statuses["synchronize"] == "empty"  # no device work on the CPU
    assert statuses["frozen_step"] == statuses["pos_index"] == "captured"
    blamed = {f.line for f in result.findings if f.rule == "GL391"}
    # buf[0] = step is frozen too here: on the CPU it is no host->device copy, so it captures.
    assert blamed == set(plant_lines(path, "GL391")) | set(plant_lines(path, "GL491")[1:])
    failed = {f.line for f in result.findings if f.rule == "GL590"}
    assert failed == set(plant_lines(path, "GL190")) | set(plant_lines(path, "GL390"))
    assert "first mismatch at step 2" in result.outcome("replay").detail


def test_clean_module_replays_identically_and_is_timed():
    result = run_graph_phase(load_factory(f"{TARGETS / 'plain_module.py'}:make_target"), CPU, {}, RULES, "cpu",
                             soak_steps=32)
    assert result.findings == []
    assert result.capture == {"forward": {"status": "captured", "detail": ""}}
    assert "identical" in result.outcome("replay").detail
    assert result.timing["graph_s"] > 0 and result.soak["first_mismatch_step"] is None
