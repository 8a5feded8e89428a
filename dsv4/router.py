"""Expert routing: sqrt(softplus) scores, biased top-k selection, or a token-id hash table."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dsv4.config import DSV4Config


class Router(nn.Module):
    """Chooses ``n_active_experts`` experts per token and their weights.

    The selection bias (noaux_tc load balancing) moves which experts win but never the weights,
    which come from the unbiased scores. Hash-routed layers look the experts up by token id,
    so they need the token ids on the layer's device.
    """

    def __init__(self, cfg: DSV4Config, hashed: bool) -> None:
        super().__init__()
        self.top_k, self.route_scale, self.hashed = cfg.n_active_experts, cfg.route_scale, hashed
        dtype = getattr(torch, cfg.dtype)
        self.gate = nn.Parameter(torch.empty(cfg.n_experts, cfg.dim, dtype=dtype), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(cfg.n_experts, dtype=torch.float32), requires_grad=False)
        table = torch.zeros(cfg.vocab_size if hashed else 0, cfg.n_active_experts, dtype=torch.long)
        self.register_buffer("tid2eid", table)

    def forward(self, h: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights [T, k] (fp32) and expert ids [T, k] for hidden states [T, D]."""
        scores = self.scores(h)
        if self.hashed:
            ids = self.tid2eid.index_select(0, tokens)
        else:
            ids = (scores + self.bias).topk(self.top_k, dim=-1).indices
        weights = scores.gather(1, ids)
        return weights / weights.sum(-1, keepdim=True) * self.route_scale, ids

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """sqrt(softplus(gate logits)) [T, E] in fp32; the GEMM runs in the model dtype."""
        return torch.sqrt(F.softplus(F.linear(h, self.gate).float()))
