"""Step-level progress of the probes: devices x probes x steps, from worker processes to the bar.

Every probe calls ``target.stage(step)`` once per step and instance (the tracer for its warm-up
and two traced steps; the replay and soak probes for each step of both instances), so watching
``stage`` counts steps without touching the probes themselves. A phase that runs in this process
reports through a callback; a worker process appends ``label<TAB>probe<TAB>step<TAB>total`` lines
to a file that :class:`Relay` tails for the parent. Nothing here imports torch, and a target whose
``stage`` cannot be wrapped simply reports no steps.
"""

from __future__ import annotations

import functools
import os
import tempfile
import threading
from typing import Any, Callable

TRACED_STEPS = 3  # the tracer's warm-up step 0, then steps 1 and 2

#: (device label, probe, step, steps that probe will run) -> None
StepSink = Callable[[str, str, int, int], None]


def planned(job: dict) -> int:
    """How many steps a phase job will stage (the unit the bar counts)."""
    if job["phase"] == "trace":
        return TRACED_STEPS
    return max(job.get("replay_steps", 8), job.get("soak_steps", 0))


def _probe_of(job: dict, step: int) -> tuple[str, int]:
    if job["phase"] == "trace":
        return "tracer", TRACED_STEPS
    replay = job.get("replay_steps", 8)
    if step < replay or not job.get("soak_steps"):
        return "capture+replay", replay
    return "soak", job["soak_steps"]


def watch(factory: Callable[..., Any], job: dict, sink: StepSink | None) -> Callable[..., Any]:
    """``factory`` whose targets report each ``stage(step)`` to ``sink`` (each step once, although
    the replay probe's two instances both stage it)."""
    if sink is None:
        return factory
    furthest = [-1]

    @functools.wraps(factory)  # the signature stays the factory's, for check_options and errors
    def build(devices, **options):
        target = factory(devices, **options)
        original = getattr(target, "stage", None)
        if original is None:
            return target

        def stage(step: int):
            if step > furthest[0]:
                furthest[0] = step
                probe, total = _probe_of(job, step)
                sink(job["label"], probe, step + 1, total)
            return original(step)

        try:
            target.stage = stage
        except (AttributeError, TypeError):  # __slots__ or a read-only attribute: no step counts
            pass
        return target

    return build


def file_sink(path: str) -> StepSink:
    def write(label: str, probe: str, step: int, total: int) -> None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{label}\t{probe}\t{step}\t{total}\n")
    return write


class Relay:
    """Gives each worker job a progress file and forwards its new lines to ``sink`` while the
    workers run (polled: a worker is a plain subprocess whose output is read only at its end)."""

    def __init__(self, sink: StepSink | None, interval: float = 0.2) -> None:
        self.sink, self.interval = sink, interval
        self._dir = tempfile.TemporaryDirectory(prefix="graphlint-progress-") if sink else None
        self._offsets: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True) if sink else None
        self._lock = threading.Lock()

    def job(self, job: dict) -> dict:
        if self._dir is None:
            return job
        with self._lock:
            path = os.path.join(self._dir.name, f"{len(self._offsets)}.progress")
            self._offsets[path] = 0
        return {**job, "progress_file": path}

    def __enter__(self) -> "Relay":
        if self._thread:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread:
            self._stop.set()
            self._thread.join()
            self._drain()
            self._dir.cleanup()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._drain()

    def _drain(self) -> None:
        with self._lock:
            paths = list(self._offsets)
        for path in paths:
            try:
                with open(path, encoding="utf-8") as fh:
                    fh.seek(self._offsets[path])
                    text = fh.read()
            except OSError:
                continue
            complete = text[: text.rfind("\n") + 1]  # a line still being written waits for the next poll
            self._offsets[path] += len(complete.encode("utf-8"))
            for line in complete.splitlines():
                label, probe, step, total = line.split("\t")
                self.sink(label, probe, int(step), int(total))
