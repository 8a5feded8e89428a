"""The worker process protocol and the soak arithmetic, both of which the GPU path relies on."""

from __future__ import annotations

import pytest

from dynamic_helpers import ROOT, inventory_with_workers, spec
from graphlint.dynamic.graph_probe import output_diff
from graphlint.dynamic.run import _worker
from graphlint.dynamic.soak import mismatched
from graphlint.inventory import DeviceResult


def _job(target: str, phase: str = "trace") -> dict:
    return {"target": target, "options": {}, "devices": ["cpu"], "label": "cpu", "phase": phase,
            "replay_steps": 8, "soak_steps": 0}


@pytest.mark.slow
def test_worker_process_returns_its_findings(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = _worker(_job(spec("hazards.py")))
    assert {f.rule for f in result.findings} == {"GL190", "GL290", "GL390", "GL393", "GL490"}
    assert result.meta["torch"] and result.entries


@pytest.mark.slow
def test_a_target_that_raises_becomes_a_probe_error_not_a_crash(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    broken = tmp_path / "broken.py"
    broken.write_text("def make_target(devices):\n    raise RuntimeError('engine failed to build')\n")
    result = _worker(_job(f"{broken}:make_target"))
    assert result.findings == []
    assert {(p.probe, p.status) for p in result.probes} == {("tracer", "error"), ("sync-debug", "error")}
    assert all("engine failed to build" in p.detail for p in result.probes)


def test_output_diff_compares_every_tensor():
    import torch

    same = (torch.ones(3), {"b": torch.zeros(2)})
    assert output_diff(same, same) == (0.0, 1.0)
    diff, scale = output_diff(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0]))
    assert (diff, scale) == (2.0, 4.0) and mismatched(diff, scale)
    assert output_diff(torch.ones(2), torch.ones(3))[0] == float("inf")
    assert not mismatched(1e-7, 1.0)


def _series(kind: str, steps: int, leak: int = 0, drift_from: int | None = None, stopped: str = ""):
    """A recorded instance: outputs [steps, 4], per-step memory and time (what analyse_soak reads)."""
    import torch

    from graphlint.dynamic.series import StepSeries

    rows = [torch.full((4,), 1.0 + (0.5 if kind == "graph" and drift_from is not None and s >= drift_from else 0.0))
            for s in range(1, steps)]
    return StepSeries(kind, list(range(1, steps)), [0.01 if kind == "graph" else 0.02] * (steps - 1),
                      [leak if kind == "eager" else 0] * (steps - 1), [3] * (steps - 1),
                      torch.stack(rows) if rows else None, stopped)


def _context(replay_mismatch: bool = False):
    from graphlint.dynamic.frames import UserFrame
    from graphlint.dynamic.soak import SoakContext
    from graphlint.rules import runtime_rules

    return SoakContext(runtime_rules(), "cuda:0", 8, 64, replay_mismatch, capture={"step": {"status": "captured"}},
                       region_frames={"step": UserFrame("eng.py", 3, "step")})


def test_soak_clean():
    from graphlint.dynamic.soak import analyse_soak

    figures, findings, outcome = analyse_soak(_series("graph", 64), _series("eager", 64), _context())
    assert findings == [] and outcome.status == "ran"
    assert figures["graph_allocations_per_step"] == 3 and figures["first_mismatch_step"] is None


def test_soak_reports_memory_growth_and_late_drift():
    from graphlint.dynamic.soak import analyse_soak

    _figures, findings, _ = analyse_soak(_series("graph", 64, drift_from=40), _series("eager", 64, leak=512), _context())
    assert [f.rule for f in findings] == ["GL291", "GL392"]
    assert "512 B per step" in findings[0].message and "step 40" in findings[1].message
    assert (findings[1].path, findings[1].line) == ("eng.py", 3)  # nothing better than the region


def test_soak_does_not_repeat_a_replay_mismatch_as_drift():
    from graphlint.dynamic.soak import analyse_soak

    _figures, findings, _ = analyse_soak(_series("graph", 64, drift_from=2), _series("eager", 64), _context(True))
    assert findings == []


def test_soak_shorter_than_the_replay_window_says_so():
    from graphlint.dynamic.soak import analyse_soak

    _figures, _findings, outcome = analyse_soak(_series("graph", 8), _series("eager", 8), _context())
    assert outcome.status == "skipped" and "not beyond" in outcome.detail


