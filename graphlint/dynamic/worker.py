"""Probe one device (or one span of devices): the body of a per-GPU worker process.

``python -X faulthandler -m graphlint.dynamic.worker JOB.json RESULT.json`` runs one phase and
writes a :class:`DeviceResult`. Phases: ``trace`` (tracer + sync-debug; it switches on
``torch.cuda._gpu_trace``, which cannot be switched off, so it never shares a process with
captures), ``graph`` (capture, replay, the graph half of the soak), ``reference`` (the eager
half of the soak, see :mod:`graphlint.dynamic.reference`) and ``compile`` (``--probe compile``). A phase that raises reports the error
as its probes' outcome; one that kills the process leaves its progress file and ``faulthandler``
stack for the parent (:mod:`graphlint.dynamic.crash`).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any, Callable

from graphlint.dynamic import declared
from graphlint.dynamic.combine import combine
from graphlint.inventory import DeviceResult, ProbeOutcome
from graphlint.rules import runtime_rules

TRACE_PROBES = ("tracer", "sync-debug")
GRAPH_PROBES = ("capture", "replay", "soak")
# Phases whose dispatch modes (the tracer, the address watch) make torch import ``torch._dynamo``
# at the first op they see: 4-5 s on the H200 machines, hidden in the capture step's time. Imported
# with the other imports it is counted as one, and a standby graph worker pays it while it waits.
DISPATCH_PHASES = ("trace", "graph")


def probes_of(phase: str) -> tuple[str, ...]:
    return {"graph": GRAPH_PROBES, "trace": TRACE_PROBES, "reference": ("reference",), "compile": ("compile",)}[phase]


def _meta(devices) -> dict[str, str]:
    import torch

    meta = {"torch": torch.__version__}
    cuda = [d for d in devices if torch.device(d).type == "cuda"]
    if cuda:
        try:
            meta["gpu"] = torch.cuda.get_device_name(torch.device(cuda[0]))
        except Exception:  # noqa: BLE001 - a context killed by a device-side assert answers nothing
            meta["gpu"] = "?"
    return meta


def _own_modules() -> list[str]:
    """Source files of the target's own modules loaded in this process (for the static cross-check)."""
    from graphlint.dynamic.frames import is_own_file
    from graphlint.paths import display_path

    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    return sorted(display_path(f) for f in files if f and f.endswith(".py") and is_own_file(f))


def _run(job: dict, devices, factory, rules, progress):
    label, phase, options = job["label"], job["phase"], job.get("options", {})
    if phase == "graph":
        from graphlint.dynamic.graph_probe import GraphProbe
        from graphlint.dynamic.graph_report import graph_result, partial

        reference = job.get("reference", "here")
        probe = GraphProbe(factory, devices, options, rules, label, job.get("known_failed"),
                           watch_launches=job.get("watch_launches", True), progress=progress,
                           on_window=lambda record: progress.snapshot(partial(record)))
        record = probe.run(job.get("replay_steps", 8), job.get("soak_steps", 0), reference=reference,
                           hand_off_failed=job.get("hand_off_failed", False), stop_file=job.get("stop_file", ""))
        return graph_result(record, reference, job.get("records_dir", ""))
    if phase == "reference":
        from graphlint.dynamic.reference import run_reference

        return run_reference(factory, devices, options, job["steps"], label, records_dir=job.get("records_dir", ""),
                             progress=progress, stop_file=job.get("stop_file", ""))
    if phase == "compile":
        from graphlint.dynamic.compile_probe import run_compile_probe

        return run_compile_probe(factory, devices, options, label, progress)
    from graphlint.dynamic.tracer import trace_phase

    progress("tracer")
    return trace_phase(factory, devices, options, rules, label)


def await_go(job: dict) -> dict | None:
    """A standby graph worker (see ``run._Standby``) waits here, its imports done, for the first graph
    worker's verdict: the job to run (with ``known_failed``), or ``None`` when it is not needed (or
    its parent died: it never outlives the run)."""
    path = job.get("standby")
    if not path:
        return job
    parent = os.getppid()
    while not os.path.exists(path):
        if os.getppid() != parent:
            return None
        time.sleep(0.02)
    with open(path, encoding="utf-8") as fh:
        go = json.load(fh)
    job = {k: v for k, v in job.items() if k != "standby"}
    return None if go.get("cancel") else {**job, "known_failed": go["known_failed"]}


