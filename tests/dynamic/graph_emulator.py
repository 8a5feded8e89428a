"""A CPU stand-in for CUDA graphs, so CI can exercise the capture/replay/soak protocol.

It is a test double, not a claim about CUDA: "capture" records every aten op a region
dispatches (with its tensor arguments by reference and its Python arguments by value) and
raises, like a real capture, on ops that must read the device (``_local_scalar_dense``,
dynamic output shapes); "replay" re-runs the recorded ops into the recorded outputs. So a
Python value frozen at capture time, or a tensor replaced after capture, replays stale,
which is what the replay probe has to notice. The first replay after a capture is skipped
because, unlike a CUDA capture, recording already ran the step's work.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from graphlint.dynamic import graph_probe as probe_module
from graphlint.dynamic.capture import Capture
from graphlint.dynamic.frames import UserFrame, function_frame, is_user_file
from graphlint.inventory import CAPTURED, EMPTY, FAILED
from graphlint.paths import display_path


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.Tag.data_dependent_output in func.tags or torch.Tag.dynamic_output_shape in func.tags:
            raise RuntimeError(f"emulated capture: {func} is not permitted when stream is capturing")
        out = func(*args, **kwargs)
        self.ops.append((func, args, kwargs, out))
        return out


class _Graph:
    def __init__(self, ops) -> None:
        self.ops, self.replays = ops, 0


def _raising_user_frame(tb) -> UserFrame | None:
    """Like a real capture error: the user line whose op raised (this emulator is not user code)."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    for t in reversed(frames):
        filename = t.tb_frame.f_code.co_filename
        if is_user_file(filename) and filename != __file__:
            return UserFrame(display_path(filename), t.tb_lineno, t.tb_frame.f_code.co_name)
    return None


def capture_region(region) -> Capture:
    recorder = _Recorder()
    try:
        with recorder:
            region.fn()
    except RuntimeError as exc:
        return Capture(region.name, FAILED, detail=str(exc), where=_raising_user_frame(exc.__traceback__))
    status = CAPTURED if recorder.ops else EMPTY
    return Capture(region.name, status, _Graph(recorder.ops), where=function_frame(region.fn))


def replay(capture: Capture, device) -> None:
    graph = capture.graph
    graph.replays += 1
    if graph.replays == 1:
        return
    for func, args, kwargs, out in graph.ops:
        result = func(*args, **kwargs)
        outs, results = (out, result) if isinstance(out, (tuple, list)) else ((out,), (result,))
        for o, r in zip(outs, results):
            if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and r is not o:
                o.copy_(r)


def install(monkeypatch) -> None:
    monkeypatch.setattr(probe_module, "capture_region", capture_region)
    monkeypatch.setattr(probe_module, "replay", replay)
    monkeypatch.setattr(probe_module, "context_healthy", lambda device: (True, "emulated"))
