"""Faults in how the step is captured: streams, devices and CuTeDSL kernels (seed 7 and 9).

These are the seed's silent ones: capture "succeeds" and replay is empty or stale, or the
failure shows only when a capture spans devices. Their CuTeDSL halves live in
:mod:`dsv4.faults.cute_faults` (imported only where CUDA and ``nvidia-cutlass-dsl`` exist); on
the CPU the same code paths run the torch reference instead.
"""

from __future__ import annotations

import importlib.util

import torch

from dsv4 import kernels
from dsv4.faults.base import Fault, FaultDecoder, Variant
from dsv4.faults.step import LayerLoopToDevice
from dsv4.graph import RegionRunner
from dsv4.kernels import reference
from dsv4.kernels.registry import forced_torch
from dsv4.model import Block, DSV4Model
from graphlint.dynamic.target import Region

ONE_DEVICE = ("on one GPU the tensors' device is the current device during capture, so there is nothing to "
              "mismatch; it fails when the captured region spans two GPUs")
NO_CAPTURE_ON_CPU = "the CPU has no streams and no capture"

# (kind, device index, input dtypes) -> a kernel compiled for these faults (dsv4.kernels never sees it)
_COMPILED: dict[tuple[str, int, tuple[torch.dtype, ...]], object] = {}


def _cute_usable(device: torch.device) -> bool:
    return device.type == "cuda" and not forced_torch() and importlib.util.find_spec("cutlass") is not None


def _compile(kind: str, model: DSV4Model) -> None:
    """Compile this fault's kernel once per device, before any step (never inside a capture)."""
    from dsv4.faults import cute_faults

    dtypes = (getattr(torch, model.cfg.dtype), getattr(torch, model.cfg.dtype))
    for device in model.devices:
        if _cute_usable(device) and (kind, device.index, dtypes) not in _COMPILED:
            _COMPILED[kind, device.index, dtypes] = cute_faults.compile_kernel(kind, dtypes, device)


def _norm_out(block: Block) -> torch.Tensor:
    """The decode step's [1, dim] norm output, allocated once."""
    return torch.empty(1, block.attn_norm.shape[0], dtype=block.attn_norm.dtype, device=block.attn_norm.device)


# -- a kernel launched without stream= -------------------------------------------------------------
def streamless_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> torch.Tensor:
    """RMSNorm whose output is written on the default stream: the CuTeDSL launch without
    ``stream=`` when it is compiled; else the torch reference on the current stream, then the copy
    into ``out`` issued on ``torch.cuda.default_stream`` (the same hazard, with no allocation on
    the default stream, which a capture could not tolerate)."""
    compiled = _COMPILED.get(("streamless", x.device.index, (x.dtype, weight.dtype))) if x.is_cuda else None
    if compiled is not None:
        return compiled(x, weight, eps, out)
    normed = reference.rms_norm(x, weight, eps)
    if not x.is_cuda:
        return out.copy_(normed)
    with torch.cuda.stream(torch.cuda.default_stream(x.device)):
        return out.copy_(normed)


class StreamlessNormBlock(Block, Variant):
    def adopt(self) -> None:
        self.norm_out = _norm_out(self)

    def attention_norm(self, y: torch.Tensor) -> torch.Tensor:
        return streamless_rms_norm(y, self.attn_norm, self.eps, self.norm_out)


class KernelWithoutStream(FaultDecoder):
    fault = Fault(
        "kernel-without-stream", ("7.3", "9.2"), "a CuTeDSL kernel `.launch()`ed without `stream=` inside the capture",
        static=("GL504",), category="capture-hygiene", gpu_region=("GL391",), symptom="stale replay",
        blind={"cpu": NO_CAPTURE_ON_CPU + " (and no CuTeDSL kernel runs there)",
               "gpu": "the kernel runs once, eagerly, at capture time and is missing from the graph, which is not "
                      "empty (the rest of the step is in it): replay differs from eager, blamed on the region"})
    variants = {"": StreamlessNormBlock}

    def prepare(self) -> None:
        _compile("streamless", self.model)


