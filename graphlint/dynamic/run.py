"""Run the probes on every selected device and collect one :class:`Inventory`.

Placement ``per-gpu`` (default): the target is built on each GPU alone; ``span``: once over all
selected GPUs (pipeline-parallel engines). Per device (or span) the worker processes start at
once: the tracer, the graph worker (capture, replay window, graph half of the soak), when there is
a soak the eager reference (the slow half of the soak), and a standby graph worker that imports and
then waits, in case a capture fails (below); GPUs run in parallel too. A capture
that poisons a CUDA context or a crash takes down only its own process: the parent reads the
worker's progress file and output (:mod:`graphlint.dynamic.crash`) and reports the step, the probe
and the first useful error line; a device-side assert is re-run once, eagerly, with
``CUDA_LAUNCH_BLOCKING=1`` in a fresh worker, which names the line. Without CUDA everything runs in
this process on the CPU: the tracer only, and the other probes say they were skipped and why.

Decision: when a region's capture fails, the graph worker stops after the capture step and replay
and soak are measured in a fresh process that does not capture that region (it runs eagerly
there). A failed capture leaves state behind in its process -- the target's Python side effects
ran without their kernels, and torch 2.11's allocator keeps parts of an abandoned capture
(pytorch/pytorch#180395, #190308) -- and on the H200 (``bench/capture_isolation.py``, 2026-12-02)
both dsv4 graph decoders replayed wrong (max|dlogit| 5.9, argmax 1/16) after six failed captures in
their process and right after a clean one. The first process gives the capture matrix, GL590 and
the kernels that escaped a capture; the second, which holds no failed capture, gives replay, soak
and timing, and captures again any region whose first capture failed only because an earlier one
had ("a previous error during capture": no verdict on the region itself). (Ranks under torchrun
probe in place and cannot do this.)
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from graphlint.dynamic.combine import combine, note_replay_and_soak
from graphlint.dynamic.crash import assert_message, crash_of, is_cascade, read_last_line, read_partial, read_progress
from graphlint.dynamic.gpus import gpu_count
from graphlint.dynamic.verdicts import settle_graph_allocations
from graphlint.dynamic.worker import GRAPH_PROBES, probes_of, run_phase
from graphlint.inventory import FAILED, DeviceResult, Inventory, ProbeOutcome
from graphlint.paths import display_path
from graphlint.rules import runtime_rules


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
    compile: bool = False  # also the torch.compile(mode="reduce-overhead") probe (--probe compile)
    record_dir: str = ""  # inventory --record: each tracing or capturing worker writes its record here


class _Workers:
    """The worker processes of one run: a refused target stops them all at once, a worker that
    outlives ``GRAPHLINT_WORKER_TIMEOUT`` seconds (default 1800) is killed and reported where its
    progress file says it was, and ``GRAPHLINT_VERBOSE=1`` logs each worker's start and end with
    the time since the run began (stderr; for CI logs, where no progress bar is shown)."""

    def __init__(self, relay=None) -> None:
        self.relay = relay  # a graphlint.dynamic.progress.Relay: each worker's steps reach the bar
        self.lock, self.live, self.cancelled = threading.Lock(), set(), False
        self.released: dict[str, float] = {}  # a standby's go file -> when it was told to run
        self.started = time.monotonic()
        self.timeout = float(os.environ.get("GRAPHLINT_WORKER_TIMEOUT", "1800"))
        self.verbose = os.environ.get("GRAPHLINT_VERBOSE", "") not in ("", "0")

    def log(self, text: str) -> None:
        if self.verbose:
            print(f"graphlint: [{time.monotonic() - self.started:6.1f} s] {text}", file=sys.stderr, flush=True)

    def run(self, args: list[str], env: dict[str, str], what: str = "", standby: str = "") -> tuple[int, str]:
        """``standby``: the worker's go file; its timeout counts from the go, not while it waits."""
        with self.lock:
            if self.cancelled:
                return -15, "cancelled: the target was refused"
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            self.live.add(proc)
        self.log(f"{what} worker started (pid {proc.pid})")
        try:
            output = self._communicate(proc, standby)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            output = (output or "") + f"\nTimeoutError: the worker was killed after {self.timeout:.0f} s (GRAPHLINT_WORKER_TIMEOUT)"
        with self.lock:
            self.live.discard(proc)
        self.log(f"{what} worker finished (exit {proc.returncode})")
        return proc.returncode, output or ""

    def _communicate(self, proc: subprocess.Popen, standby: str) -> str:
        if not standby:
            return proc.communicate(timeout=self.timeout)[0]
        while True:
            try:
                return proc.communicate(timeout=0.5)[0]  # retried: no output is lost
            except subprocess.TimeoutExpired:
                released = self.released.get(standby)
                if released is not None and time.monotonic() - released > self.timeout:
                    raise

    def cancel(self) -> None:
        with self.lock:
            self.cancelled = True
            for proc in self.live:
                proc.kill()