def test_a_reference_that_stopped_early_is_a_soak_error_with_its_reason():
    from graphlint.dynamic.soak import analyse_soak

    eager = _series("eager", 40, stopped="stopped at step 40 in lookup: IndexError")
    _figures, _findings, outcome = analyse_soak(_series("graph", 64), eager, _context())
    assert outcome.status == "error" and "eager: stopped at step 40 in lookup" in outcome.detail


def test_series_survive_the_trip_between_processes(tmp_path):
    from graphlint.dynamic.series import StepSeries
    from graphlint.dynamic.soak import context_from_dict, context_to_dict

    series = _series("graph", 16)
    back = StepSeries.load(series.ship(str(tmp_path)))
    assert back.steps == series.steps and back.output_at(5).tolist() == series.output_at(5).tolist()
    ctx = _context()
    again = context_from_dict(context_to_dict(ctx), ctx.rules)
    assert again.region_frames == ctx.region_frames and again.capture == ctx.capture


@pytest.mark.slow
def test_a_probe_error_points_at_the_users_line_not_into_torch(tmp_path):
    from graphlint.dynamic.worker import run_phase

    broken = tmp_path / "raises_in_torch.py"
    broken.write_text("import torch\n\n\ndef make_target(devices):\n"
                      "    return torch.nn.functional.layer_norm(torch.zeros(2, 3), (4,))\n")
    result = run_phase({"target": f"{broken}:make_target", "devices": ["cpu"], "label": "cpu", "phase": "trace"})
    assert all(p.status == "error" and p.detail.endswith(f"(at {broken}:5)") for p in result.probes)


def test_failed_captures_send_replay_and_soak_to_a_fresh_process(monkeypatch):
    from graphlint.finding import Finding
    from graphlint.inventory import ProbeOutcome

    gl590 = Finding("GL590", "capture-failed", "capture-hygiene", "error", "t.py", 3, 0, "capture failed",
                    source="dynamic", device="cuda:0", region="a")
    stale = gl590.with_(rule="GL391", line=9, category="data-dependent", message="replay differs")
    jobs = []

    def fake_worker(job, workers=None, env=None):
        jobs.append(job)
        if job["phase"] == "trace":
            return DeviceResult("cuda:0", probes=[ProbeOutcome("tracer", "ran", "traced")])
        if "known_failed" not in job:  # first graph process: a's capture fails; it hands replay off
            return DeviceResult("cuda:0", findings=[gl590, stale], meta={"handed_off": "1"},
                                capture={"a": {"status": "failed", "detail": "sync"},
                                         "b": {"status": "captured", "detail": ""}},
                                probes=[ProbeOutcome("capture", "ran", "1/2"), ProbeOutcome("replay", "skipped", "x")])
        return DeviceResult("cuda:0", capture={"a": {"status": "failed", "detail": "sync"},
                                               "b": {"status": "captured", "detail": ""}},
                            probes=[ProbeOutcome("capture", "ran", "1/2"),
                                    ProbeOutcome("replay", "ran", "identical within tolerance")])

    inv = inventory_with_workers(monkeypatch, fake_worker)
    assert sorted(j["phase"] for j in jobs) == ["graph", "graph", "trace"]
    second = next(j for j in jobs if "known_failed" in j)
    assert second["known_failed"] == {"a": "sync"} and second["watch_launches"] is False
    (device,) = inv.devices
    assert {f.rule for f in device.findings} == {"GL590"}  # the garbage replay was the failed capture's doing
    replay = device.outcome("replay")
    assert replay.detail.startswith("identical within tolerance; in a fresh process")
    assert device.capture["a"]["status"] == "failed"


def test_a_torchrun_rank_says_its_replay_ran_after_failed_captures():
    from graphlint.dynamic.combine import caveat_failed_captures
    from graphlint.inventory import ProbeOutcome

    result = DeviceResult("rank0:cuda:0", capture={"a": {"status": "failed", "detail": "x"}},
                          probes=[ProbeOutcome("capture", "ran", "0/1"), ProbeOutcome("replay", "ran", "identical")])
    details = {p.probe: p.detail for p in caveat_failed_captures(result).probes}
    assert details["capture"] == "0/1" and "held 1 failed capture(s)" in details["replay"]


