"""Probe one device (or one span of devices): the body of a per-GPU worker process.

``python -m graphlint.dynamic.worker JOB.json RESULT.json`` runs one phase and writes a
:class:`DeviceResult`. Phases: ``trace`` (tracer + sync-debug; it switches on
``torch.cuda._gpu_trace``, which cannot be switched off, so it never shares a process with
captures) and ``graph`` (capture, replay, soak). A phase that crashes reports the crash as
its probes' outcome instead of taking the inventory down with it.
"""

from __future__ import annotations

import json
import sys
import traceback

from graphlint.dynamic.results import DeviceResult, ProbeOutcome, runtime_rules

TRACE_PROBES = ("tracer", "sync-debug")
GRAPH_PROBES = ("capture", "replay", "soak")


def _meta(devices) -> dict[str, str]:
    import torch

    meta = {"torch": torch.__version__}
    cuda = [d for d in devices if torch.device(d).type == "cuda"]
    if cuda:
        meta["gpu"] = torch.cuda.get_device_name(torch.device(cuda[0]))
    return meta


def run_phase(job: dict, on_step=None) -> DeviceResult:
    """``on_step(label, probe, step, total)`` hears each step staged (in a worker process: the
    job's ``progress_file`` does; see :mod:`graphlint.dynamic.progress`)."""
    import torch

    from graphlint.dynamic import progress

    from graphlint.dynamic.target import TargetError, load_factory

    label, phase = job["label"], job["phase"]
    devices = [torch.device(d) for d in job["devices"]]
    probes = GRAPH_PROBES if phase == "graph" else TRACE_PROBES
    try:
        if devices[0].type == "cuda":
            torch.cuda.set_device(devices[0])  # the engine's GPU is current, as in a per-GPU serving process
        rules = runtime_rules()
        sink = progress.file_sink(job["progress_file"]) if job.get("progress_file") else on_step
        factory = progress.watch(load_factory(job["target"]), job, sink)
        if phase == "graph":
            from graphlint.dynamic.replay import run_graph_phase

            result = run_graph_phase(factory, devices, job.get("options", {}), rules, label,
                                     replay_steps=job.get("replay_steps", 8), soak_steps=job.get("soak_steps", 0),
                                     known_failed=job.get("known_failed"))
        else:
            from graphlint.dynamic.tracer import trace_phase

            result = trace_phase(factory, devices, job.get("options", {}), rules, label)
    except TargetError as exc:  # the factory refused its options: the CLI turns this into exit 2
        result = DeviceResult(label, probes=[ProbeOutcome(p, "error", f"TargetError: {exc}") for p in probes],
                              meta={"target_error": str(exc)})
    except Exception as exc:
        result = crashed(label, probes, exc)
    if phase == "graph" and not job.get("soak_steps"):
        result.probes = [p for p in result.probes if p.probe != "soak"]
    result.meta.update(_meta(devices))
    return result


def crashed(label: str, probes, exc: BaseException) -> DeviceResult:
    """A phase that raised: each probe's outcome is the error, located at the target's own line
    (not torch's or graphlint's). The pytest fixture reports in-process crashes the same way."""
    from graphlint.dynamic.frames import error_line, traceback_user_frame

    detail = error_line(exc)
    user = traceback_user_frame(exc.__traceback__)
    where = traceback.extract_tb(exc.__traceback__)[-1]
    detail += f" (at {user.path}:{user.line})" if user else f" (at {where.filename}:{where.lineno})"
    return DeviceResult(label, probes=[ProbeOutcome(p, "error", detail) for p in probes])


def main(argv: list[str]) -> int:
    job_path, result_path = argv
    with open(job_path, encoding="utf-8") as fh:
        job = json.load(fh)
    result = run_phase(job)
    with open(result_path, "w", encoding="utf-8") as fh:
        json.dump(result.to_dict(), fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
