"""The H200 half of issue 4's "done when": each planted hazard caught by the probe that should
catch it, through the real per-GPU worker processes. Skipped without CUDA."""

from __future__ import annotations

import importlib.util
import re

import pytest
import torch

from dynamic_helpers import ROOT, TARGETS, plant_lines, plants, spec
from graphlint.dynamic.run import Request, run_inventory

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="trial capture and replay need a CUDA device")]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _device(name: str, soak: int = 0):
    inv = run_inventory(Request(target=spec(name), gpus=[0], soak_steps=soak))
    (device,) = inv.devices
    return device


def test_hazards_each_caught_by_its_probe():
    device = _device("hazards.py")
    failing = ["pageable_h2d", "sync_item", "bincount", "nonzero", "synchronize", "scalar_write"]
    assert {r: c["status"] for r, c in device.capture.items()} == {
        **{r: "failed" for r in failing}, "scratch": "captured", "to_peer": "captured",
        "frozen_step": "captured", "pos_index": "captured"}
    marks = plants(TARGETS / "hazards.py")
    failing_lines = {line for code, line in marks if code in ("GL491", "GL190", "GL390", "GL191")}
    assert {(f.rule, f.line) for f in device.findings} == marks | {("GL590", line) for line in failing_lines}
    evidence = {(f.rule, f.line): f.evidence for f in device.findings}
    assert any(e.startswith("tracer:gpu_trace") for e in evidence[("GL191", plant_lines(TARGETS / "hazards.py", "GL191")[0])])
    assert "sync-debug" in evidence[("GL190", plant_lines(TARGETS / "hazards.py", "GL190")[0])]
    for line in plant_lines(TARGETS / "hazards.py", "GL391"):
        assert all(e.startswith("replay") for e in evidence[("GL391", line)])


def test_stream_less_kernel_and_bare_capture():
    device = _device("graph_hazards.py")
    assert device.capture["stream_less_kernel"]["status"] == "empty"
    assert device.capture["self_captured"]["status"] == "eager"
    assert {(f.rule, f.line) for f in device.findings} == plants(TARGETS / "graph_hazards.py")


def _launcher_line() -> int:
    text = (ROOT / "dsv4" / "kernels" / "rmsnorm_kernel.py").read_text().splitlines()
    return next(n for n, line in enumerate(text, 1) if line.strip() == "compiled(")


@pytest.mark.skipif(importlib.util.find_spec("cutlass") is None, reason="needs nvidia-cutlass-dsl")
def test_real_cutedsl_kernel_without_stream_is_an_empty_stale_graph(monkeypatch):
    monkeypatch.setenv("DSV4_KERNELS", "cutedsl")  # the per-GPU worker inherits it
    device = _device("cutedsl_streamless.py")
    assert device.capture == {"rms_norm_without_stream": {"status": "empty", "detail": device.capture[
        "rms_norm_without_stream"]["detail"]}}
    fixture = "fixtures/targets/cutedsl_streamless.py"
    expected = {(code, fixture, line) for code, line in plants(TARGETS / "cutedsl_streamless.py")}
    expected |= {(code, "dsv4/kernels/rmsnorm_kernel.py", _launcher_line()) for code in ("GL593", "GL391")}
    assert {(f.rule, f.path, f.line) for f in device.findings} == expected


@pytest.mark.skipif(importlib.util.find_spec("cutlass") is None, reason="needs nvidia-cutlass-dsl")
def test_own_cutedsl_kernel_without_stream_in_a_graph_that_is_not_empty():
    device = _device("cutedsl_no_stream.py")
    assert device.capture["double"]["status"] == "captured"  # the torch copy is in the graph
    runtime = {(code, line) for code, line in plants(TARGETS / "cutedsl_no_stream.py") if code != "GL504"}
    assert {(f.rule, f.line) for f in device.findings} == runtime
    escaped = next(f for f in device.findings if f.rule == "GL593")
    assert "double_kernel" in escaped.kernel


def test_rebound_buffers_are_caught_before_a_graph_reads_freed_memory():
    device = _device("rebound_buffers.py", soak=32)
    assert {(f.rule, f.line) for f in device.findings} == plants(TARGETS / "rebound_buffers.py")
    assert device.capture["embed"]["status"] == device.capture["head"]["status"] == "stale"
    assert device.outcome("replay").status == device.outcome("soak").status == "ran"


def test_a_soak_past_a_short_cache_is_a_located_crash_and_a_declared_limit_caps_it():
    inv = run_inventory(Request(target=spec("short_cache.py"), gpus=[0], soak_steps=48,
                                options={"declare_limit": False}))
    soak = inv.devices[0].outcome("soak")
    assert soak.status == "error" and "device-side assert" in soak.detail
    # the eager re-run either raises at the op (CPU emulation, test_run_flow.py) or, as on the H200
    # (2026-12-02), is itself aborted by the assert: both name the step and the region
    assert re.search(r"re-run eagerly with CUDA_LAUNCH_BLOCKING=1: (stopped|worker killed by \w+) at step 32 in lookup",
                     soak.detail), soak.detail
    assert soak.where.startswith("fixtures/targets/short_cache.py:")
    capped = _device("short_cache.py", soak=48)
    assert capped.outcome("soak").status == "ran" and "max_steps = 32" in capped.outcome("soak").detail


def test_unseeded_inputs_are_a_target_error():
    inv = run_inventory(Request(target=spec("unseeded_inputs.py"), gpus=[0]))
    assert inv.devices[0].meta["target_error"].startswith("stage() is not deterministic")


def test_plain_module_captures_replays_and_soaks_clean():
    device = _device("plain_module.py", soak=64)
    assert device.findings == []
    assert device.capture == {"forward": {"status": "captured", "detail": ""}}
    assert "identical" in device.outcome("replay").detail
    assert device.timing["graph_s"] > 0 and device.soak["steps"] == 64
    assert device.soak["first_mismatch_step"] is None
