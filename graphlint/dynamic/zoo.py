"""``graphlint zoo``: the inventory, once per transformers architecture, several at a time.

Each architecture is one inventory of ``graphlint.targets.hf:make_target --option arch=NAME``
(its config's defaults shrunk, :mod:`graphlint.targets.hf_config`), run by the same machinery as
``graphlint inventory`` (:func:`graphlint.dynamic.run.run_inventory`: tracer, graph and eager
workers, the standby after failed captures, crash reports) in a process of its own, the *arch
process*, started in a session of its own. So an architecture that crashes its workers, or hangs,
is a row: the parent kills the whole session at the per-architecture timeout (or when the
zoo's ``budget`` runs out) and says where it was, from the progress file the arch process keeps.
Nothing here decides what a result means (:mod:`graphlint.zoo` does) or renders it.

The arch process also runs two steps of its own instance under ``sys.setprofile`` and records
every function of an installed library that the step called (``ran``): the entries of the static
cross-reference into library files, which the inventory's own cross-reference skips.

Decisions: ``jobs`` architectures at once (default: half the CPUs, at most 6 on a GPU, since each
runs up to five processes; all CPUs, at most 8, with ``--cpu``), each worker limited to
``cpus / jobs`` intra-op threads; ``OMP_NUM_THREADS`` set by the user wins. Architectures run in
:data:`PRIORITY` order (the families people deploy first, then the rest alphabetically), so a
budget that runs out leaves the long tail, not llama, unrun.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

TARGET = "graphlint.targets.hf:make_target"
#: Run first (those installed), in this order; then every other architecture alphabetically.
PRIORITY = ("llama", "qwen3", "mixtral", "qwen3_moe", "gemma2", "deepseek_v3", "mistral", "qwen2", "qwen2_moe",
            "gemma", "gemma3_text", "phi3", "deepseek_v2", "gpt_oss", "qwen3_next", "olmo2", "olmoe", "granite",
            "granitemoe", "phimoe", "cohere2", "glm4_moe", "falcon_h1", "jamba", "mamba2", "minimax", "starcoder2",
            "gpt2", "gpt_neox", "stablelm", "phi", "falcon", "mamba", "dbrx", "exaone4", "ernie4_5_moe", "smollm3",
            "llama4_text", "hunyuan_v1_moe", "dots1", "bitnet", "helium", "nemotron", "apertus", "seed_oss")


@dataclass
class ZooRequest:
    archs: list[str]
    steps: int = 64  # soak length: graph against eager over this many decode steps
    jobs: int = 0  # architectures at once; 0: see the module doc
    timeout: float = 300.0  # seconds per architecture
    budget: float = 0.0  # seconds for the whole zoo; 0: none
    cpu: bool = False  # tracer only, on the CPU
    options: dict[str, Any] = field(default_factory=dict)  # more target options: batch, dtype, cache, max_len
    gpus: list[int] | None = None  # architectures go round-robin over these (default: GPU 0)
    command: str = ""


@dataclass
class ArchRun:
    """What the parent learned about one architecture."""

    arch: str
    status: str  # "done", "crashed", "timed out", "not run"
    seconds: float = 0.0
    result: dict[str, Any] = field(default_factory=dict)  # the arch process's JSON (see run_one)
    detail: str = ""  # crashed / timed out / not run: why, and where it was

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ordered(archs: list[str]) -> list[str]:
    first = [a for a in PRIORITY if a in archs]
    return first + sorted(a for a in archs if a not in first)


def default_jobs(cpu: bool, cpus: int | None = None) -> int:
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(8, cpus)) if cpu else max(1, min(6, cpus // 2))


OBSERVE_TIMEOUT = 90.0  # seconds the arch process waits, after its inventory, for the observing thread
BUDGET_MARGIN = 45.0  # an architecture is not started with less of the budget left: it could not finish

Event = Callable[[str, str, dict], None]  # (arch, "start" | "step" | "done", payload)


def run_zoo(req: ZooRequest, on_event: Event | None = None) -> list[ArchRun]:
    """Every architecture of ``req`` (in :func:`ordered` order), ``req.jobs`` at a time."""
    on_event = on_event or (lambda arch, what, payload: None)
    jobs = req.jobs or default_jobs(req.cpu)
    archs = ordered(list(dict.fromkeys(req.archs)))
    started = time.monotonic()
    deadline = started + req.budget if req.budget else None
    gpus = req.gpus or [0]
    env = _environment(req, jobs)
    with tempfile.TemporaryDirectory(prefix="graphlint-zoo-") as tmp, ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(_guarded, req, arch, gpus[i % len(gpus)], tmp, env, deadline, on_event)
                   for i, arch in enumerate(archs)]
        runs = [f.result() for f in futures]
    return runs


def _guarded(req: ZooRequest, arch: str, *args) -> ArchRun:
    """:func:`_one`, whose own failure (a full disk, a broken callback) is that architecture's row."""
    try:
        return _one(req, arch, *args)
    except Exception as exc:  # noqa: BLE001 - one architecture's trouble never ends the zoo
        return ArchRun(arch, "crashed", detail=f"the zoo could not run it: {type(exc).__name__}: {exc}")


