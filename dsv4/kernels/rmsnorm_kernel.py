"""RMSNorm as a CuTeDSL kernel: one CTA per row, fp32 sum of squares reduced across the CTA."""

from __future__ import annotations

import torch

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32

from dsv4.kernels.cute_interop import KERNEL_DTYPES, as_cute, current_stream

OP = "rms_norm"
# (x dtype, weight dtype): a norm weight is stored either in x's dtype or in fp32
DTYPE_KEYS = tuple((x, w) for x in KERNEL_DTYPES for w in dict.fromkeys((x, torch.float32)))
THREADS = 128
WARPS = THREADS // 32


@cute.kernel
def _rms_norm_kernel(mX: cute.Tensor, mW: cute.Tensor, mO: cute.Tensor, eps: Float32):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = mX.shape[1]

    sum_sq = Float32(0.0)
    for j in cutlass.range(tidx, n, THREADS):
        v = mX[row, j].to(Float32)
        sum_sq += v * v
    sum_sq = cute.arch.warp_reduction_sum(sum_sq)

    smem = cutlass.memory.SmemAllocator()
    warp_sums = smem.allocate_tensor(Float32, cute.make_layout(WARPS), byte_alignment=4)
    # warp_idx() is a full-warp shuffle (it makes the index warp-uniform): it must run while all
    # 32 lanes are converged. Called inside the lane-0 branch, lane 0 waits at the shuffle for
    # lanes that never arrive, and the kernel hangs (the first H200 run's warm-up hang).
    warp, lane = cute.arch.warp_idx(), cute.arch.lane_idx()
    if lane == 0:
        warp_sums[warp] = sum_sq
    cute.arch.sync_threads()
    total = Float32(0.0)
    for w in cutlass.range_constexpr(WARPS):
        total += warp_sums[w]

    inv_rms = cute.math.rsqrt(total / n.to(Float32) + eps)
    for j in cutlass.range(tidx, n, THREADS):
        y = mX[row, j].to(Float32) * inv_rms * mW[j].to(Float32)
        mO[row, j] = y.to(mO.element_type)


@cute.jit
def launch(
    mX: cute.Tensor, mW: cute.Tensor, mO: cute.Tensor, eps: Float32, stream: cuda.CUstream
):
    _rms_norm_kernel(mX, mW, mO, eps).launch(
        grid=[mX.shape[0], 1, 1], block=[THREADS, 1, 1], stream=stream
    )


def smoke_args(dtypes: tuple[torch.dtype, torch.dtype], device: torch.device):
    """Small operands of the public op for these dtypes."""
    x_dtype, w_dtype = dtypes
    x = torch.ones(2, 64, dtype=x_dtype, device=device)
    return x, torch.ones(64, dtype=w_dtype, device=device), 1e-6


def example_args(dtypes: tuple[torch.dtype, torch.dtype], device: torch.device):
    """CuTe operands whose types match every later call (shapes and strides are dynamic)."""
    x, w, eps = smoke_args(dtypes, device)
    return as_cute(x), as_cute(w), as_cute(torch.empty_like(x)), Float32(eps)


def compile_for(dtypes: tuple[torch.dtype, torch.dtype], device: torch.device, stream):
    return cute.compile(launch, *example_args(dtypes, device), stream)


def make_launcher(compiled):
    """Wrap a compiled kernel in the public ``rms_norm(x, weight, eps, out=None)`` signature."""

    def rms_norm(x, weight, eps, out=None, *, stream=None):
        rows = x.view(-1, x.shape[-1])
        if out is None:
            out = torch.empty_like(x)
        with torch.cuda.device(x.device):
            launch_stream = current_stream(x.device) if stream is None else stream
            compiled(
                as_cute(rows),
                as_cute(weight),
                as_cute(out.view(-1, x.shape[-1])),
                Float32(eps),
                launch_stream,
            )
        return out

    return rms_norm
