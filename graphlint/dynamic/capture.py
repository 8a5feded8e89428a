"""The capture probe: trial-capture one region on its own device, the way the seed learned to.

Capture runs on an explicit ``torch.cuda.Stream(device=dev)`` under ``torch.cuda.device(dev)``
(a bare ``torch.cuda.graph(g)`` records on whichever device its shared side stream was made
for). A failed capture reports the error *and* its original cause (``__context__``): the
outer "operation failed due to a previous error during capture" names nothing useful. After
a failure the CUDA context may be poisoned; :func:`release_failed_capture` frees what the failed
capture left, and :func:`context_healthy` proves recovery with a tiny capture-and-replay that
allocates, before any further capture is trusted.
"""

from __future__ import annotations

import gc
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from graphlint.dynamic.frames import UserFrame, current_user_frame, error_line, function_frame, traceback_user_frame
from graphlint.inventory import CAPTURED, EMPTY, FAILED

EMPTY_GRAPH_TEXT = "The CUDA Graph is empty"


@dataclass
class Capture:
    region: str
    status: str  # CAPTURED / EMPTY / FAILED
    graph: object = None
    stream: object = None
    detail: str = ""
    where: UserFrame | None = None
    warnings: list[str] = field(default_factory=list)


def capture_region(region) -> Capture:
    """Capture ``region.fn`` into a new graph; nothing in it runs on the device until replay."""
    dev = torch.device(region.device)
    stream = torch.cuda.Stream(device=dev)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.device(dev), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream.wait_stream(torch.cuda.current_stream(dev))
        try:
            with torch.cuda.graph(graph, stream=stream):
                region.fn()
        except Exception as exc:  # the capture's failure is the finding
            cause = exc.__context__ or exc.__cause__ or exc
            where = traceback_user_frame(cause.__traceback__) or traceback_user_frame(exc.__traceback__)
            detail = error_line(cause) if cause is exc else f"{error_line(cause)} (then: {error_line(exc)})"
            return Capture(region.name, FAILED, detail=detail, where=where or function_frame(region.fn))
        finally:
            torch.cuda.current_stream(dev).wait_stream(stream)
    texts = [str(w.message) for w in caught]
    if any(EMPTY_GRAPH_TEXT in t for t in texts):
        return Capture(region.name, EMPTY, graph, stream, detail=f"'{EMPTY_GRAPH_TEXT}' warning at capture_end",
                       where=function_frame(region.fn), warnings=texts)
    return Capture(region.name, CAPTURED, graph, stream, warnings=texts)


def replay(capture: Capture, device) -> None:
    """Replay on the capture stream, ordered after and before the current stream's work."""
    dev = torch.device(device)
    with torch.cuda.device(dev):
        current = torch.cuda.current_stream(dev)
        capture.stream.wait_stream(current)
        with torch.cuda.stream(capture.stream):
            capture.graph.replay()
        current.wait_stream(capture.stream)


def release_failed_capture(device) -> None:
    """Free what a failed capture left before the next one opens.

    On the H200 (2026-12-03, dsv4's eager decoder) some later layers then failed their capture at
    their first allocation with "operation failed due to a previous error during capture", blaming
    ``mhc.py:19``; with the failed graph collected and the allocator's cache emptied here, every
    layer failed for its own reason (the pageable copy at ``moe.py:58``). ``torch.cuda.graph`` no
    longer collects garbage when it opens a capture (``torch.compiler.config.force_cudagraph_gc`` is
    off by default), so without this the failed graph, in a reference cycle with its traceback,
    lives on until some later collection."""
    gc.collect()  # the failed CUDAGraph and the tensors of its frames, now
    dev = torch.device(device)
    try:
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - a dead context: context_healthy says so next
        pass


def context_healthy(device) -> tuple[bool, str]:
    """Capture and replay ``t = t + 1`` on ``device`` (an allocation from the graph's pool, where a
    failed capture's leftovers show): a context that does this right has recovered."""
    dev = torch.device(device)
    try:
        with torch.cuda.device(dev):
            torch.cuda.synchronize(dev)
            probe = torch.zeros(4, device=dev)
            stream = torch.cuda.Stream(device=dev)
            graph = torch.cuda.CUDAGraph()
            stream.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.graph(graph, stream=stream):
                probe.copy_(probe + 1)
            torch.cuda.current_stream(dev).wait_stream(stream)
            graph.replay()
            graph.replay()
            torch.cuda.synchronize(dev)
            value = probe.sum().item()
    except Exception as exc:
        return False, error_line(exc)
    return (value == 8.0, "recovered: a test capture replays correctly" if value == 8.0
            else f"test capture replayed wrong values ({value} != 8)")


@contextmanager
def watch_self_captures(record):
    """Report each ``torch.cuda.graph(...)`` the *target* opens without ``stream=`` (GL592)."""
    original = torch.cuda.graph.__init__

    def init(self, cuda_graph, *args, **kwargs):
        stream = kwargs.get("stream", args[1] if len(args) > 1 else None)
        if stream is None:
            record(current_user_frame())
        original(self, cuda_graph, *args, **kwargs)

    torch.cuda.graph.__init__ = init
    try:
        yield
    finally:
        torch.cuda.graph.__init__ = original
