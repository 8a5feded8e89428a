"""mHC hyper-connections: 4 residual streams mixed by data-dependent, Sinkhorn-balanced weights."""

from __future__ import annotations

import torch
from torch import nn

from dsv4 import kernels
from dsv4.config import DSV4Config


def _param(*shape: int) -> nn.Parameter:
    # mHC mixing parameters stay fp32 whatever the model dtype, as in the reference.
    return nn.Parameter(torch.empty(shape, dtype=torch.float32), requires_grad=False)


def _stream_mixes(x: torch.Tensor, fn: torch.Tensor, eps: float) -> torch.Tensor:
    """(flatten(x) @ fn.T) * rsqrt(mean(x^2)): the raw mixing logits of every token."""
    flat = x.flatten(1).float()
    return (flat @ fn.T) * torch.rsqrt(flat.square().mean(-1, keepdim=True) + eps)


class HyperConnection(nn.Module):
    """Mixes the streams around one sub-block (attention or FFN).

    ``pre`` reduces the streams [T, n, D] to the sub-block's input [T, D]; ``post`` spreads the
    sub-block's output back over the streams with the ``comb`` matrix (doubly stochastic).
    """

    def __init__(self, cfg: DSV4Config) -> None:
        super().__init__()
        n = cfg.hc_mult
        self.n, self.eps, self.iters = n, cfg.hc_eps, cfg.sinkhorn_iters
        self.fn = _param((2 + n) * n, n * cfg.dim)
        self.scale = _param(3)
        self.base = _param((2 + n) * n)

    def pre(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n, T = self.n, x.shape[0]
        mixes = _stream_mixes(x, self.fn, self.eps)
        pre = torch.sigmoid(mixes[:, :n] * self.scale[0] + self.base[:n]) + self.eps
        post = 2 * torch.sigmoid(mixes[:, n : 2 * n] * self.scale[1] + self.base[n : 2 * n])
        comb_logits = mixes[:, 2 * n :] * self.scale[2] + self.base[2 * n :]
        comb = kernels.sinkhorn(comb_logits.view(T, n, n), self.iters)
        y = (pre.unsqueeze(-1) * x.float()).sum(1)
        return y.to(x.dtype), post, comb

    @staticmethod
    def post(f: torch.Tensor, x: torch.Tensor, post: torch.Tensor, comb: torch.Tensor) -> torch.Tensor:
        """out_j = post_j * f + sum_i comb[i, j] * x_i."""
        mixed = torch.einsum("tij,tid->tjd", comb, x.float())
        return (post.unsqueeze(-1) * f.float().unsqueeze(1) + mixed).to(x.dtype)


class HyperHead(nn.Module):
    """hc_head: a sigmoid-weighted sum of the streams, before the final norm and the lm-head."""

    def __init__(self, cfg: DSV4Config) -> None:
        super().__init__()
        n = cfg.hc_mult
        self.eps = cfg.hc_eps
        self.fn = _param(n, n * cfg.dim)
        self.scale = _param(1)
        self.base = _param(n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixes = _stream_mixes(x, self.fn, self.eps)
        weight = torch.sigmoid(mixes * self.scale + self.base) + self.eps
        return (weight.unsqueeze(-1) * x.float()).sum(1).to(x.dtype)