CASCADE = ("AcceleratorError: CUDA error: operation failed due to a previous error during capture (then: "
           "AcceleratorError: CUDA error: operation failed due to a previous error during capture)")


def test_a_capture_that_failed_only_after_another_is_captured_again_in_the_fresh_process(monkeypatch):
    """The H200 eager dsv4 inventory of 2026-12-03: after layer0's capture failed at its pageable
    copy, later layers failed at their first allocation ("a previous error during capture", GL590 at
    mhc.py:19, a static miss that was no hazard). Such a cascade is not a verdict: the fresh process
    captures it again and its own result (here: the same pageable copy) is the one reported."""
    from graphlint.finding import Finding
    from graphlint.inventory import ProbeOutcome

    own = Finding("GL590", "capture-failed", "capture-hygiene", "error", "moe.py", 58, 0, "pageable copy",
                  source="dynamic", device="cuda:0", region="layer0")
    cascade = own.with_(path="mhc.py", line=19, message="previous error", region="layer1")
    again = own.with_(region="layer1")
    jobs = []

    def fake_worker(job, workers=None, env=None):
        jobs.append(job)
        if "known_failed" not in job:
            return DeviceResult("cuda:0", findings=[own, cascade], meta={"handed_off": "1"},
                                capture={"layer0": {"status": "failed", "detail": "RuntimeError: pageable copy"},
                                         "layer1": {"status": "failed", "detail": CASCADE}},
                                probes=[ProbeOutcome("capture", "ran", "0/2"), ProbeOutcome("replay", "skipped", "x")])
        return DeviceResult("cuda:0", findings=[again],
                            capture={"layer0": {"status": "failed", "detail": "RuntimeError: pageable copy"},
                                     "layer1": {"status": "failed", "detail": "RuntimeError: pageable copy"}},
                            probes=[ProbeOutcome("capture", "ran", "0/2 capturable regions captured"),
                                    ProbeOutcome("replay", "ran", "identical within tolerance")])

    inv = inventory_with_workers(monkeypatch, fake_worker, trace=False)
    second = next(j for j in jobs if "known_failed" in j)
    assert second["known_failed"] == {"layer0": "RuntimeError: pageable copy"}  # layer1 is captured again
    (device,) = inv.devices
    assert {(f.rule, f.path, f.line) for f in device.findings} == {("GL590", "moe.py", 58)}  # none at mhc.py:19
    capture = device.outcome("capture").detail
    assert capture.startswith("0/2 capturable regions captured; re-captured in a fresh process")
    assert "layer1 failed" in capture
    assert "where re-capturing layer1 failed again, which can leave state behind" in device.outcome("replay").detail


def test_only_a_first_error_from_an_earlier_capture_is_a_cascade():
    from graphlint.dynamic.crash import is_cascade

    assert is_cascade(CASCADE)
    assert not is_cascade("RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph capture (then: "
                          "AcceleratorError: CUDA error: operation failed due to a previous error during capture)")


def test_the_per_step_memory_reading_equals_torchs_own_counters(monkeypatch):
    """``memory()`` reads the allocator's nested counters once; it must give what
    ``memory_allocated()`` and ``memory_stats()["allocation.all.allocated"]`` give."""
    import torch

    from graphlint.dynamic.series import memory

    counters = {0: {"allocated_bytes": {"all": {"current": 4096, "peak": 8192}, "small_pool": {"current": 512}},
                    "allocation": {"all": {"allocated": 37, "current": 5}}, "num_ooms": 0},
                1: {"allocated_bytes": {"all": {"current": 100}}, "allocation": {"all": {"allocated": 3}}}}

    def nested(device=None):
        return counters[torch.device(device).index]

    monkeypatch.setattr(torch.cuda.memory, "memory_stats_as_nested_dict", nested)
    monkeypatch.setattr(torch.cuda, "memory_stats_as_nested_dict", nested)
    devices = [torch.device("cuda:0"), torch.device("cuda:1"), torch.device("cpu")]
    expected = (sum(torch.cuda.memory_allocated(d) for d in devices[:2]),
                sum(torch.cuda.memory_stats(d)["allocation.all.allocated"] for d in devices[:2]))
    assert memory(devices) == expected == (4196, 40)
