"""Torch reference implementations of the per-token ops.

These are the semantics every CuTeDSL kernel is tested against and the fallback used wherever
the kernels cannot run (CPU, no ``cutlass``, ``DSV4_KERNELS=torch``). They are CUDA-graph safe:
no host sync, no data-dependent shapes; temporaries come from the capturing graph's pool.
"""

from __future__ import annotations

import torch

FP8_E4M3_MAX = 448.0
E2M1_MAX = 6.0
NVFP4_BLOCK = 16

# Round-to-nearest-even on the E2M1 grid {0, .5, 1, 1.5, 2, 3, 4, 6}: the magnitude climbs one
# grid step each time it passes a midpoint. On a tie the even code (mantissa bit 0: 0, 1, 2, 4)
# wins, as in PTX ``cvt.rn.satfinite.e2m1x2.f32``, so ties toward an even upper neighbour use >=.
E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
E2M1_STEPS = (0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 2.0)
E2M1_TIE_GOES_UP = (False, True, False, True, False, True, False)


def _write(result: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return result
    out.copy_(result)
    return out


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None
) -> torch.Tensor:
    """RMSNorm over the last dim, accumulated in fp32, returned in ``x.dtype``."""
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    # weight in its own dtype: type promotion widens it inside the multiply, no fp32 copy per call
    return _write((xf * inv_rms * weight).to(x.dtype), out)


def sinkhorn(
    logits: torch.Tensor, iters: int = 20, eps: float = 1e-6, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Sinkhorn-Knopp on ``[..., n, n]`` logits: a near doubly-stochastic fp32 mixing matrix.

    A fixed iteration count (no convergence test) keeps it free of host syncs.
    """
    p = torch.softmax(logits.float(), dim=-1) + eps
    p = p / (p.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        p = p / (p.sum(-1, keepdim=True) + eps)
        p = p / (p.sum(-2, keepdim=True) + eps)
    return _write(p, out)


def e2m1_round(v: torch.Tensor) -> torch.Tensor:
    """Round fp32 values to the nearest E2M1 value (ties to even), saturating at +-6."""
    mag = v.abs()
    steps = (
        (mag >= midpoint if tie_up else mag > midpoint).to(mag.dtype) * step
        for midpoint, step, tie_up in zip(E2M1_MIDPOINTS, E2M1_STEPS, E2M1_TIE_GOES_UP)
    )
    return torch.copysign(sum(steps), v)


def nvfp4_fake_quant(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Quantise to NVFP4 (E2M1 values, one E4M3 scale per 16, one fp32 global scale) and back.

    Hopper has no FP4 GEMM, so the engine runs expert activations through this round trip to
    reproduce FP4 numerics. The global scale stays a device tensor: no host sync, and an
    all-zero input gives zeros instead of NaN.
    """
    if x.shape[-1] % NVFP4_BLOCK:
        raise ValueError(f"nvfp4_fake_quant needs the last dim divisible by 16, got {x.shape[-1]}")
    xf = x.float()
    blocks = xf.reshape(*x.shape[:-1], x.shape[-1] // NVFP4_BLOCK, NVFP4_BLOCK)
    g = xf.abs().amax() / (FP8_E4M3_MAX * E2M1_MAX)
    g_safe = g.masked_fill(g == 0, 1.0)  # not where(.., 1.0): that allocates a scalar tensor per call
    block_amax = blocks.abs().amax(-1, keepdim=True)
    s = (block_amax / E2M1_MAX / g_safe).clamp(max=FP8_E4M3_MAX)
    s = s.to(torch.float8_e4m3fn).float()
    scale = s * g_safe
    scale_safe = scale.masked_fill(scale == 0, 1.0)
    q = e2m1_round(blocks / scale_safe)
    return _write((q * scale).reshape(x.shape).to(x.dtype), out)
