"""Run the probes on every selected device and collect one :class:`Inventory`.

Placement ``per-gpu`` (default): the target is built on each GPU alone, in its own worker
processes (one for the tracer, one for capture/replay/soak), all GPUs in parallel; a capture
that poisons a CUDA context takes down only its own process. Placement ``span``: the target
is built once over all selected GPUs (pipeline-parallel engines), in one worker per phase.
Without CUDA everything runs in this process on the CPU: the tracer only, and the other
probes say they were skipped and why.

Decision: when a region's capture fails, replay and soak are measured again in a fresh process
that does not capture that region (it runs eagerly there). A failed capture leaves state behind
in its process -- the target's Python side effects ran without their kernels, and torch 2.11's
caching allocator keeps parts of an abandoned capture (pytorch/pytorch#180395, #190308) -- so
figures taken after one are not evidence (on the H200, decoder tests sharing a pytest process
with a test's failing captures once replayed garbage; not proven to be this). The first process
gives the capture matrix and GL590; the second, which holds no failed capture, gives replay,
soak and timing. (Ranks under torchrun probe in place and cannot do this.)
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from graphlint.dynamic.results import FAILED, DeviceResult, Inventory, ProbeOutcome, merge_findings
from graphlint.dynamic.worker import GRAPH_PROBES, run_phase


@dataclass
class Request:
    target: str
    options: dict[str, Any] = field(default_factory=dict)
    gpus: list[int] | None = None  # None: every visible GPU
    placement: str = "per-gpu"  # or "span"
    soak_steps: int = 0  # 0: no soak
    replay_steps: int = 8
    trace: bool = True
    graph: bool = True
    command: str = ""
    cpu: bool = False  # probe on the CPU even when CUDA is available (tracer only)


def _worker(job: dict) -> DeviceResult:
    with tempfile.TemporaryDirectory(prefix="graphlint-") as tmp:
        job_path, result_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "result.json")
        with open(job_path, "w", encoding="utf-8") as fh:
            json.dump(job, fh)
        proc = subprocess.run([sys.executable, "-m", "graphlint.dynamic.worker", job_path, result_path],
                              capture_output=True, text=True)
        if proc.returncode == 0 and os.path.exists(result_path):
            with open(result_path, encoding="utf-8") as fh:
                return DeviceResult.from_dict(json.load(fh))
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        probes = GRAPH_PROBES if job["phase"] == "graph" else ("tracer", "sync-debug")
        detail = f"worker process died (exit {proc.returncode}): {tail[0][:300]}"
        return DeviceResult(job["label"], probes=[ProbeOutcome(p, "error", detail) for p in probes])


def _jobs(req: Request, cuda: bool, device_count: int) -> list[list[dict]]:
    """One list of phase jobs per worker slot (the slots run in parallel)."""
    base = {"target": req.target, "options": req.options, "replay_steps": req.replay_steps,
            "soak_steps": req.soak_steps}
    if not cuda:
        return [[{**base, "devices": ["cpu"], "label": "cpu", "phase": "trace"}]]
    gpus = req.gpus if req.gpus is not None else list(range(device_count))
    groups = [[f"cuda:{g}" for g in gpus]] if req.placement == "span" else [[f"cuda:{g}"] for g in gpus]
    phases = [p for p, on in (("trace", req.trace), ("graph", req.graph)) if on]
    return [[{**base, "devices": g, "label": ",".join(g), "phase": p} for p in phases] for g in groups]


def _without_failed_captures(job: dict, first: DeviceResult) -> DeviceResult:
    """The graph phase again, in a fresh worker that does not capture the regions that failed."""
    failed = {name: cell["detail"] for name, cell in first.capture.items() if cell["status"] == FAILED}
    if not failed:
        return first
    second = _worker({**job, "known_failed": failed})
    if not second.capture:  # the second worker died or could not build the target: keep the first
        note = "; ".join(p.detail for p in second.probes if p.status == "error")[:300]
        first.note_replay_and_soak(f" (measured after failed captures: a re-run without them failed: {note})")
        return first
    second.findings = merge_findings([f for f in first.findings if f.rule == "GL590"] + second.findings)
    second.note_replay_and_soak(f"; in a fresh process that captured all but the {len(failed)} region(s) whose "
                                "capture failed (they ran eagerly)")
    return second


def validate_gpus(gpus: list[int] | None, device_count: int) -> str:
    """An error message for GPU indices that do not exist, else ''."""
    bad = [g for g in gpus or [] if not 0 <= g < device_count]
    if bad:
        return f"--gpus {','.join(map(str, bad))}: only {device_count} CUDA device(s) visible"
    return ""


def run_inventory(req: Request, on_done: Callable[[str], None] | None = None,
                  on_step: Callable[[str, str, int, int], None] | None = None) -> Inventory:
    """``on_done(what)`` after each phase job; ``on_step(device, probe, step, total)`` as steps run."""
    import torch

    from graphlint.dynamic.progress import Relay

    cuda = torch.cuda.is_available() and not req.cpu
    inv = Inventory(target=req.target, command=req.command, torch=torch.__version__, cuda=cuda,
                    date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    slots = _jobs(req, cuda, torch.cuda.device_count() if cuda else 0)
    results: list[DeviceResult | None] = [None] * len(slots)

    relay = Relay(on_step if cuda else None)  # workers are processes: their steps arrive by file

    def work(i: int) -> None:
        merged = None
        for job in slots[i]:
            part = run_phase(job, on_step) if not cuda else _worker(relay.job(job))
            if cuda and job["phase"] == "graph":
                part = _without_failed_captures(relay.job(job), part)
            merged = part if merged is None else merged.merge(part)
            if on_done:
                on_done(f"{job['label']} {job['phase']}")
        results[i] = merged

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(slots))]
    with relay:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    inv.devices = [r for r in results if r is not None]
    if not cuda:
        why = ("--cpu: " if req.cpu else "no CUDA device: ") + "trial capture, replay and soak need a GPU"
        for dev in inv.devices:
            dev.probes += [ProbeOutcome(p, "skipped", why) for p in GRAPH_PROBES
                           if req.graph and (p != "soak" or req.soak_steps)]
        inv.notes.append(f"Capture skipped: {why}. Only the tracer ran (on the CPU).")
    return inv


def planned_steps(req: Request, cuda: bool, device_count: int) -> int:
    """Steps every device's phases will stage: what the progress bar counts (devices x probes x steps)."""
    from graphlint.dynamic.progress import planned

    return sum(planned(job) for slot in _jobs(req, cuda, device_count) for job in slot)
