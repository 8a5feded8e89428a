"""Mixture of experts: routed SwiGLU experts plus one shared expert, on NVFP4-rounded inputs.

Two implementations of the same math. ``forward_grouped`` is the reference's: tokens sorted by
expert, a host-side ``bincount(...).tolist()`` for the group sizes and one GEMM pair per busy
expert (a host sync and data-dependent Python control flow). ``forward_static`` is graph-ready: a
fixed number of (token, expert) slots, each expert's weights gathered by id on the device, and
batched GEMMs -- the same work for every step, whatever the routing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dsv4.config import DSV4Config
from dsv4.quant import fake_quant_rows
from dsv4.router import Router


def _unquantised(x: torch.Tensor) -> torch.Tensor:
    return x


def swiglu(h: torch.Tensor, limit: float) -> torch.Tensor:
    """Fused L1 output [..., 2I] (gate then up) -> SwiGLU with the reference's clamp."""
    gate, up = h.chunk(2, dim=-1)
    return F.silu(gate.clamp(max=limit)) * up.clamp(-limit, limit)


class MoE(nn.Module):
    def __init__(self, cfg: DSV4Config, hashed: bool) -> None:
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        E, D, inter = cfg.n_experts, cfg.dim, cfg.moe_inter_dim
        self.limit, self.top_k = cfg.swiglu_limit, cfg.n_active_experts
        self.quant = fake_quant_rows if cfg.fake_quant_experts else _unquantised
        self.router = Router(cfg, hashed)

        def weight(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)

        self.w13 = weight(E, 2 * inter, D)  # fused gate/up (L1)
        self.w2 = weight(E, D, inter)  # down (L2)
        self.shared_w13 = weight(2 * inter, D)
        self.shared_w2 = weight(D, inter)

    def shared_expert(self, xq: torch.Tensor) -> torch.Tensor:
        act = self.quant(swiglu(F.linear(xq, self.shared_w13), self.limit))
        return F.linear(act, self.shared_w2)

    def forward_grouped(self, h: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Reference MoE: experts grouped by id with host-side group sizes."""
        weights, ids = self.router(h, tokens)
        xq = self.quant(h)
        flat_ids = ids.flatten()
        order = flat_ids.argsort(stable=True)
        counts = torch.bincount(flat_ids, minlength=self.w13.shape[0]).tolist()
        out = torch.zeros(h.shape[0], h.shape[1], dtype=torch.float32, device=h.device)
        offset = 0
        for expert, count in enumerate(counts):
            if count == 0:
                continue
            slots = order[offset : offset + count]
            rows = slots // self.top_k
            act = self.quant(swiglu(F.linear(xq[rows], self.w13[expert]), self.limit))
            y = F.linear(act, self.w2[expert]).float()
            out.index_add_(0, rows, y * weights.flatten()[slots].unsqueeze(-1))
            offset += count
        return (out + self.shared_expert(xq).float()).to(h.dtype)

    def forward_static(self, h: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Graph-ready MoE: T*k slots, weights gathered by expert id, batched GEMMs."""
        weights, ids = self.router(h, tokens)
        xq = self.quant(h)
        return (self._routed_static(xq, weights, ids) + self.shared_expert(xq).float()).to(h.dtype)

    def _routed_static(self, xq: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """The routed experts' fp32 output [T, D] for quantised inputs xq [T, D] and routes [T, k]."""
        flat_ids = ids.flatten()
        # expand, not repeat_interleave: an int repeat count still syncs to size its output
        x_slots = xq.unsqueeze(1).expand(-1, self.top_k, -1).reshape(-1, xq.shape[1], 1)
        l1 = torch.bmm(self.w13.index_select(0, flat_ids), x_slots).squeeze(-1)
        act = self.quant(swiglu(l1, self.limit))
        y = torch.bmm(self.w2.index_select(0, flat_ids), act.unsqueeze(-1)).squeeze(-1)
        return (y.float().view(xq.shape[0], self.top_k, -1) * weights.unsqueeze(-1)).sum(1)
