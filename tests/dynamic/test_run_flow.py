"""The inventory's process layout on the CPU: the per-device workers (tracer, graph, eager reference)
run in this process against the graph emulator, through the same job dicts, records on disk, hand-off
after failed captures, soak analysis in the parent and crash handling as on a GPU."""

from __future__ import annotations

import threading

import pytest
import torch

import graph_emulator
from dynamic_helpers import ROOT, TARGETS, plants, spec, standby_aware
from graphlint.dynamic import run as run_module
from graphlint.dynamic.worker import run_phase
from graphlint.gate import capture_failures
from graphlint.inventory import DeviceResult, ProbeOutcome


@pytest.fixture
def jobs(monkeypatch):
    """Pretend there is one GPU; run every worker job in this process, on the CPU, emulated."""
    graph_emulator.install(monkeypatch)
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    seen: list[dict] = []
    one_at_a_time = threading.Lock()  # worker processes are independent; threads of one process are not

    def in_process(job, workers=None, env=None):
        seen.append({**job, "env": env or {}})
        with one_at_a_time:
            return run_phase({**job, "devices": ["cpu"]})

    monkeypatch.setattr(run_module, "_worker", standby_aware(in_process))
    return seen


def _inventory(name: str, soak: int = 24, **options):
    inv = run_module.run_inventory(run_module.Request(target=spec(name), options=options, soak_steps=soak))
    (device,) = inv.devices
    return inv, device


def test_three_workers_per_device_and_the_soak_joined_in_the_parent(jobs):
    _inv, device = _inventory("plain_module.py")
    assert sorted(j["phase"] for j in jobs) == ["graph", "reference", "trace"]
    graph = next(j for j in jobs if j["phase"] == "graph")
    assert graph["reference"] == "elsewhere" and graph["hand_off_failed"]
    assert device.findings == [] and device.soak["steps"] == 24 and device.soak["first_mismatch_step"] is None
    assert device.outcome("soak").detail.startswith("16 steps after the replay window, graph vs eager")
    assert {"tracer", "sync-debug", "capture", "replay", "soak"} <= {p.probe for p in device.probes}
    assert not device.records  # the series were consumed by the analysis
    for phase in ("capture (step 1)", "soak (graph steps)", "reference steps", "reference imports", "graph worker"):
        assert phase in device.seconds, sorted(device.seconds)
    assert not [k for k in device.seconds if k.startswith("reference reference")]  # the H200's timing table had them


def test_rebound_buffers_through_the_workers(jobs):
    _inv, device = _inventory("rebound_buffers.py")
    assert {(f.rule, f.line) for f in device.findings if f.rule == "GL292"} == plants(TARGETS / "rebound_buffers.py")
    # the eager reference stops once the graph worker has nothing left to compare (how far it got
    # before that depends on which worker was first here)
    assert "no region replays as a graph from step 8" in device.outcome("soak").detail


@pytest.mark.slow
def test_failed_captures_are_measured_again_without_them(jobs):
    _inv, device = _inventory("hazards.py", soak=0)
    graphs = [j for j in jobs if j["phase"] == "graph"]
    assert len(graphs) == 2 and graphs[1]["known_failed"] and graphs[1]["watch_launches"] is False
    assert "in a fresh process that captured all but" in device.outcome("replay").detail
    assert {f.rule for f in device.findings} >= {"GL590", "GL391", "GL393"}


def test_a_soak_past_an_undeclared_limit_reports_both_instances_stopping(jobs):
    inv, device = _inventory("short_cache.py", soak=48, declare_limit=False)
    soak = device.outcome("soak")
    assert soak.status == "error"
    assert "graph: stopped at step 32 in lookup" in soak.detail and "eager: stopped at step 32 in lookup" in soak.detail
    assert "fixtures/targets/short_cache.py:33" in soak.detail
    assert any("soak: probe error" in f for f in capture_failures(inv))
    from graphlint.report.inventory import tested

    assert tested(inv).startswith("capture NOT fully tested: soak error on cuda:0")


def test_a_declared_limit_caps_the_reference_too(jobs):
    _inv, device = _inventory("short_cache.py", soak=48)
    reference = next(j for j in jobs if j["phase"] == "reference")
    assert reference["steps"] == 48  # asked; the target's max_steps caps it inside the worker
    assert device.outcome("soak").status == "ran" and "capped at the target's max_steps = 32" in device.outcome("soak").detail


