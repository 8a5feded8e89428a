"""Which CuTeDSL kernels are compiled for which device, and the rule that picks one.

Kernels are compiled only in :func:`warmup`; :func:`compiled_kernel` merely looks them up, so
the decode path never compiles (and never does so inside a CUDA-graph capture).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Callable

import torch

# (op name, cuda device index) -> launcher with the op's public signature
_COMPILED: dict[tuple[str, int], Callable[..., torch.Tensor]] = {}


def cutlass_available() -> bool:
    return importlib.util.find_spec("cutlass") is not None


def forced_torch() -> bool:
    return os.environ.get("DSV4_KERNELS", "").strip().lower() == "torch"


def backend() -> str:
    """"cutedsl" once any kernel is compiled (and not forced off), else "torch"."""
    return "cutedsl" if _COMPILED and not forced_torch() else "torch"


def compiled_kernel(op: str, t: torch.Tensor) -> Callable[..., torch.Tensor] | None:
    if not t.is_cuda or forced_torch():
        return None
    return _COMPILED.get((op, t.device.index))


def register(op: str, device_index: int, launcher: Callable[..., torch.Tensor]) -> None:
    _COMPILED[(op, device_index)] = launcher


def warmup(device: torch.device | str | int) -> None:
    """Compile every CuTeDSL kernel once for ``device``; a no-op without CUDA or cutlass.

    Must run before any CUDA-graph capture: compilation is never attempted lazily.
    """
    device = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    if device.type != "cuda" or not torch.cuda.is_available() or forced_torch():
        return
    if not cutlass_available():
        return
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError("dsv4.kernels.warmup() must not run inside a CUDA-graph capture")
    from dsv4.kernels.compile import compile_all

    index = device.index if device.index is not None else torch.cuda.current_device()
    for op, launcher in compile_all(index).items():
        register(op, index, launcher)