def run_phase(job: dict, on_step=None) -> DeviceResult:
    """``on_step(label, probe, step, total)`` hears each step staged (in a worker process: the
    job's ``progress_file`` does; see :mod:`graphlint.dynamic.progress`)."""
    started = time.perf_counter()
    import torch

    from graphlint.dynamic import progress as steps
    from graphlint.dynamic.crash import Progress
    from graphlint.dynamic.project import add_root, target_roots
    from graphlint.dynamic.target import TargetError, load_factory

    label, phase = job["label"], job["phase"]
    devices = [torch.device(d) for d in job["devices"]]
    probes = probes_of(phase)
    progress = Progress(job.get("progress"))
    try:
        progress("startup")
        if devices[0].type == "cuda":
            torch.cuda.set_device(devices[0])  # the engine's GPU is current, as in a per-GPU serving process
        rules = runtime_rules()
        for root in target_roots(job["target"])[0]:
            add_root(root)
        sink = steps.file_sink(job["progress_file"]) if job.get("progress_file") else on_step
        factory = steps.watch(load_factory(job["target"]), job, sink)
        if phase in DISPATCH_PHASES:
            import torch._dynamo  # noqa: F401 - see DISPATCH_PHASES
        imported = time.perf_counter()
        if job.get("standby"):
            job = await_go(job)
            if job is None:
                return DeviceResult(label, meta={"standby": "not needed"})
            waited, imported = time.perf_counter() - imported, time.perf_counter()
            started += waited  # its imports overlapped the first graph worker: they are not this run's time
        lines = _last_line(job)
        recording = bool(job.get("record_file")) and phase in ("graph", "trace")
        if recording:  # inventory --record (see graphlint.dynamic.declared)
            declared.begin()
        try:
            result = _run(job, devices, factory, rules, progress)
        finally:
            if lines is not None:
                lines.stop()
            if recording:
                declared.finish(job["record_file"])
        result.seconds = {"imports": imported - started, **result.seconds}
    except TargetError as exc:  # the factory refused its options: the CLI turns this into exit 2
        result = DeviceResult(label, probes=[ProbeOutcome(p, "error", f"TargetError: {exc}") for p in probes],
                              meta={"target_error": str(exc)})
    except Exception as exc:
        result = crashed(label, probes, exc)
    if phase == "graph" and not job.get("soak_steps"):
        result.probes = [p for p in result.probes if p.probe != "soak"]
    result.meta.update(_meta(devices))
    result.modules = _own_modules()
    result.seconds[f"{phase} worker"] = time.perf_counter() - started
    progress("done")
    return combine([result])


def _last_line(job: dict):
    """The line recorder of a locating re-run (see :class:`graphlint.dynamic.crash.LastLine`)."""
    if not job.get("last_line"):
        return None
    from graphlint.dynamic.crash import LastLine
    from graphlint.dynamic.frames import is_project_file

    lines = LastLine(job["last_line"], is_project_file)
    lines.start()
    return lines


def crashed(label: str, probes, exc: BaseException) -> DeviceResult:
    """A phase that raised: each probe's outcome is the error, located at the target's own line
    (not torch's or graphlint's). The pytest fixture reports in-process crashes the same way."""
    from graphlint.dynamic.frames import error_line, traceback_user_frame

    user = traceback_user_frame(exc.__traceback__)
    where = traceback.extract_tb(exc.__traceback__)[-1]
    at = f"{user.path}:{user.line}" if user else f"{where.filename}:{where.lineno}"
    return DeviceResult(label, probes=[ProbeOutcome(p, "error", f"{error_line(exc)} (at {at})", at) for p in probes])


def run_job_file(argv: list[str], run: Callable[[dict], Any]) -> None:
    """A worker process's entry (probe phases, zoo architectures): the job from the first file,
    ``run(job)``'s JSON to the second, whole or absent, whatever happens at exit."""
    job_path, result_path = argv
    with open(job_path, encoding="utf-8") as fh:
        job = json.load(fh)
    result = run(job)
    with open(result_path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=str)
    os.replace(result_path + ".tmp", result_path)


def main(argv: list[str]) -> int:
    run_job_file(argv, lambda job: run_phase(job).to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