def test_a_device_assert_is_located_by_an_eager_rerun_with_launch_blocking(monkeypatch):
    """What the parent does with 'device-side assert triggered': one eager re-run up to that step
    with CUDA_LAUNCH_BLOCKING=1, whose failing op names the line."""
    calls = []

    def fake_worker(job, workers=None, env=None):
        calls.append((job, env))
        return DeviceResult("cuda:0", probes=[ProbeOutcome("reference", "error", "stopped at step 32 in lookup: "
                                                           "AcceleratorError: CUDA error: device-side assert triggered "
                                                           "(at eng.py:33)", "eng.py:33")])

    monkeypatch.setattr(run_module, "_worker", fake_worker)
    result = DeviceResult("cuda:0", probes=[ProbeOutcome("soak", "error", "worker killed by SIGABRT at step 32 during "
                                                         "soak: device-side assert in indexSelectSmallIndex")])
    run_module._locate_device_asserts(result, {"phase": "graph", "replay_steps": 8, "soak_steps": 64}, run_module._Workers())
    ((job, env),) = calls
    assert job["phase"] == "reference" and job["steps"] == 33 and env == {"CUDA_LAUNCH_BLOCKING": "1"}
    soak = result.outcome("soak")
    assert "re-run eagerly with CUDA_LAUNCH_BLOCKING=1: stopped at step 32 in lookup" in soak.detail
    assert soak.where == "eng.py:33"


def test_the_launch_blocking_rerun_really_runs_the_steps_up_to_the_assert(jobs, tmp_path):
    """The H200 failure (2026-12-02): the graph worker's death creates its stop file, and the re-run,
    a reference job made from the graph job, inherited it: it stopped before step 0 and the report
    said "steps 0-32 ran without an error, so the assert comes from a graph replay". The eager step
    32 of short_cache.py does index past its 32 positions (on the CPU: an IndexError)."""
    stop = tmp_path / "stop-reference"
    stop.write_text("")
    graph_job = {"target": spec("short_cache.py"), "options": {"declare_limit": False}, "devices": ["cuda:0"],
                 "label": "cuda:0", "phase": "graph", "replay_steps": 8, "soak_steps": 48, "records_dir": "",
                 "stop_file": str(stop), "reference": "elsewhere"}
    result = DeviceResult("cuda:0", probes=[ProbeOutcome("soak", "error", "worker killed by SIGABRT at step 32 in "
                                                         "lookup during soak: device-side assert in indexSelect")])
    run_module._locate_device_asserts(result, graph_job, run_module._Workers())
    rerun = jobs[-1]
    assert rerun["phase"] == "reference" and rerun["steps"] == 33 and not rerun["stop_file"]
    soak = result.outcome("soak")
    assert "re-run eagerly with CUDA_LAUNCH_BLOCKING=1: stopped at step 32 in lookup" in soak.detail, soak.detail
    assert soak.where == "fixtures/targets/short_cache.py:33"


def test_a_rerun_that_stops_short_gives_no_verdict(monkeypatch):
    monkeypatch.setattr(run_module, "_worker", lambda job, workers=None, env=None: DeviceResult(
        "cuda:0", probes=[ProbeOutcome("reference", "ran", "eager instance, steps 0-31")]))  # a declared max_steps
    result = DeviceResult("cuda:0", probes=[ProbeOutcome("soak", "error", "worker killed by SIGABRT at step 40 "
                                                         "during soak: device-side assert in indexSelect")])
    run_module._locate_device_asserts(result, {"phase": "graph", "soak_steps": 64}, run_module._Workers())
    detail = result.outcome("soak").detail
    assert "did not reach step 40: eager instance, steps 0-31" in detail and "graph replay" not in detail


ALLOCATES = (
    "import torch\nfrom graphlint.dynamic.target import Region\n\n\n"
    "class Allocates:\n"
    "    def __init__(self, devices):\n"
    "        self.devices, self.x, self.out = devices, torch.zeros(4), torch.zeros(4)\n"
    "    def stage(self, step):\n"
    "        self.x.fill_(float(step))\n"
    "    def scaled(self, name):\n"
    "        tmp = torch.ones(4)  # allocated inside the region\n"
    "        self.out.copy_(self.x * tmp)\n"
    "    def graph(self):\n"
    "        self.scaled('graph')\n"
    "    def eager(self):\n"
    "        self.out.add_(torch.ones(4))\n"
    "    def regions(self):\n"
    "        return [Region('graph', self.graph, 'cpu'), Region('eager', self.eager, 'cpu', capturable=False)]\n"
    "    def output(self):\n"
    "        return self.out\n\n\n"
    "def make_target(devices):\n"
    "    return Allocates(devices)\n"
)


