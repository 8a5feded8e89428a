"""The CuTeDSL side of the kernel faults (imported only where CUDA and ``cutlass`` exist).

The RMSNorm kernel is dsv4's own (:mod:`dsv4.kernels.rmsnorm_kernel`); what differs is how it
is launched: ``launch_on_default_stream`` is the kernel-without-stream fault, a ``@cute.jit``
launcher that takes no stream and so launches on stream handle 0, outside any capture.
"""

from __future__ import annotations

from typing import Callable

import torch

import cutlass.cute as cute
from cutlass import Float32

from dsv4.kernels import rmsnorm_kernel
from dsv4.kernels.cute_interop import as_cute, current_stream


@cute.jit
def launch_on_default_stream(mX: cute.Tensor, mW: cute.Tensor, mO: cute.Tensor, eps: Float32):
    rmsnorm_kernel._rms_norm_kernel(mX, mW, mO, eps).launch(grid=[mX.shape[0], 1, 1], block=[rmsnorm_kernel.THREADS, 1, 1])  # fault: kernel-without-stream


def _streamless(dtypes: tuple[torch.dtype, ...], device: torch.device) -> Callable:
    compiled = cute.compile(launch_on_default_stream, *rmsnorm_kernel.example_args(dtypes, device))

    def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> torch.Tensor:
        with torch.cuda.device(x.device):
            compiled(as_cute(x.view(-1, x.shape[-1])), as_cute(weight), as_cute(out.view(-1, x.shape[-1])), Float32(eps))
        return out

    return rms_norm


def compile_kernel(kind: str, dtypes: tuple[torch.dtype, ...], device: torch.device) -> Callable:
    """``streamless``: a launcher ``(x, weight, eps, out)`` on the default stream; ``rms_norm``:
    dsv4's compiled kernel itself, called with CuTe views and a stream."""
    with torch.cuda.device(device):
        if kind == "streamless":
            return _streamless(dtypes, device)
        return rmsnorm_kernel.compile_for(dtypes, device, current_stream(device))
