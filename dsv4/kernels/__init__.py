"""Small per-token ops of the dsv4 engine: CuTeDSL kernels with torch fallbacks.

Dispatch: the CuTeDSL kernel runs when the input is a CUDA tensor, ``cutlass`` imports, and the
kernel was compiled for that device by :func:`warmup`; otherwise the torch reference in
:mod:`dsv4.kernels.reference` runs. ``DSV4_KERNELS=torch`` forces the fallback; unset or ``cutedsl``, the kernels run wherever
they can (see :mod:`dsv4.kernels.registry`). Nothing is
ever compiled lazily, so a first call inside a CUDA-graph capture cannot trigger compilation.
Every kernel launch is given torch's current stream, so the ops capture into CUDA graphs.

Under ``torch.compile`` a launch is an opaque call (:func:`_opaque`): dynamo cannot trace CuTeDSL's
launch path (it fails on the stream handle), so each kernel is a graph break instead of an error,
which is what ``graphlint inventory --probe compile`` then reports beside graphlint's findings.
"""

from __future__ import annotations

import torch

from dsv4.kernels import reference
from dsv4.kernels.registry import backend, compiled_kernel, warmup

__all__ = ["backend", "nvfp4_fake_quant", "rms_norm", "sinkhorn", "warmup"]


def _launch(kernel, *args, **kwargs) -> torch.Tensor:
    return kernel(*args, **kwargs)


# torch's own lazy form of torch.compiler.disable: torch._dynamo is imported at the first call
# (only ever made while compiling), not here. Importing it costs a worker 4-5 s on the H200
# machine, and the eager reference, which never compiles, must not pay that.
_launch_opaque = (getattr(torch, "_disable_dynamo", None) or torch.compiler.disable)(_launch)


def _opaque(kernel, *args, **kwargs) -> torch.Tensor:
    """The launch, kept out of a graph torch.compile traces; a plain call otherwise (no overhead)."""
    if torch.compiler.is_compiling():
        return _launch_opaque(kernel, *args, **kwargs)
    return kernel(*args, **kwargs)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None
) -> torch.Tensor:
    """y = x * rsqrt(mean(x**2) + eps) * weight, fp32 accumulation, in ``x.dtype``."""
    fits = weight.shape == x.shape[-1:]
    kernel = compiled_kernel("rms_norm", (x, weight), out, x.dtype) if fits else None
    if kernel is None:
        return reference.rms_norm(x, weight, eps, out=out)
    return _opaque(kernel, x, weight, eps, out=out)


def sinkhorn(
    logits: torch.Tensor, iters: int = 20, eps: float = 1e-6, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Sinkhorn-Knopp normalisation of ``[..., n, n]`` logits into fp32 mixing matrices."""
    square = logits.dim() >= 2 and logits.shape[-1] == logits.shape[-2]
    kernel = compiled_kernel("sinkhorn", (logits,), out, torch.float32) if square else None
    if kernel is None:
        return reference.sinkhorn(logits, iters, eps, out=out)
    return _opaque(kernel, logits, iters, eps, out=out)


def nvfp4_fake_quant(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """NVFP4 quantise-dequantise round trip (E2M1 values, E4M3 block scales), in ``x.dtype``."""
    kernel = compiled_kernel("nvfp4_fake_quant", (x,), out, x.dtype)
    if kernel is None:
        return reference.nvfp4_fake_quant(x, out=out)
    return _opaque(kernel, x, out=out)


def _launch_without_stream(op: str, *args, **kwargs) -> torch.Tensor:
    """Planted hazard for graphlint's own tests: run ``op`` on CUDA stream 0, not the current one.

    Stream handle 0 is what a CuTeDSL ``launch()`` without ``stream=`` uses. Inside a CUDA-graph
    capture on a side stream that work runs eagerly instead of being recorded, so the graph
    replays stale output (or, if the work needs a fresh allocation, the capture fails). The
    compiled CuTeDSL kernel is used when :func:`warmup` built one for these operands; otherwise
    the torch reference is issued on stream 0, the same hazard at the CUDA level.
    """
    first = args[0]
    inputs = (first, args[1]) if op == "rms_norm" else (first,)
    out_dtype = torch.float32 if op == "sinkhorn" else first.dtype
    kernel = compiled_kernel(op, inputs, kwargs.get("out"), out_dtype)
    if kernel is not None:
        from dsv4.kernels.cute_interop import default_stream

        return kernel(*args, stream=default_stream(), **kwargs)
    with torch.cuda.stream(torch.cuda.default_stream(first.device)):
        return getattr(reference, op)(*args, **kwargs)
