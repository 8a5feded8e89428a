"""NVFP4 fake quantisation of expert activations.

Hopper has no FP4 GEMM, so the engine rounds activations to NVFP4 values and multiplies in the
model dtype: the numerics of the seed's Blackwell path at Hopper speed. The global scale is taken
per token row (a decision): prefill and decode then quantise a token identically, so decoding
token by token reproduces prefill logits.
"""

from __future__ import annotations

import torch

from dsv4 import kernels


def fake_quant_rows(x: torch.Tensor) -> torch.Tensor:
    """NVFP4 round trip of each row of ``x`` [rows, K], with one global scale per row."""
    if x.shape[0] == 1:
        return kernels.nvfp4_fake_quant(x)
    return torch.cat([kernels.nvfp4_fake_quant(row) for row in x.split(1)])
