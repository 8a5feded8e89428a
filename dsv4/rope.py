"""Rotary position embedding on the last ``rope_dim`` channels (half-split convention)."""

from __future__ import annotations

import torch

from dsv4.config import DSV4Config


def rope_tables(cfg: DSV4Config, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 cos and sin tables [max_seq_len, rope_dim // 2]."""
    half = cfg.rope_dim // 2
    inv_freq = cfg.rope_theta ** -(torch.arange(half, dtype=torch.float64) / half)
    angles = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float64), inv_freq)
    return angles.cos().float().to(device), angles.sin().float().to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x's last 2 * cos.shape[-1] channels; cos/sin broadcast against x[..., :half]."""
    rot = 2 * cos.shape[-1]
    x1, x2 = x[..., -rot:].float().chunk(2, dim=-1)
    rotated = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return torch.cat([x[..., :-rot], rotated.to(x.dtype)], dim=-1)