def _environment(req: ZooRequest, jobs: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    # a hung worker is reported by the inventory's own machinery (with where it was) before the zoo kills
    env.setdefault("GRAPHLINT_WORKER_TIMEOUT", str(max(30, int(req.timeout * 0.7))))
    return env


def _one(req: ZooRequest, arch: str, gpu: int, tmp: str, env: dict, deadline: float | None, on_event: Event) -> ArchRun:
    now = time.monotonic()
    if deadline is not None and now >= deadline - BUDGET_MARGIN:
        run = ArchRun(arch, "not run", detail="the zoo's --budget ran out before it started")
        on_event(arch, "done", run.to_dict())
        return run
    limit = req.timeout if deadline is None else min(req.timeout, deadline - now)
    base = os.path.join(tmp, arch.replace("/", "_"))
    job = {"arch": arch, "options": req.options, "gpus": [gpu], "steps": req.steps, "cpu": req.cpu,
           "command": req.command, "progress": base + ".progress"}
    with open(base + ".job.json", "w", encoding="utf-8") as fh:
        json.dump(job, fh)
    on_event(arch, "start", {"gpu": gpu, "limit": limit})
    with open(base + ".log", "w+", encoding="utf-8") as log:
        proc = subprocess.Popen(arch_command(base + ".job.json", base + ".result.json"), stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        tail = _Tail(job["progress"], lambda probe, step, total: on_event(arch, "step", {
            "probe": probe, "step": step, "total": total}))
        timed_out = _wait(proc, limit, tail)
        log.seek(0)
        output = log.read()
    seconds = time.monotonic() - now
    result = _read(base + ".result.json")
    if result is not None:
        run = ArchRun(arch, "done", seconds, result)
    elif timed_out:
        why = "the zoo's --budget ran out" if deadline is not None and limit < req.timeout else f"--timeout {limit:.0f} s"
        run = ArchRun(arch, "timed out", seconds, detail=f"killed after {seconds:.0f} s ({why}) at {tail.where()}"
                      + _last_error(output))
    else:
        run = ArchRun(arch, "crashed", seconds, detail=f"the arch process ended with exit code {proc.returncode} at "
                      f"{tail.where()}" + _last_error(output))
    on_event(arch, "done", run.to_dict())
    return run


def arch_command(job_path: str, result_path: str) -> list[str]:
    """The arch process: ``python -m graphlint.dynamic.zoo JOB.json RESULT.json``."""
    return [sys.executable, "-X", "faulthandler", "-m", "graphlint.dynamic.zoo", job_path, result_path]


def _wait(proc: subprocess.Popen, limit: float, tail: "_Tail") -> bool:
    """Wait for ``proc``, relaying its progress; kill its whole session past ``limit``. True: timed out."""
    end = time.monotonic() + limit
    while True:
        try:
            proc.wait(timeout=0.25)
            tail.drain()
            return False
        except subprocess.TimeoutExpired:
            tail.drain()
            if time.monotonic() > end:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # its inventory workers are in its session
                except (ProcessLookupError, PermissionError):
                    proc.kill()
                proc.wait()
                return True


class _Tail:
    """The arch process's progress lines (``label TAB probe TAB step TAB total``), as they come."""

    def __init__(self, path: str, sink: Callable[[str, int, int], None]) -> None:
        self.path, self.sink, self.offset, self.last = path, sink, 0, ""

    def drain(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as fh:
                fh.seek(self.offset)
                text = fh.read()
        except OSError:
            return
        complete = text[: text.rfind("\n") + 1]
        self.offset += len(complete.encode("utf-8"))
        for line in complete.splitlines():
            parts = line.split("\t")
            if len(parts) == 4:
                self.last = f"{parts[1]} step {parts[2]}/{parts[3]}"
                self.sink(parts[1], int(parts[2]), int(parts[3]))
            elif parts:
                self.last = parts[0]

    def where(self) -> str:
        return self.last or "start-up (imports, building the model)"


def _last_error(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "error:" in ln or "Killed" in ln]
    return f": {(errors or lines or [''])[-1][:300]}" if lines else ""


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


# --- the arch process ---------------------------------------------------------------------------


def run_one(job: dict) -> dict[str, Any]:
    """One architecture: its inventory, then what its step ran (see the module doc)."""
    started = time.perf_counter()
    from graphlint.dynamic.run import Request, run_inventory

    progress = job.get("progress", "")
    lock = threading.Lock()

    def on_step(label: str, probe: str, step: int, total: int) -> None:
        if progress:
            with lock, open(progress, "a", encoding="utf-8") as fh:
                fh.write(f"{label}\t{probe}\t{step}\t{total}\n")

    from graphlint.dynamic.gpus import gpu_count

    req = Request(target=TARGET, options={"arch": job["arch"], **job.get("options", {})}, gpus=job.get("gpus"),
                  soak_steps=job.get("steps", 0), cpu=job.get("cpu", False), command=job.get("command", ""))
    observed: dict[str, Any] = {}
    # on a GPU the workers do the probing and this process waits: it observes meanwhile, in a thread
    # (sys.setprofile is per thread); on the CPU the tracer runs here, so it observes afterwards
    cuda = not req.cpu and gpu_count() > 0
    thread = threading.Thread(target=lambda: observed.update(observe(job, True)), daemon=True) if cuda else None
    if thread is not None:
        import torch  # noqa: F401 - imported here first, not by two threads at once

        thread.start()
    inv = run_inventory(req, on_step=on_step)
    if thread is not None:
        thread.join(OBSERVE_TIMEOUT)  # the inventory is what matters: it is not held hostage by the observer
        if thread.is_alive():
            observed = {"observe_error": f"recording the step's functions took over {OBSERVE_TIMEOUT:.0f} s"}
    else:
        observed = observe(job, False)
    out: dict[str, Any] = {"arch": job["arch"], "inventory": inv.to_dict(), **observed}
    out["seconds"] = time.perf_counter() - started
    return out


def observe(job: dict, cuda: bool) -> dict[str, Any]:
    """The instance's cache and config, and every library function one decode step calls."""
    import torch

    from graphlint.dynamic.frames import error_line
    from graphlint.targets import hf

    device = torch.device(f"cuda:{job['gpus'][0]}" if cuda else "cpu")
    try:
        target = hf.make_target([device], arch=job["arch"], **job.get("options", {}))
        regions = target.regions()
        target.stage(0)
        for region in regions:
            region.fn()  # step 0 initialises what is lazy; step 1 is the one recorded

        def step() -> None:
            target.stage(1)
            for region in regions:
                region.fn()

        ran = ran_functions(step)
    except Exception as exc:  # noqa: BLE001 - the inventory already says why the target fails
        return {"observe_error": error_line(exc)}
    return {"ran": ran, "cache": target.kind, "cache_layout": target.cache_layout, "cache_note": target.cache_note,
            "source": target.source, "transformers": _version()}


def _version() -> str:
    import transformers

    return transformers.__version__


def ran_functions(fn: Callable[[], Any]) -> list[str]:
    """``path:Qual.name`` of every function of an installed library (not torch, graphlint or the
    standard library) that ``fn()`` called, in first-call order: one call under ``sys.setprofile``."""
    from graphlint.dynamic.frames import is_user_file
    from graphlint.paths import display_path

    codes: dict = {}

    def profile(frame, event, _arg):
        if event == "call":
            codes.setdefault(frame.f_code, None)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(previous)
    out = []
    for code in codes:
        qualname = getattr(code, "co_qualname", code.co_name)
        if "<" not in qualname and code.co_filename.endswith(".py") and is_user_file(code.co_filename):
            out.append(f"{display_path(code.co_filename)}:{qualname}")
    return list(dict.fromkeys(out))


def main(argv: list[str]) -> int:
    from graphlint.dynamic.worker import run_job_file

    run_job_file(argv, run_one)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the result is written: no exit-time teardown (a stuck observer, CUDA at exit) may hang it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
