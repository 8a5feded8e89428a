"""KV compression (pool every ``ratio`` positions) and the indexer that picks compressed entries.

Each position contributes a kv row and a per-channel gate score to a ``ratio``-slot state; a
full block pools to one entry, softmax(score)-weighted, normed, RoPE'd at the block's first
position. Ratio-4 layers keep many entries, so a small indexer scores them against the query
and attention reads only the top-k; ratio-128 layers read all of them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dsv4 import kernels
from dsv4.config import DSV4Config
from dsv4.rope import apply_rope


class Compressor(nn.Module):
    def __init__(self, cfg: DSV4Config, ratio: int) -> None:
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        self.ratio, self.eps = ratio, cfg.norm_eps
        self.wkv = nn.Parameter(torch.empty(cfg.head_dim, cfg.dim, dtype=dtype), requires_grad=False)
        self.wgate = nn.Parameter(torch.empty(cfg.head_dim, cfg.dim, dtype=dtype), requires_grad=False)
        # Absolute position-in-block embedding added to the gate scores.
        self.ape = nn.Parameter(torch.empty(ratio, cfg.head_dim, dtype=torch.float32), requires_grad=False)
        self.kv_norm = nn.Parameter(torch.empty(cfg.head_dim, dtype=dtype), requires_grad=False)

    def project(self, h: torch.Tensor, slot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """kv rows [T, hd] and fp32 gate scores [T, hd] of tokens at block slots ``slot`` [T]."""
        score = F.linear(h, self.wgate).float() + self.ape.index_select(0, slot)
        return F.linear(h, self.wkv), score

    def pool(self, state_kv: torch.Tensor, state_score: torch.Tensor,
             cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """One compressed entry [1, hd] from a full block state [ratio, hd]."""
        weights = torch.softmax(state_score, dim=0)
        pooled = (weights * state_kv.float()).sum(0, keepdim=True).to(state_kv.dtype)
        return apply_rope(kernels.rms_norm(pooled, self.kv_norm, self.eps), cos, sin)


class Indexer(nn.Module):
    """Scores compressed entries for a query: sum_h w_h * relu(q_h . k) (DSA-style)."""

    def __init__(self, cfg: DSV4Config) -> None:
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        self.n_heads, self.head_dim, self.top_k = cfg.index_n_heads, cfg.index_head_dim, cfg.index_topk
        self.wq = nn.Parameter(torch.empty(self.n_heads * self.head_dim, cfg.q_lora_rank, dtype=dtype),
                               requires_grad=False)
        self.wk = nn.Parameter(torch.empty(self.head_dim, cfg.head_dim, dtype=dtype), requires_grad=False)
        self.wweights = nn.Parameter(torch.empty(self.n_heads, cfg.dim, dtype=dtype), requires_grad=False)

    def key(self, entry: torch.Tensor) -> torch.Tensor:
        """Index key [N, ihd] of compressed entries [N, hd], stored when an entry is committed."""
        return F.linear(entry, self.wk)

    def scores(self, q_latent: torch.Tensor, h: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Relevance [T, N] of ``keys`` [N, ihd] for each token (q_latent [T, q_lora], h [T, D])."""
        q = F.linear(q_latent, self.wq).view(-1, self.n_heads, self.head_dim).float()
        head_weights = F.linear(h, self.wweights).float() * self.n_heads**-0.5
        dots = torch.relu(torch.einsum("thd,nd->thn", q, keys.float())) * self.head_dim**-0.5
        return (dots * head_weights.unsqueeze(-1)).sum(1)

    def select(self, relevance: torch.Tensor, k: int) -> torch.Tensor:
        """Indices of the k most relevant entries; ties (ReLU makes exact zeros common) go to the
        lowest index, so a sliced and a padded score row select the same entries."""
        return relevance.sort(dim=-1, descending=True, stable=True).indices[..., :k]