def _worker(job: dict, workers: _Workers | None = None, env: dict[str, str] | None = None) -> DeviceResult:
    """One phase in a fresh ``python -X faulthandler`` process; a death becomes a crash outcome."""
    from graphlint.dynamic.frames import is_project_file

    workers = workers or _Workers()
    if workers.relay is not None:
        job = workers.relay.job(job)
    with tempfile.TemporaryDirectory(prefix="graphlint-") as tmp:
        job = {**job, "progress": os.path.join(tmp, "progress.json")}
        if job.get("locate"):
            job["last_line"] = os.path.join(tmp, "last-line")
        job_path, result_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "result.json")
        with open(job_path, "w", encoding="utf-8") as fh:
            json.dump(job, fh)
        code, output = workers.run([sys.executable, "-X", "faulthandler", "-m", "graphlint.dynamic.worker", job_path,
                                    result_path], {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                                   f"{job['label']} {job['phase']}" + (" (CUDA_LAUNCH_BLOCKING=1)" if env else "")
                                   + (" standby" if job.get("standby") else ""), job.get("standby", ""))
        result = _result_file(result_path)  # written even if the process then died (a dead context at exit)
        if result is not None:
            message = assert_message(output)
            if message:  # the device printed the assert; the Python error only says "device-side assert"
                result.meta["device_assert"] = message
            return result
        last_line = read_last_line(job["last_line"]) if job.get("last_line") else None
        crash = crash_of(code, output, read_progress(job["progress"]), is_project_file, last_line)
        kept = read_partial(job["progress"])
    if crash.where:
        crash = replace(crash, where=(display_path(crash.where[0]), *crash.where[1:]))
    where = f"{crash.where[0]}:{crash.where[1]}" if crash.where else ""
    detail = crash.describe()
    result = DeviceResult.from_dict(kept) if kept else DeviceResult(job["label"])
    probes = [p for p in probes_of(job["phase"]) if not result.outcome(p) and (p != "soak" or job.get("soak_steps"))]
    died = crash.probe if crash.probe in probes else probes[0] if probes else ""
    result.probes += [ProbeOutcome(p, "error", detail if p == died else f"not run: the worker died during {died}", where)
                      for p in probes]
    return result


def _result_file(path: str) -> DeviceResult | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return DeviceResult.from_dict(json.load(fh))
    except (OSError, ValueError, TypeError):
        return None


class _Standby:
    """The fresh graph worker that replay needs after failed captures, started with the others: it
    imports torch and the target while the first graph worker captures, then waits for its verdict
    (a file). It builds nothing before it is needed (an engine's instances stay off the GPU), and
    it is told to quit when no capture failed. Unlike the first graph worker it runs no profiler
    (the first counted the kernels that escaped a capture) and hands no failure off again."""

    def __init__(self, pool: ThreadPoolExecutor, graph_job: dict, workers: _Workers, directory: str) -> None:
        self.path, self.sent, self.workers = os.path.join(directory, "standby-go"), False, workers
        job = {**graph_job, "watch_launches": False, "hand_off_failed": False, "standby": self.path}
        self.future = pool.submit(_worker, job, workers)

    def run(self, known_failed: dict[str, str]) -> DeviceResult:
        self._send({"known_failed": known_failed})
        return self.future.result()

    def cancel(self) -> None:
        if not self.sent:
            self._send({"cancel": True})

    def _send(self, go: dict) -> None:
        with open(self.path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(go, fh)
        os.replace(self.path + ".tmp", self.path)  # the worker reads it whole or not at all
        self.sent = True
        self.workers.released[self.path] = time.monotonic()


def _without_failed_captures(first: DeviceResult, standby: _Standby) -> DeviceResult:
    """The graph phase again, in the standby worker, which does not capture the regions that failed."""
    failures = {name: cell["detail"] for name, cell in first.capture.items() if cell["status"] == FAILED}
    if not failures or not first.meta.get("handed_off"):
        return first
    # a capture that failed only because an earlier one had is tried again there, where it is first
    failed = {name: detail for name, detail in failures.items() if not is_cascade(detail)}
    retried = [name for name in failures if name not in failed]
    second = standby.run(failed)
    if not second.capture:  # the second worker died or could not build the target: keep the first
        note = "; ".join(p.detail for p in second.probes if p.status == "error")[:300]
        first.probes = [ProbeOutcome(p.probe, "error", f"a fresh process without the failed captures failed: {note}")
                        if p.probe in ("replay", "soak") else p for p in first.probes]
        return first
    # what only the first process saw, but not the cascades: their verdict is the second process's
    kept = [f for f in first.findings if f.rule in ("GL590", "GL593") and f.region not in retried]
    second.findings = kept + second.findings
    # the capture counts are the first process's, unless it re-captured cascades (then its own)
    second.probes = [(_with_retried(p, retried, second.capture) if retried else first.outcome("capture") or p)
                     if p.probe == "capture" else p for p in second.probes]
    failed_again = [name for name in retried if second.capture.get(name, {}).get("status") == FAILED]
    note_replay_and_soak(second, f"; in a fresh process that captured all but the {len(failed)} region(s) whose "
                                "capture failed (they ran eagerly)"
                         + (f", where re-capturing {', '.join(failed_again)} failed again, which can leave state "
                            "behind; fix it first, then re-run" if failed_again else ""))
    second.seconds.update({f"first {k}": v for k, v in first.seconds.items()})
    return second


def _with_retried(outcome: ProbeOutcome, retried: list[str], capture: dict) -> ProbeOutcome:
    """The second process's capture outcome, saying which cascades it re-captured."""
    verdicts = ", ".join(f"{name} {capture.get(name, {}).get('status', '?')}" for name in retried)
    return ProbeOutcome(outcome.probe, outcome.status, f"{outcome.detail}; re-captured in a fresh process, because "
                        f"their first capture failed only after an earlier one had: {verdicts}", outcome.where)


_STEP = re.compile(r"at step (\d+)")


def _locate_device_asserts(result: DeviceResult, job: dict, workers: _Workers) -> None:
    """A device-side assert says nothing about where: re-run the steps up to it eagerly, with
    ``CUDA_LAUNCH_BLOCKING=1``, in a fresh worker; the eager op that fails names the line."""
    failing = [p for p in result.probes if p.status == "error" and "device-side assert" in p.detail.lower()]
    if not failing:
        return
    message = result.meta.get("device_assert", "")
    if message:  # the device printed what failed; the Python error only says "device-side assert triggered"
        result.probes = [ProbeOutcome(p.probe, p.status, f"{p.detail} [{message}]", p.where)
                         if p in failing and message not in p.detail else p for p in result.probes]
        failing = [p for p in result.probes if p.status == "error" and "device-side assert" in p.detail.lower()]
    steps = [int(m.group(1)) for p in failing for m in [_STEP.search(p.detail)] if m]
    upto = (min(steps) if steps else job.get("soak_steps") or job.get("replay_steps", 8)) + 1
    # no stop file: the graph worker's (which its death has just created) would stop it at step 0
    rerun = _worker({**job, "phase": "reference", "steps": upto, "records_dir": "", "stop_file": "", "locate": True},
                    workers, {"CUDA_LAUNCH_BLOCKING": "1"})
    outcome = rerun.outcome("reference")
    if outcome is None:
        note = "re-run eagerly with CUDA_LAUNCH_BLOCKING=1 did not report"
    elif outcome.status == "error":
        detail = _same_error(outcome.detail, [p.detail for p in failing])
        note = f"re-run eagerly with CUDA_LAUNCH_BLOCKING=1: {detail}"
    elif outcome.detail != f"eager instance, steps 0-{upto - 1}":  # capped or stopped: no verdict
        note = f"re-run eagerly with CUDA_LAUNCH_BLOCKING=1 did not reach step {upto - 1}: {outcome.detail}"
    else:
        note = (f"re-run eagerly with CUDA_LAUNCH_BLOCKING=1: steps 0-{upto - 1} ran without an error, so the "
                "assert comes from a graph replay (a stale or freed buffer read by a graph)")
    where = outcome.where if outcome is not None else ""
    result.probes = [ProbeOutcome(p.probe, p.status, f"{p.detail}; {note}", p.where or where) if p in failing else p
                     for p in result.probes]


def _same_error(detail: str, first: list[str]) -> str:
    """The re-run's detail with an error the first report already quotes said as "the same
    device-side assert" (on the H200 both die of the one assert, and the note read it twice)."""
    error = detail.split(": ", 1)[1].split(" (last project frame")[0] if ": " in detail else ""
    if error and any(error in text for text in first):
        return detail.replace(error, "the same device-side assert", 1)
    return detail


def _jobs(req: Request, cuda: bool, device_count: int) -> list[dict]:
    """One base job per worker slot (a GPU, or the span of GPUs); the slots run in parallel."""
    base = {"target": req.target, "options": req.options, "replay_steps": req.replay_steps,
            "soak_steps": req.soak_steps}
    if not cuda:
        return [{**base, "devices": ["cpu"], "label": "cpu"}]
    gpus = req.gpus if req.gpus is not None else list(range(device_count))
    groups = [[f"cuda:{g}" for g in gpus]] if req.placement == "span" else [[f"cuda:{g}"] for g in gpus]
    return [{**base, "devices": g, "label": ",".join(g)} for g in groups]


def _slot(req: Request, base: dict, records: str, workers: _Workers, on_done) -> DeviceResult:
    # GRAPHLINT_SOAK_REFERENCE=here: the eager instance soaks inside the graph worker (one process,
    # slower); GRAPHLINT_LAUNCH_WATCH=0: no profiler around captures. Switches for diagnosing a run.
    soaking = (req.graph and req.soak_steps > req.replay_steps
               and os.environ.get("GRAPHLINT_SOAK_REFERENCE", "") != "here")
    directory = tempfile.mkdtemp(prefix=base["label"].replace(":", "").replace(",", "_") + "-", dir=records)
    stop = os.path.join(directory, "stop-reference")
    graph_job = {**base, "phase": "graph", "hand_off_failed": True, "records_dir": directory,
                 "reference": "elsewhere" if soaking else "here", "stop_file": stop,
                 "watch_launches": os.environ.get("GRAPHLINT_LAUNCH_WATCH", "1") != "0"}
    graph_job = _recording(graph_job, req)
    with ThreadPoolExecutor(max_workers=4) as pool:
        trace = pool.submit(_worker, _recording({**base, "phase": "trace"}, req), workers) if req.trace else None
        compiled = pool.submit(_worker, {**base, "phase": "compile"}, workers) if req.compile else None
        reference = (pool.submit(_worker, {**base, "phase": "reference", "steps": req.soak_steps,
                                           "records_dir": directory, "stop_file": stop}, workers) if soaking else None)
        graph = None
        if req.graph:
            standby = _Standby(pool, graph_job, workers, directory)
            try:
                graph = _without_failed_captures(_worker(graph_job, workers), standby)
            finally:
                standby.cancel()
            if "graph_idle_from" in graph.meta or not graph.records.get("soak"):
                open(stop, "w").close()  # no graph left to compare with: the eager reference can stop
            on_done(f"{base['label']} capture, replay")
        eager = reference.result() if reference else None
        if graph is not None:
            from graphlint.dynamic.graph_report import finish_soak  # imports torch: after the workers started

            finish_soak(graph, eager, runtime_rules())
            if eager is not None and eager.meta.get("device_assert"):
                graph.meta.setdefault("device_assert", eager.meta["device_assert"])
            _locate_device_asserts(graph, graph_job, workers)
            if eager is not None:
                graph.seconds.update({k if k.startswith("reference") else f"reference {k}": v for k, v in eager.seconds.items()})
        parts = [p for p in (trace.result() if trace else None, graph, compiled.result() if compiled else None)
                 if p is not None]
        if trace:
            on_done(f"{base['label']} tracer")
    return settle_graph_allocations(combine(parts))


def run_inventory(req: Request, on_done: Callable[[str], None] | None = None,
                  on_step: Callable[[str, str, int, int], None] | None = None,
                  preflight: Callable[[], None] | None = None) -> Inventory:
    """``on_done(what)`` after each worker slot's phase; ``on_step(device, probe, step, total)`` as
    steps are staged (from worker processes through :class:`graphlint.dynamic.progress.Relay`).
    ``preflight`` runs in this process while the workers start (a check that may refuse the
    target: it raises, the workers are stopped, and the error propagates). The workers are started
    before this process imports torch (NVML counts the GPUs), so that import overlaps theirs."""
    count = 0 if req.cpu else gpu_count()
    on_done = on_done or (lambda _what: None)
    from graphlint.dynamic.progress import Relay

    relay = Relay(on_step if count else None)
    workers, records = _Workers(relay if count else None), tempfile.mkdtemp(prefix="graphlint-records-")
    relay.__enter__()
    pool = ThreadPoolExecutor(max_workers=max(1, len(_jobs(req, True, count)))) if count else None
    try:
        futures = [pool.submit(_slot, req, base, records, workers, on_done) for base in _jobs(req, True, count)] \
            if pool else []
        try:
            import torch

            cuda = bool(futures) and torch.cuda.is_available()
            if futures and not cuda:  # NVML sees a GPU this torch cannot use (a CPU build)
                workers.cancel()
            if preflight:
                preflight()
        except BaseException:
            workers.cancel()
            raise
        inv = Inventory(target=req.target, command=req.command, torch=torch.__version__, cuda=cuda,
                        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        if cuda:
            inv.devices = [f.result() for f in futures]
            return inv
        (base,) = _jobs(req, False, 0)
        phases = [run_phase(_recording({**base, "phase": "trace"}, req), on_step)]
        if req.compile:
            phases.append(run_phase({**base, "phase": "compile"}))
        inv.devices = [combine(phases)]
        on_done("cpu tracer")
        why = ("--cpu: " if req.cpu else "no CUDA device: ") + "trial capture, replay and soak need a GPU"
        for dev in inv.devices:
            dev.probes += [ProbeOutcome(p, "skipped", why) for p in GRAPH_PROBES
                           if req.graph and (p != "soak" or req.soak_steps)]
        inv.notes.append(f"Capture skipped: {why}. Only the tracer ran (on the CPU).")
        return inv
    finally:
        if pool:
            pool.shutdown(wait=True)
        relay.__exit__(None, None, None)
        shutil.rmtree(records, ignore_errors=True)


def _recording(job: dict, req: Request) -> dict:
    """The job with the file its recorder writes (``inventory --record``; see :mod:`.declared`)."""
    name = f"{job['label']}-{job['phase']}.json".replace(":", "").replace(",", "_")
    return {**job, "record_file": os.path.join(req.record_dir, name)} if req.record_dir else job


def planned_steps(req: Request, cuda: bool, device_count: int) -> int:
    """Steps every device's phases will stage: what the progress bar counts (devices x probes x
    steps). Per slot: the tracer's steps, and the graph worker's window or soak, whichever is longer
    (the eager reference stages the same steps; the bar counts the furthest of the two)."""
    from graphlint.dynamic.progress import TRACED_STEPS

    graph = max(req.replay_steps, req.soak_steps) if req.graph and cuda else 0
    return len(_jobs(req, cuda, device_count)) * ((TRACED_STEPS if req.trace else 0) + graph)