def test_an_allocation_inside_a_graph_that_replays_correctly_is_no_per_step_cost(jobs, tmp_path):
    """The H200 full-graph report listed three GL290 "static misses": the CuTeDSL wrappers' empty_like
    outputs inside the captured graph. A replay allocates nothing (the pool was allocated at capture);
    an allocation in an eager region still allocates every step, and so does a line that runs in both."""
    (tmp_path / "allocates.py").write_text(ALLOCATES)
    inv = run_module.run_inventory(run_module.Request(target=f"{tmp_path / 'allocates.py'}:make_target",
                                                      soak_steps=0))
    (device,) = inv.devices
    assert device.capture["graph"]["status"] == "captured" and "identical" in device.outcome("replay").detail
    assert [(f.rule, f.line, f.region) for f in device.findings] == [("GL290", 16, "eager")]
    assert "1 factory allocation(s) inside graphs that replay correctly not reported" in device.outcome("tracer").detail


def test_an_allocation_in_a_graph_that_replays_wrong_stays_reported():
    from graphlint.dynamic.verdicts import settle_graph_allocations
    from graphlint.finding import Finding

    def found(rule):
        return Finding(rule, rule, "allocation", "warning", "eng.py", 3, 0, "m", source="dynamic", device="cuda:0",
                       region="graph")

    result = DeviceResult("cuda:0", findings=[found("GL290"), found("GL391")],
                          probes=[ProbeOutcome("replay", "ran", "first mismatch at step 2")],
                          capture={"graph": {"status": "captured", "detail": ""}})
    assert [f.rule for f in settle_graph_allocations(result).findings] == ["GL290", "GL391"]
    result.findings, result.capture["graph"]["status"] = [found("GL290")], "stale"
    assert [f.rule for f in settle_graph_allocations(result).findings] == ["GL290"]
    result.capture["graph"]["status"] = "captured"
    result.findings = [found("GL290").with_(regions=("graph", "attention"))]  # also ran eagerly
    assert [f.rule for f in settle_graph_allocations(result).findings] == ["GL290"]


ABORTS = (
    "import os, signal, sys\nimport torch\nfrom graphlint.dynamic.target import Region\n\n\n"
    "class Aborts:\n"
    "    def __init__(self, devices, at):\n"
    "        self.devices, self.out, self.step, self.at = devices, torch.zeros(2), 0, at\n"
    "    def stage(self, step):\n"
    "        self.step = step\n"
    "    def body(self):\n"
    "        if self.step == self.at:\n"
    "            sys.stderr.write('eng.cu:12: lookup: block: [0,0,0], thread: [1,0,0] Assertion `i < n` failed.\\n')\n"
    "            os.kill(os.getpid(), signal.SIGABRT)\n"
    "        self.out.add_(1)\n"
    "    def regions(self):\n"
    "        return [Region('body', self.body, capturable=False)]\n"
    "    def output(self):\n"
    "        return self.out\n\n\n"
    "def make_target(devices, at=5):\n"
    "    return Aborts(devices, at)\n")


