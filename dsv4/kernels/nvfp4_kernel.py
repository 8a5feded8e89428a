"""NVFP4 fake quantisation as a CuTeDSL kernel: one thread per 16-value block.

The global scale needs the amax of the whole tensor before any block can be scaled; torch's
``vector_norm(ord=inf)`` computes it in one reduction launch into a one-element device tensor
(exact in any dtype: it is one of the inputs), and the kernel fuses the rest: block amax, E4M3
rounding of the block scale, E2M1 rounding of the values, and the dequantisation.
"""

from __future__ import annotations

import math

import torch

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32

from dsv4.kernels.cute_interop import KERNEL_DTYPES, as_cute, as_cute_static, current_stream
from dsv4.kernels.reference import (
    E2M1_MAX,
    E2M1_MIDPOINTS,
    E2M1_STEPS,
    E2M1_TIE_GOES_UP,
    FP8_E4M3_MAX,
    NVFP4_BLOCK,
)

OP = "nvfp4_fake_quant"
DTYPE_KEYS = tuple((dtype,) for dtype in KERNEL_DTYPES)
THREADS = 128


@cute.jit
def _e2m1_magnitude(mag: Float32) -> Float32:
    """Same staircase as ``reference.e2m1_round``: one grid step per midpoint passed."""
    q = Float32(0.0)
    for k in cutlass.range_constexpr(len(E2M1_MIDPOINTS)):
        if cutlass.const_expr(E2M1_TIE_GOES_UP[k]):
            if mag >= Float32(E2M1_MIDPOINTS[k]):
                q += Float32(E2M1_STEPS[k])
        else:
            if mag > Float32(E2M1_MIDPOINTS[k]):
                q += Float32(E2M1_STEPS[k])
    return q


@cute.kernel
def _nvfp4_kernel(mX: cute.Tensor, mAmax: cute.Tensor, mO: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    block = bidx * THREADS + tidx
    if block < cute.size(mX) // NVFP4_BLOCK:
        base = block * NVFP4_BLOCK
        g = mAmax[0].to(Float32) / Float32(FP8_E4M3_MAX * E2M1_MAX)
        if g == Float32(0.0):
            g = Float32(1.0)
        block_amax = Float32(0.0)
        for k in cutlass.range_constexpr(NVFP4_BLOCK):
            block_amax = cute.arch.fmax(block_amax, cute.math.abs(mX[base + k].to(Float32)))
        s = cute.arch.fmin(block_amax / Float32(E2M1_MAX) / g, Float32(FP8_E4M3_MAX))
        scale = s.to(cutlass.Float8E4M3FN).to(Float32) * g
        for k in cutlass.range_constexpr(NVFP4_BLOCK):
            y = Float32(0.0)
            if scale > Float32(0.0):
                v = mX[base + k].to(Float32) / scale
                y = cute.math.copysign(_e2m1_magnitude(cute.math.abs(v)), v) * scale
            mO[base + k] = y.to(mO.element_type)


@cute.jit
def launch(mX: cute.Tensor, mAmax: cute.Tensor, mO: cute.Tensor, stream: cuda.CUstream):
    blocks = cute.size(mX) // NVFP4_BLOCK
    _nvfp4_kernel(mX, mAmax, mO).launch(
        grid=[cute.ceil_div(blocks, THREADS), 1, 1], block=[THREADS, 1, 1], stream=stream
    )


def _amax(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(x, ord=math.inf).reshape(1)


def smoke_args(dtypes: tuple[torch.dtype], device: torch.device):
    """Small operands of the public op for this dtype."""
    return (torch.ones(2, 64, dtype=dtypes[0], device=device),)


def example_args(dtypes: tuple[torch.dtype], device: torch.device):
    """CuTe operands whose types match every later call (the size is dynamic)."""
    x = smoke_args(dtypes, device)[0].view(-1)
    return as_cute(x), as_cute_static(_amax(x)), as_cute(torch.empty_like(x))


def compile_for(dtypes: tuple[torch.dtype], device: torch.device, stream):
    return cute.compile(launch, *example_args(dtypes, device), stream)


def make_launcher(compiled):
    """Wrap a compiled kernel in the public ``nvfp4_fake_quant(x, out=None)`` signature."""

    def nvfp4_fake_quant(x, out=None, *, stream=None):
        if x.shape[-1] % NVFP4_BLOCK:
            raise ValueError(
                f"nvfp4_fake_quant needs the last dim divisible by 16, got {x.shape[-1]}"
            )
        if out is None:
            out = torch.empty_like(x)
        with torch.cuda.device(x.device):
            launch_stream = current_stream(x.device) if stream is None else stream
            amax = _amax(x)  # on torch's current stream, like the launch (unless overridden)
            flat_x, flat_out = as_cute(x.view(-1)), as_cute(out.view(-1))
            compiled(flat_x, as_cute_static(amax), flat_out, launch_stream)
        return out

    return nvfp4_fake_quant
