"""Kernels that ran while a region was being captured: they are not in its graph (GL593).

A kernel launched on the capturing stream is recorded, not run. One launched on any other stream
(a CuTeDSL ``launch()`` without ``stream=``, a raw stream handle 0, a library's private stream)
runs at once and is missing from the graph, so every replay leaves its output stale. The graph
still "captures", and is not even empty when the region has other kernels.

So the graph probe counts what the device *executed* inside each capture window, with
``torch.profiler`` (CUPTI): that count is zero for a region whose every kernel is in its graph.
While a region is captured, every project source line it executes is marked with a profiler
annotation (``sys.settrace``, project frames only), so the launch call of an escaped kernel
(linked to the kernel by CUPTI's correlation id) falls inside the annotation of the line that
issued it: the innermost project frame of the launch.

The record is plain data (:class:`Escape`); :func:`escapes_in` is a pure function over the
profiler's chrome-trace events, so the attribution logic is tested without a GPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from graphlint.dynamic.frames import is_project_file
from graphlint.paths import display_path

_PREFIX = "graphlint|"
_LINE, _CAPTURE = _PREFIX + "line|", _PREFIX + "capture|"
_DEVICE_WORK = {"kernel", "gpu_memcpy", "gpu_memset"}
_LAUNCHES = {"cuda_runtime", "cuda_driver"}


@dataclass(frozen=True)
class Escape:
    """Device work that ran during the capture of ``region``: ``count`` launches of ``kernel``
    from ``path:line`` (``line`` 0: no project line enclosed the launch)."""

    region: str
    kernel: str
    path: str
    line: int
    function: str
    count: int = 1


def _annotation(name: str):
    import torch

    fast = getattr(torch._C._profiler, "_RecordFunctionFast", None)
    return fast(name) if fast is not None else torch.autograd.profiler.record_function(name)


class _LineMarks:
    """``sys.settrace`` hooks that keep one open annotation per project frame: its current line."""

    def __init__(self) -> None:
        self.open: dict[int, Any] = {}

    def _close(self, frame) -> None:
        mark = self.open.pop(id(frame), None)
        if mark is not None:
            mark.__exit__(None, None, None)

    def _local(self, frame, event, _arg):
        if event == "line":
            self._close(frame)
            code = frame.f_code
            mark = _annotation(f"{_LINE}{display_path(code.co_filename)}|{frame.f_lineno}|{code.co_name}")
            mark.__enter__()
            self.open[id(frame)] = mark
        elif event == "return":
            self._close(frame)
        return self._local

    def global_trace(self, frame, event, _arg):
        if event == "call" and is_project_file(frame.f_code.co_filename):
            return self._local
        return None

    def close_all(self) -> None:
        for key in reversed(list(self.open)):
            self.open.pop(key).__exit__(None, None, None)


class CaptureWatch:
    """One profiler session around a step in which regions are captured.

    ``traced(region_name, fn)`` wraps a region's function for its capture: the capture window and
    every project line it runs are annotated. After the ``with`` block, :attr:`escapes` holds what
    ran on the device inside the capture windows. ``enabled=False`` (or no CUDA) does nothing.
    """

    def __init__(self, enabled: bool, cuda: bool) -> None:
        self.enabled, self.cuda = enabled, cuda
        self.escapes: list[Escape] = []
        self.error = ""  # why the watch could not run (the captures still do)
        self._profiler = None

    def traced(self, region_name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        if self._profiler is None:
            return fn

        def run() -> Any:
            marks = _LineMarks()
            window = _annotation(f"{_CAPTURE}{region_name}")
            window.__enter__()
            previous = sys.gettrace()
            sys.settrace(marks.global_trace)
            try:
                return fn()
            finally:
                sys.settrace(previous)
                marks.close_all()
                window.__exit__(None, None, None)

        run.__wrapped__ = fn  # frames.function_frame still finds the region's own function
        return run

    @contextlib.contextmanager
    def watching(self) -> Iterator["CaptureWatch"]:
        if not self.enabled:
            yield self
            return
        try:
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
            self._profiler = profile(activities=activities)
            self._profiler.__enter__()
        except Exception as exc:  # noqa: BLE001 - a profiler that cannot start costs the count, not the probe
            self.error, self._profiler = f"{type(exc).__name__}: {exc}", None
        try:
            yield self
        finally:
            if self._profiler is not None:
                self._finish()

    def _finish(self) -> None:
        profiler, self._profiler = self._profiler, None
        try:
            profiler.__exit__(None, None, None)
            with tempfile.TemporaryDirectory(prefix="graphlint-trace-") as tmp:
                path = os.path.join(tmp, "trace.json")
                profiler.export_chrome_trace(path)
                with open(path, encoding="utf-8") as fh:
                    events = json.load(fh).get("traceEvents", [])
            self.escapes = escapes_in(events)
        except Exception as exc:  # noqa: BLE001
            self.error = f"{type(exc).__name__}: {exc}"


def _span(event: dict) -> tuple[float, float]:
    start = float(event.get("ts", 0.0))
    return start, start + float(event.get("dur", 0.0) or 0.0)


def _innermost(spans: list[tuple[float, float, str]], at: float) -> str:
    """The name of the latest-starting span that contains ``at`` ('' when none does)."""
    best, name = None, ""
    for start, end, label in spans:
        if start <= at <= end and (best is None or start >= best):
            best, name = start, label
    return name


def escapes_in(events: list[dict]) -> list[Escape]:
    """Device work whose launch lies inside a capture window, from chrome-trace events.

    The launch is found by CUPTI correlation id (the runtime/driver call), else by the kernel's
    ``External id`` (the annotation open at the launch), else by the kernel's own start time
    (an escaped kernel starts at once; the probe synchronizes before every capture, so no earlier
    work is still running).
    """
    spans = [e for e in events if e.get("ph") == "X"]
    windows = [(*_span(e), e["name"][len(_CAPTURE):]) for e in spans if e.get("name", "").startswith(_CAPTURE)]
    if not windows:
        return []
    lines = [(*_span(e), e["name"][len(_LINE):]) for e in spans if e.get("name", "").startswith(_LINE)]
    by_external = {e.get("args", {}).get("External id"): _span(e)[0] + 1e-3
                   for e in spans if e.get("name", "").startswith(_LINE)}
    launch_at = {e.get("args", {}).get("correlation"): _span(e)[0]
                 for e in spans if e.get("cat") in _LAUNCHES and e.get("args", {}).get("correlation") is not None}
    counts: dict[tuple[str, str, str], int] = {}
    for e in spans:
        if e.get("cat") not in _DEVICE_WORK:
            continue
        args = e.get("args", {})
        at = launch_at.get(args.get("correlation"))
        if at is None:
            at = by_external.get(args.get("External id"), _span(e)[0])
        region = _innermost(windows, at)
        if region:
            key = (region, e.get("name", "?"), _innermost(lines, at))
            counts[key] = counts.get(key, 0) + 1
    out = []
    for (region, kernel, line), count in sorted(counts.items()):
        path, number, function = (line.split("|") + ["", "0", ""])[:3] if line else ("", "0", "")
        out.append(Escape(region, kernel, path, int(number), function, count))
    return out