@pytest.mark.slow
def test_a_graph_worker_that_dies_in_the_soak_keeps_what_it_saw_before(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    (tmp_path / "aborts.py").write_text(ABORTS)
    job = {"target": f"{tmp_path / 'aborts.py'}:make_target", "options": {"at": 12}, "devices": ["cpu"], "label": "cpu",
           "phase": "graph", "replay_steps": 8, "soak_steps": 20}
    result = run_module._worker(job)
    assert result.capture == {"body": {"status": "eager", "detail": "deliberately eager"}}
    assert result.outcome("replay").status == "ran" and "identical" in result.outcome("replay").detail
    soak = result.outcome("soak")
    assert soak.status == "error" and soak.detail.startswith("worker killed by SIGABRT at step 12 in body of the eager instance during soak")


@pytest.mark.slow
def test_a_worker_that_dies_is_a_crash_with_its_step_and_cause(tmp_path, monkeypatch):
    """A real worker process killed by SIGABRT mid-soak: the parent reads its progress file and output."""
    monkeypatch.chdir(ROOT)
    target = tmp_path / "aborts.py"
    target.write_text(
        "import os, signal, sys\nimport torch\nfrom graphlint.dynamic.target import Region\n\n\n"
        "class Aborts:\n"
        "    def __init__(self, devices):\n"
        "        self.devices, self.out, self.step = devices, torch.zeros(2), 0\n"
        "    def stage(self, step):\n"
        "        self.step = step\n"
        "    def body(self):\n"
        "        if self.step == 5:\n"
        "            sys.stderr.write('eng.cu:12: lookup: block: [0,0,0], thread: [1,0,0] Assertion `i < n` failed.\\n')\n"
        "            os.kill(os.getpid(), signal.SIGABRT)\n"
        "        self.out.add_(1)\n"
        "    def regions(self):\n"
        "        return [Region('body', self.body)]\n"
        "    def output(self):\n"
        "        return self.out\n\n\n"
        "def make_target(devices):\n"
        "    return Aborts(devices)\n")
    job = {"target": f"{target}:make_target", "options": {}, "devices": ["cpu"], "label": "cpu", "phase": "reference",
           "steps": 10, "records_dir": str(tmp_path)}
    result = run_module._worker(job)
    (outcome,) = result.probes
    assert outcome.status == "error"
    assert outcome.detail.startswith("worker killed by SIGABRT at step 5 in body during reference: "
                                     "device-side assert in lookup (eng.cu:12): Assertion `i < n` failed.")
    assert f"(last project frame {target}:14 in body)" in outcome.detail


def test_the_diagnostic_switches_restore_the_one_process_soak_and_drop_the_profiler(jobs, monkeypatch):
    monkeypatch.setenv("GRAPHLINT_SOAK_REFERENCE", "here")
    monkeypatch.setenv("GRAPHLINT_LAUNCH_WATCH", "0")
    _inv, device = _inventory("plain_module.py")
    assert sorted(j["phase"] for j in jobs) == ["graph", "trace"]
    graph = next(j for j in jobs if j["phase"] == "graph")
    assert graph["reference"] == "here" and graph["watch_launches"] is False
    assert device.outcome("soak").status == "ran" and device.soak["steps"] == 24


def test_a_rerun_dying_of_the_same_assert_quotes_it_once(monkeypatch):
    """The H200 report of 2026-12-03: the soak and its CUDA_LAUNCH_BLOCKING re-run die of the one
    assert; the note names the re-run's step, region and line and does not repeat the message."""
    message = "device-side assert in indexSelectSmallIndex (Indexing.cu:1515): Assertion `srcIndex < n` failed."
    monkeypatch.setattr(run_module, "_worker", lambda job, workers=None, env=None: DeviceResult(
        "cuda:0", probes=[ProbeOutcome("reference", "error", "worker killed by SIGABRT at step 32 in lookup during "
                                       f"reference: {message} (last project frame eng.py:33 in lookup)", "eng.py:33")]))
    result = DeviceResult("cuda:0", probes=[ProbeOutcome("soak", "error", "worker killed by SIGABRT at step 32 in "
                                                         f"lookup during soak: {message}")])
    run_module._locate_device_asserts(result, {"phase": "graph", "soak_steps": 64}, run_module._Workers())
    soak = result.outcome("soak")
    assert soak.detail.count("indexSelectSmallIndex") == 1, soak.detail
    assert soak.detail.endswith("re-run eagerly with CUDA_LAUNCH_BLOCKING=1: worker killed by SIGABRT at step 32 in "
                                "lookup during reference: the same device-side assert (last project frame eng.py:33 "
                                "in lookup)"), soak.detail
    assert soak.where == "eng.py:33"


def test_the_fresh_graph_worker_is_started_with_the_others_and_told_to_quit_or_run(monkeypatch, tmp_path):
    """Issue 9 item 7: after failed captures, replay needs a fresh process; it is started with the
    other workers and imports torch and the target while the first graph worker captures, then
    waits for the verdict. Without a failed capture it is told to quit; with one, it runs without it."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    raw, go = [], {}

    def first_graph(job, failed: bool):
        return DeviceResult("cuda:0", meta={"handed_off": "1"} if failed else {},
                            capture={"a": {"status": "failed" if failed else "captured", "detail": "sync"}},
                            probes=[ProbeOutcome("capture", "ran", "0/1"), ProbeOutcome("replay", "skipped", "x")])

    for failed in (False, True):
        raw.clear()

        def fake(job, workers=None, env=None, failed=failed):
            if job.get("standby"):
                raw.append(job)
                result = standby_aware(lambda j, w, e: DeviceResult("cuda:0", capture={"a": {"status": "failed",
                                                                                              "detail": "sync"}},
                                                                   probes=[ProbeOutcome("replay", "ran", "identical")],
                                                                   meta={"ran": repr(j["known_failed"])}))(job)
                go[failed] = open(job["standby"]).read()
                return result
            return first_graph(job, failed)

        monkeypatch.setattr(run_module, "_worker", fake)
        inv = run_module.run_inventory(run_module.Request(target="t.py:make_target", trace=False))
        (standby,) = raw
        assert standby["phase"] == "graph" and standby["watch_launches"] is False and not standby["hand_off_failed"]
        (device,) = inv.devices
        if failed:
            assert device.meta["ran"] == "{'a': 'sync'}" and device.outcome("replay").detail.startswith("identical")
        else:
            assert "ran" not in device.meta and device.capture["a"]["status"] == "captured"
    assert '"cancel": true' in go[False] and '"known_failed": {"a": "sync"}' in go[True]


@pytest.mark.slow
def test_a_standby_worker_process_waits_then_quits_or_runs(tmp_path):
    """The real worker process: its imports done, it waits for the go file; a cancel ends it with
    nothing run, a go runs its phase."""
    import json
    import subprocess
    import sys
    import time

    results = {}
    for verdict in ("cancel", "run"):
        go, job_path, out = tmp_path / f"go-{verdict}", tmp_path / f"job-{verdict}.json", tmp_path / f"out-{verdict}.json"
        job_path.write_text(json.dumps({"target": spec("plain_module.py"), "devices": ["cpu"], "label": "cpu",
                                        "phase": "trace", "standby": str(go)}))
        proc = subprocess.Popen([sys.executable, "-m", "graphlint.dynamic.worker", str(job_path), str(out)], cwd=ROOT)
        time.sleep(1.0)
        assert proc.poll() is None  # waiting, not running
        go.write_text(json.dumps({"cancel": True} if verdict == "cancel" else {"known_failed": {}}))
        assert proc.wait(timeout=120) == 0
        results[verdict] = DeviceResult.from_dict(json.loads(out.read_text()))
    assert results["cancel"].meta["standby"] == "not needed" and not results["cancel"].probes
    assert results["run"].outcome("tracer").status == "ran"


@pytest.mark.slow
def test_a_standby_worker_imports_dynamo_while_it_waits(tmp_path):
    """Dynamo is imported lazily by torch at the first op a dispatch mode sees (4-5 s of the capture
    step on the H200 machine); the standby pays that before its go, even when told to quit."""
    import json
    import subprocess
    import sys

    go = tmp_path / "go"
    go.write_text(json.dumps({"cancel": True}))
    job = {"target": spec("plain_module.py"), "devices": ["cpu"], "label": "cpu", "phase": "trace", "standby": str(go)}
    code = ("import json, sys; from graphlint.dynamic.worker import run_phase; "
            f"result = run_phase(json.loads({json.dumps(json.dumps(job))})); "
            "print(result.meta.get('standby'), 'torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    assert out.stdout.split()[-3:] == ["not", "needed", "True"]


@pytest.mark.slow
def test_the_eager_reference_worker_never_imports_dynamo(tmp_path):
    """Only the phases with dispatch modes import it; the reference, the soak's critical path, does not."""
    import json
    import subprocess
    import sys

    job = {"target": spec("plain_module.py"), "devices": ["cpu"], "label": "cpu", "phase": "reference", "steps": 2}
    code = ("import json, sys; from graphlint.dynamic.worker import run_phase; "
            f"result = run_phase(json.loads({json.dumps(json.dumps(job))})); "
            "print(result.outcome('reference').status, 'torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    assert out.stdout.split()[-2:] == ["ran", "False"]


@pytest.mark.slow
def test_a_standby_worker_timeout_counts_from_its_go_not_while_it_waits(monkeypatch):
    """GRAPHLINT_WORKER_TIMEOUT bounds a worker's work: a standby that waited for a long first graph
    worker is not killed for the wait, and one that runs too long after its go is."""
    import sys
    import time

    monkeypatch.setenv("GRAPHLINT_WORKER_TIMEOUT", "1")
    workers = run_module._Workers()
    sleeper = [sys.executable, "-c", "import time; time.sleep(2.5)"]
    code, output = workers.run(sleeper, {}, "waiting", standby="go-a")  # never told to run: only waited
    assert code == 0 and "TimeoutError" not in output
    workers.released["go-b"] = time.monotonic()
    code, output = workers.run(sleeper, {}, "running", standby="go-b")
    assert code != 0 and "killed after 1 s (GRAPHLINT_WORKER_TIMEOUT)" in output