# -- CuTeDSL conversion and set_device in capture (need a region spanning devices) ---------------------
def dlpack_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> torch.Tensor:
    """RMSNorm with the CuTe views made by ``from_dlpack`` under whatever device is current."""
    compiled = _COMPILED.get(("rms_norm", x.device.index, (x.dtype, weight.dtype))) if x.is_cuda else None
    if compiled is None:
        return reference.rms_norm(x, weight, eps, out=out)
    from cutlass import Float32
    from cutlass.cute.runtime import from_dlpack

    from dsv4.kernels.cute_interop import current_stream

    rows, out_rows = x.view(-1, x.shape[-1]), out.view(-1, x.shape[-1])
    views = [from_dlpack(t).mark_layout_dynamic(leading_dim=t.dim() - 1) for t in (rows, weight, out_rows)]  # fault: from-dlpack-in-capture
    compiled(*views, Float32(eps), current_stream(x.device))
    return out


class DlpackNormBlock(Block, Variant):
    def adopt(self) -> None:
        self.norm_out = _norm_out(self)

    def attention_norm(self, y: torch.Tensor) -> torch.Tensor:
        return dlpack_rms_norm(y, self.attn_norm, self.eps, self.norm_out)


class FromDlpackInCapture(LayerLoopToDevice):
    fault = Fault(
        "from-dlpack-in-capture", ("7.3",), "CuTeDSL `from_dlpack` inside the capture, not under the tensor's device",
        static=("GL503",), category="capture-hygiene", gpus=2, gpu2=("GL590",),
        blind={"cpu": NO_CAPTURE_ON_CPU, "gpu": ONE_DEVICE})
    variants = {"": DlpackNormBlock}

    def prepare(self) -> None:
        _compile("rms_norm", self.model)


class SetDeviceBlock(Block, Variant):
    def attention_norm(self, y: torch.Tensor) -> torch.Tensor:
        if y.is_cuda:
            torch.cuda.set_device(y.device)  # fault: set-device-in-capture
        return super().attention_norm(y)


class SetDeviceInCapture(LayerLoopToDevice):
    fault = Fault(
        "set-device-in-capture", ("7.1",), "`torch.cuda.set_device(t.device)` before a kernel, inside the capture",
        static=("GL502",), category="capture-hygiene", gpus=2, gpu2=("GL590",),
        blind={"cpu": NO_CAPTURE_ON_CPU, "gpu": ONE_DEVICE})
    variants = {"": SetDeviceBlock}


# -- capture without an explicit per-device stream ---------------------------------------------------
class SharedStreamRunner(RegionRunner):
    def capture(self) -> None:
        for region in self.regions:
            if region.capturable:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=self.pools[str(region.device)]):  # fault: capture-without-stream
                    region.fn()
                self.graphs[region.name] = graph


class CaptureWithoutStream(FaultDecoder):
    """The decoder captures its own graphs with ``torch.cuda.graph(g)``: torch's one shared side
    stream, made on whichever device was current first. Under graphlint's target it still
    captures itself (one deliberately eager region runs the whole step), so that the harness sees
    the engine's own capture."""

    fault = Fault(
        "capture-without-stream", ("9.1", "9.2"), "`torch.cuda.graph(g)` with no explicit per-device stream",
        static=("GL501",), category="capture-hygiene", gpu=("GL592",), gpus=2, gpu2=("GL592",),
        blind={"cpu": NO_CAPTURE_ON_CPU})
    self_capturing = True

    def _runner_ready(self) -> RegionRunner:
        if self._runner is None:
            if self.use_graphs:
                for device in self.model.devices:
                    kernels.warmup(device)
            self._runner = SharedStreamRunner(self._regions, self.model.devices, self.use_graphs)
        return self._runner

    def regions(self) -> list[Region]:
        return [Region("self-captured step", self._self_captured_step, device=self.model.first_device,
                       capturable=False)]

    def _self_captured_step(self) -> None:
        runner = self._runner_ready()
        runner.run()
        if self.use_graphs and not runner.graphs:
            runner.capture()  # the step just run was the warm-up, as in GraphDecoder.step
