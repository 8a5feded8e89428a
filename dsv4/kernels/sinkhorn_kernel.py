"""Sinkhorn-Knopp as a CuTeDSL kernel: one thread per (small) mixing matrix, iterating in place.

The mHC mixing matrices are 4x4 (one per token and layer), far too small to spread over a CTA;
one thread walks its matrix in ``out`` (L1-resident), so the whole op is a single launch instead
of the ~80 tiny kernels the torch reference issues.
"""

from __future__ import annotations

import torch

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32

from dsv4.kernels.cute_interop import KERNEL_DTYPES, as_cute, current_stream

OP = "sinkhorn"
DTYPE_KEYS = tuple((dtype,) for dtype in KERNEL_DTYPES)
THREADS = 128


@cute.jit
def _normalise_rows(mP: cute.Tensor, b: Int32, n: Int32, eps: Float32):
    for i in cutlass.range(n):
        total = Float32(0.0)
        for j in cutlass.range(n):
            total += mP[b, i, j]
        denom = total + eps
        for j in cutlass.range(n):
            mP[b, i, j] = mP[b, i, j] / denom


@cute.jit
def _normalise_cols(mP: cute.Tensor, b: Int32, n: Int32, eps: Float32):
    for j in cutlass.range(n):
        total = Float32(0.0)
        for i in cutlass.range(n):
            total += mP[b, i, j]
        denom = total + eps
        for i in cutlass.range(n):
            mP[b, i, j] = mP[b, i, j] / denom


@cute.kernel
def _sinkhorn_kernel(mL: cute.Tensor, mP: cute.Tensor, iters: Int32, eps: Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    b = bidx * THREADS + tidx
    n = mL.shape[1]
    if b < mL.shape[0]:
        for i in cutlass.range(n):
            row_max = mL[b, i, 0].to(Float32)
            for j in cutlass.range(1, n):
                row_max = cute.arch.fmax(row_max, mL[b, i, j].to(Float32))
            total = Float32(0.0)
            for j in cutlass.range(n):
                e = cute.math.exp(mL[b, i, j].to(Float32) - row_max)
                mP[b, i, j] = e
                total += e
            for j in cutlass.range(n):
                mP[b, i, j] = mP[b, i, j] / total + eps
        _normalise_cols(mP, b, n, eps)
        for _ in cutlass.range(iters - 1):
            _normalise_rows(mP, b, n, eps)
            _normalise_cols(mP, b, n, eps)


@cute.jit
def launch(
    mL: cute.Tensor, mP: cute.Tensor, iters: Int32, eps: Float32, stream: cuda.CUstream
):
    _sinkhorn_kernel(mL, mP, iters, eps).launch(
        grid=[cute.ceil_div(mL.shape[0], THREADS), 1, 1], block=[THREADS, 1, 1], stream=stream
    )


def smoke_args(dtypes: tuple[torch.dtype], device: torch.device):
    """Small operands of the public op for this dtype."""
    return (torch.zeros(2, 4, 4, dtype=dtypes[0], device=device),)


def example_args(dtypes: tuple[torch.dtype], device: torch.device):
    """CuTe operands whose types match every later call (shapes and strides are dynamic)."""
    (logits,) = smoke_args(dtypes, device)
    out = torch.empty(logits.shape, dtype=torch.float32, device=device)
    return as_cute(logits), as_cute(out), Int32(20), Float32(1e-6)


def compile_for(dtypes: tuple[torch.dtype], device: torch.device, stream):
    return cute.compile(launch, *example_args(dtypes, device), stream)


def make_launcher(compiled):
    """Wrap a compiled kernel in the public ``sinkhorn(logits, iters, eps, out=None)`` signature."""

    def sinkhorn(logits, iters=20, eps=1e-6, out=None, *, stream=None):
        n = logits.shape[-1]
        if out is None:
            out = torch.empty(logits.shape, dtype=torch.float32, device=logits.device)
        with torch.cuda.device(logits.device):
            launch_stream = current_stream(logits.device) if stream is None else stream
            compiled(
                as_cute(logits.view(-1, n, n)),
                as_cute(out.view(-1, n, n)),
                Int32(iters),
                Float32(eps),
                launch_stream,
            )
        return out

    return sinkhorn
