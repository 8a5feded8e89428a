"""The seed lab on a GPU (issue 11): every fault through the real per-GPU worker processes (tracer
and sync-debug, capture, replay, a short soak), each reported where its spec says, with the
symptom it names; the controls and the two-GPU faults harmless on one GPU. Skipped without CUDA.

The lab run takes a few minutes; ``SEEDLAB_OBSERVED=FILE`` reuses the observations that
``python -m dsv4.faults report --json FILE`` saved on this machine instead of probing again.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from dsv4.faults import FAULTS

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="the lab's GPU probes need CUDA")]

ROOT = Path(__file__).resolve().parents[2]
ONE_GPU = [n for n in FAULTS if FAULTS[n].fault.gpus == 1 or FAULTS[n].fault.gpu]
HARMLESS_ON_ONE = [n for n in FAULTS if FAULTS[n].fault.control
                   or (FAULTS[n].fault.gpus > 1 and not FAULTS[n].fault.gpu)]


@pytest.fixture(scope="module")
def lab():
    from dsv4.faults.__main__ import load
    from dsv4.faults.lab import run_lab

    saved = os.environ.get("SEEDLAB_OBSERVED")
    if saved:
        observations, baseline, cuda = load(saved)
        assert cuda, f"{saved} was written without CUDA"
        return observations, baseline
    here, kernels = os.getcwd(), os.environ.get("DSV4_KERNELS")
    os.chdir(ROOT)
    os.environ["DSV4_KERNELS"] = "torch"  # the workers inherit it: no CuTeDSL compilation per worker
    try:
        return run_lab(list(FAULTS), cuda=True, jobs=4, soak_steps=24)
    finally:
        os.chdir(here)
        if kernels is None:
            os.environ.pop("DSV4_KERNELS", None)
        else:
            os.environ["DSV4_KERNELS"] = kernels


def _failed(obs) -> list[str]:
    return [region for region, cell in obs.capture.items() if cell.startswith("failed")]


def test_the_clean_decoder_captures_and_replays_like_eager(lab):
    _, baseline = lab
    assert baseline.dynamic == {} and baseline.region == {}, baseline.region
    assert not _failed(baseline) and "identical" in baseline.probes["replay"], baseline.probes


@pytest.mark.parametrize("name", [n for n in ONE_GPU if not FAULTS[n].fault.control])
def test_each_fault_is_reported_on_one_gpu_with_its_symptom(name, lab):
    fault, obs = FAULTS[name].fault, lab[0][name]
    assert set(fault.gpu) <= set(obs.dynamic), f"{name}: expected {fault.gpu} at {obs.planted[0]}, got {obs.dynamic}"
    region_rules = {key.split()[0] for key in obs.region}
    assert set(fault.gpu_region) <= region_rules, f"{name}: expected {fault.gpu_region} for the region, got {obs.region}"
    if fault.symptom == "capture error":
        assert _failed(obs), f"{name}: its capture should fail: {obs.capture}"
    elif fault.symptom == "stale replay":
        assert not _failed(obs) and "first mismatch" in obs.probes["replay"], obs.probes["replay"]
    elif fault.symptom == "memory growth":
        assert "GL291" in region_rules
    else:  # a slower step, or nothing on one GPU: it captures and replays like eager
        assert not _failed(obs) and "identical" in obs.probes["replay"], (obs.capture, obs.probes["replay"])


@pytest.mark.parametrize("name", HARMLESS_ON_ONE)
def test_controls_and_two_gpu_faults_are_quiet_on_one_gpu(name, lab):
    obs = lab[0][name]
    assert obs.dynamic == {} and obs.region == {}, f"{name}: {obs.dynamic} {obs.region}"
    assert not _failed(obs) and "identical" in obs.probes["replay"], (obs.capture, obs.probes["replay"])


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="the two-GPU faults need 2 GPUs (issue 13)")
@pytest.mark.parametrize("name", [n for n in FAULTS if FAULTS[n].fault.gpus > 1])
def test_two_gpu_faults_across_two_devices(name, monkeypatch):
    """Layers split over two GPUs, one target spanning both: the fault shows at its line (a
    cross-device copy, a failed capture, the engine's own stream-less capture). These are the
    expectations written before any two-GPU run (issue 13 runs them)."""
    from dsv4.faults.lab import LAB_OPTIONS, planted_keys
    from graphlint.dynamic.run import Request, run_inventory

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DSV4_KERNELS", "torch")
    request = Request(target="dsv4.target:make_target", options={**LAB_OPTIONS, "fault": name}, gpus=[0, 1],
                      placement="span", soak_steps=0)
    (device,) = run_inventory(request).devices
    at_line = {f.rule for f in device.findings if (f.path, f.line) in planted_keys(name)}
    assert set(FAULTS[name].fault.gpu2) <= at_line, f"{name} on two GPUs: {device.findings} {device.capture}"
