"""Which CuTeDSL kernels are compiled for which device, and the rule that picks one.

Kernels are compiled only in :func:`warmup`; :func:`compiled_kernel` merely looks them up, so
the decode path never compiles (and never does so inside a CUDA-graph capture). A call the
kernels do not cover (CPU tensor, non-contiguous or empty input, a dtype not compiled, tensors
on different devices, an ``out`` of another dtype or shape, operand shapes a kernel does not take)
silently takes the torch reference instead: the result is the same, only slower.

``DSV4_KERNELS`` picks the backend: ``torch`` (the fallback everywhere) or ``cutedsl``. Unset,
it is :data:`DEFAULT_BACKEND`, ``cutedsl``: the kernels run wherever CUDA and ``cutlass`` are
present. They were opt-in while the first H200 run's warm-up hung (a full-warp shuffle inside a
lane-0 branch of the rms_norm kernel); since the fix every kernel passes its GPU tests, in and
out of CUDA graphs (``reports/kernels-h200-2026-12-02.md``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import warnings
from typing import Callable, Iterator

import torch

# (op name, cuda device index, input dtypes) -> launcher with the op's public signature
_COMPILED: dict[tuple[str, int, tuple[torch.dtype, ...]], Callable[..., torch.Tensor]] = {}
_ATTEMPTED: set[tuple[str, int, tuple[torch.dtype, ...]]] = set()  # compiled, or failed to (warned once)


DEFAULT_BACKEND = "cutedsl"


def cutlass_available() -> bool:
    return importlib.util.find_spec("cutlass") is not None


def forced_torch() -> bool:
    """True unless ``DSV4_KERNELS`` (or, unset, :data:`DEFAULT_BACKEND`) asks for cutedsl."""
    requested = os.environ.get("DSV4_KERNELS", "").strip().lower() or DEFAULT_BACKEND
    return requested != "cutedsl"


@contextlib.contextmanager
def requested_backend(name: str | None) -> Iterator[None]:
    """``DSV4_KERNELS=name`` for the duration, restored after (None: leave it as it is)."""
    old = os.environ.get("DSV4_KERNELS")
    if name is not None:
        os.environ["DSV4_KERNELS"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DSV4_KERNELS", None)
        else:
            os.environ["DSV4_KERNELS"] = old


def backend() -> str:
    """"cutedsl" once kernels are compiled for some device (and not forced off), else "torch"."""
    return "cutedsl" if _COMPILED and not forced_torch() else "torch"


def compiled_kernel(
    op: str, inputs: tuple[torch.Tensor, ...], out: torch.Tensor | None, out_dtype: torch.dtype
) -> Callable[..., torch.Tensor] | None:
    """The compiled launcher for these operands, or None when the torch path must run."""
    first = inputs[0]
    if not first.is_cuda or forced_torch() or first.numel() == 0:
        return None
    operands = inputs if out is None else (*inputs, out)
    if any(t.device != first.device or not t.is_contiguous() for t in operands):
        return None
    if out is not None and (out.dtype != out_dtype or out.shape != first.shape):
        return None
    return _COMPILED.get((op, first.device.index, tuple(t.dtype for t in inputs)))


def warmup(device: torch.device | str | int, dtypes: tuple[torch.dtype, ...] | None = None) -> None:
    """Compile every CuTeDSL kernel once for ``device``; a no-op without CUDA or cutlass.

    ``dtypes``: only the variants whose operands are all of these dtypes (a bf16 model needs bf16 and
    fp32, never fp16: 7 of the 11 variants, a fp32 model 3); ``None``: every variant. Each compile and
    smoke launch costs a worker process time before its first step, so a model warms only what it
    can call. Must run before any CUDA-graph capture (it raises inside one): nothing compiles lazily.
    Calling it again compiles only variants not tried yet for that device.
    """
    device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available() or forced_torch():
        return
    if not cutlass_available():
        return
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError("dsv4.kernels.warmup() must not run inside a CUDA-graph capture")
    try:
        from dsv4.kernels.compile import compile_all
    except ImportError as error:  # e.g. cutlass present but its CUDA bindings are not
        warnings.warn(f"dsv4.kernels: CuTeDSL unusable ({error}); ops use torch", RuntimeWarning)
        return

    wanted = [(op, key) for op, key in variants(dtypes) if (op, device.index, key) not in _ATTEMPTED]
    if not wanted:
        return
    for (op, key), launcher in compile_all(device, wanted).items():
        _COMPILED[op, device.index, key] = launcher
    _ATTEMPTED.update((op, device.index, key) for op, key in wanted)


def variants(dtypes: tuple[torch.dtype, ...] | None = None) -> list[tuple[str, tuple[torch.dtype, ...]]]:
    """(op, operand dtypes) of every kernel variant whose operands are all in ``dtypes`` (None: all)."""
    from dsv4.kernels.compile import KERNEL_MODULES

    return [(module.OP, key) for module in KERNEL_MODULES for key in module.DTYPE_KEYS
            if dtypes is None or set(key) <= set(dtypes)]
