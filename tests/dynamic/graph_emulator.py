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


class _EmulatedCUDAGraph:
    """``torch.cuda.CUDAGraph``'s methods on the CPU: capture records ops, replay re-runs them."""

    def __new__(cls, *args, **kwargs):
        # A CUDA build's CUDAGraph is a C extension type: object.__new__ refuses it, and its own
        # __new__ makes an idle graph handle, which is harmless. A CPU build's dummy type has none.
        try:
            return torch._C._CUDAGraph.__new__(cls)
        except (AttributeError, RuntimeError, TypeError):
            return object.__new__(cls)

    def __init__(self, *args, **kwargs) -> None:
        # a CUDA build (pybind11) insists that an overriding __init__ calls the extension type's:
        # that makes an idle graph handle and nothing else; the CPU build's dummy base raises
        try:
            torch._C._CUDAGraph.__init__(self)
        except (AttributeError, RuntimeError, TypeError):
            pass

    def capture_begin(self, *args, **kwargs) -> None:
        self._recorder = _Recorder()
        self._recorder.__enter__()

    def capture_end(self) -> None:
        recorder, self._recorder = self._recorder, None
        recorder.__exit__(None, None, None)
        self._graph = _Graph(recorder.ops)
        self._graph.replays = 1  # recording already ran the step: unlike CUDA, nothing to replay now

    def replay(self) -> None:
        replay(Capture("graph", CAPTURED, self._graph), "cpu")


def _graph_init(self, cuda_graph, pool=None, stream=None, *args, **kwargs) -> None:
    self.cuda_graph = cuda_graph


def _graph_enter(self) -> None:
    self.cuda_graph.capture_begin()


def _graph_exit(self, *exc) -> None:
    self.cuda_graph.capture_end()


def emulate_cuda_graph_api(monkeypatch) -> None:
    """``torch.cuda.CUDAGraph()``, ``with torch.cuda.graph(g):`` and ``g.replay()`` work on the CPU
    (an engine's own capture code, run under ``graphlint record``). Patched before the recorder's
    hooks, which then wrap these methods as they would wrap torch's."""
    from torch.cuda import graphs

    for name in ("__new__", "__init__", "capture_begin", "capture_end", "replay"):
        monkeypatch.setattr(graphs.CUDAGraph, name, _EmulatedCUDAGraph.__dict__[name])
    monkeypatch.setattr(graphs.graph, "__init__", _graph_init)
    monkeypatch.setattr(graphs.graph, "__enter__", _graph_enter)
    monkeypatch.setattr(graphs.graph, "__exit__", _graph_exit)
