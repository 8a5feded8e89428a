"""Per-step records of one instance (graph or eager): time, memory, and its outputs.

The soak compares a graph instance with an eager one over many steps. The two need not run in
one process: the eager reference is the slow half (a launch-bound step, tens of milliseconds),
so the inventory runs it in a worker of its own from the start, in parallel with the graph
worker, and the soak analysis (:mod:`graphlint.dynamic.soak`) reads the two series afterwards.
A series keeps each step's outputs flattened to float32 on the host (one row per step, copied
right after the step's synchronization, so a later crash of the CUDA context loses none); outputs above :data:`MAX_ELEMENTS` elements per step keep an evenly
spaced subset of :data:`MAX_ELEMENTS` of them, the same subset in both series.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

MAX_ELEMENTS = 1 << 16


def tensors_of(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    return []


def cuda_devices(devices) -> list[torch.device]:
    return sorted({torch.device(d) for d in devices if torch.device(d).type == "cuda"}, key=str)


def synchronize(devices) -> None:
    for dev in cuda_devices(devices):
        torch.cuda.synchronize(dev)


def memory(devices) -> tuple[int, int]:
    """(live bytes, cumulative allocation count) over the CUDA devices (host-side counters).

    Read twice a step, so from one nested dict per device: ``memory_stats()`` flattens and sorts
    every counter of the allocator, and ``memory_allocated()`` is one more ``memory_stats()``."""
    live = count = 0
    for dev in cuda_devices(devices):
        stats = torch.cuda.memory_stats_as_nested_dict(dev)
        live += stats.get("allocated_bytes", {}).get("all", {}).get("current", 0)
        count += stats.get("allocation", {}).get("all", {}).get("allocated", 0)
    return live, count


class RegionClock:
    """Seconds each region of one step took: CUDA events around it on its device's current stream
    (read once the step has synchronized: no sync between regions, so the timing does not change
    how the step overlaps), ``perf_counter`` on the CPU. For the report's s/token per region."""

    def __init__(self) -> None:
        self._marks: list[tuple] = []

    @contextlib.contextmanager
    def region(self, name: str, device: Any, on: bool = True) -> Iterator[None]:
        if not on:
            yield
            return
        dev = torch.device(device)
        if dev.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(torch.cuda.current_stream(dev))
            yield
            end.record(torch.cuda.current_stream(dev))
            self._marks.append((name, start, end))
        else:
            began = time.perf_counter()
            yield
            self._marks.append((name, time.perf_counter() - began))

    def collect(self) -> dict[str, float]:
        """Each timed region's seconds since the last collect (call after synchronizing)."""
        out: dict[str, float] = {}
        marks, self._marks = self._marks, []
        try:
            for name, *mark in marks:
                seconds = mark[0].elapsed_time(mark[1]) / 1000 if len(mark) == 2 else mark[0]
                out[name] = out.get(name, 0.0) + seconds
        except RuntimeError:  # an event of a step that failed (or a lost context): no timing, no crash
            return {}
        return out


@dataclass
class StepSeries:
    """What one instance did at each recorded step. ``outputs`` is a tensor [steps, k] while the
    series lives in its process, and the path of its ``torch.save`` file once shipped."""

    kind: str  # "graph" or "eager"
    steps: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    live_delta: list[int] = field(default_factory=list)
    allocations: list[int] = field(default_factory=list)
    outputs: Any = None
    stopped: str = ""  # why it ended early ("" when it ran every step)
    live: list[int] = field(default_factory=list)  # live device bytes after each step (the memory picture)
    region_seconds: list[dict[str, float]] = field(default_factory=list)  # per step: region -> seconds ({}: untimed)
    _rows: list = field(default_factory=list, repr=False)

    def record(self, step: int, started: float, before: tuple[int, int], after: tuple[int, int], output: Any,
               regions: dict[str, float] | None = None) -> None:
        self.steps.append(step)
        self.seconds.append(time.perf_counter() - started)
        self.live_delta.append(after[0] - before[0])
        self.allocations.append(after[1] - before[1])
        self.live.append(after[0])
        self.region_seconds.append(dict(regions or {}))
        flat = [t.detach().reshape(-1).float() for t in tensors_of(output)]
        row = torch.cat([t.to(flat[0].device) for t in flat]) if flat else torch.zeros(0)
        if row.numel() > MAX_ELEMENTS:
            row = row[torch.linspace(0, row.numel() - 1, MAX_ELEMENTS, device=row.device).long()]
        # on the host at once (the step has just been synchronized): a later device-side assert
        # kills the CUDA context, and what was recorded before it must survive
        self._rows.append(row.to("cpu", copy=True))

    def finish(self) -> None:
        """Stack the per-step rows."""
        if self._rows and all(r.shape == self._rows[0].shape for r in self._rows):
            self.outputs = torch.stack(self._rows)
        elif self._rows:  # the output changed shape: keep each row; diffs() flags the mismatch
            self.outputs = list(self._rows)
        self._rows = []

    def ship(self, directory: str) -> dict[str, Any]:
        """JSON-able form; the outputs go to ``directory``."""
        self.finish()
        path = ""
        if self.outputs is not None:
            path = os.path.join(directory, f"{self.kind}-outputs.pt")
            torch.save(self.outputs, path)
        return {"kind": self.kind, "steps": self.steps, "seconds": self.seconds, "live_delta": self.live_delta,
                "allocations": self.allocations, "outputs": path, "stopped": self.stopped, "live": self.live,
                "region_seconds": self.region_seconds}

    @classmethod
    def load(cls, data: dict[str, Any]) -> "StepSeries":
        data = dict(data)
        path = data.get("outputs")
        data["outputs"] = torch.load(path) if isinstance(path, str) and path and os.path.exists(path) else None
        return cls(**data)

    def output_at(self, step: int) -> torch.Tensor | None:
        if self.outputs is None or step not in self.steps:
            return None
        return self.outputs[self.steps.index(step)]


def step_limit(target: Any) -> int | None:
    """The target's ``max_steps`` (how many decode steps it can take), or ``None``."""
    limit = getattr(target, "max_steps", None)
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"target.max_steps must be a positive int, got {limit!r}")
    return limit
