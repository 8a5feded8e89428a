"""The model: embedding, mHC blocks (attention + MoE), hc_head, final norm, fp32 lm-head.

Weights come from a seed and are identical for every decoder and every device layout (they are
drawn on the first device: CPU and GPU weights differ, see ``_init_weights``). Layers are split
evenly across the given devices, the embedding on the first and the head on the last.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from dsv4 import kernels
from dsv4.attention import Attention, LayerCache, new_cache
from dsv4.config import DSV4Config
from dsv4.mhc import HyperConnection, HyperHead
from dsv4.moe import MoE
from dsv4.rope import rope_tables

Rope = tuple[torch.Tensor, torch.Tensor]


class Block(nn.Module):
    """attention and MoE sub-blocks, each wrapped in mHC pre/post mixing."""

    def __init__(self, cfg: DSV4Config, layer: int) -> None:
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        self.eps = cfg.norm_eps
        self.attn_hc, self.ffn_hc = HyperConnection(cfg), HyperConnection(cfg)
        self.attn_norm = nn.Parameter(torch.empty(cfg.dim, dtype=dtype), requires_grad=False)
        self.ffn_norm = nn.Parameter(torch.empty(cfg.dim, dtype=dtype), requires_grad=False)
        self.attn = Attention(cfg, layer)
        self.moe = MoE(cfg, hashed=layer < cfg.n_hash_layers)

    def pre_attention(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """mHC pre + norm + projections: everything before attention reads the cache."""
        y, post, comb = self.attn_hc.pre(x)
        h = self.attention_norm(y)
        q, kv, q_latent = self.attn.project(h, cos, sin)
        return h, post, comb, q, kv, q_latent

    def attention_norm(self, y: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(y, self.attn_norm, self.eps)

    def ffn_input(self, attn_out, x, post, comb):
        """mHC post of attention, then mHC pre + norm of the FFN: the streams and the MoE input."""
        x = HyperConnection.post(attn_out, x, post, comb)
        y, post, comb = self.ffn_hc.pre(x)
        return x, kernels.rms_norm(y, self.ffn_norm, self.eps), post, comb

    def post_attention(self, attn_out, x, post, comb, tokens) -> torch.Tensor:
        """Everything after attention, graph-ready (graph B of the A/B decoder)."""
        x, h, post, comb = self.ffn_input(attn_out, x, post, comb)
        return HyperConnection.post(self.moe.forward_static(h, tokens), x, post, comb)

    def forward_eager(self, x, tokens, cache: LayerCache, start: int, rope: Rope) -> torch.Tensor:
        cos, sin = rope
        end = start + x.shape[0]
        h, post, comb, q, kv, q_latent = self.pre_attention(x, cos[start:end], sin[start:end])
        attn_out = self.attn.attend_eager(q, kv, q_latent, h, cache, start, cos, sin)
        x, h, post, comb = self.ffn_input(attn_out, x, post, comb)
        return HyperConnection.post(self.moe.forward_grouped(h, tokens), x, post, comb)

    def forward_static(self, x, tokens, cache: LayerCache, pos: torch.Tensor, rope: Rope) -> torch.Tensor:
        cos, sin = rope
        h, post, comb, q, kv, q_latent = self.pre_attention(x, cos.index_select(0, pos), sin.index_select(0, pos))
        attn_out = self.attn.attend_static(q, kv, q_latent, h, cache, pos, cos, sin)
        return self.post_attention(attn_out, x, post, comb, tokens)


def _initial_values(name: str, shape: torch.Size, gen: torch.Generator) -> torch.Tensor:
    """fp32 noise from ``gen``, on ``gen``'s device, scaled in place (the same values as out of place)."""
    leaf = name.rsplit(".", 1)[-1]
    noise = torch.randn(shape, generator=gen, device=gen.device)
    if leaf.endswith("norm"):
        return noise.mul_(0.1).add_(1)
    if leaf in ("sink", "bias", "base", "ape", "scale"):
        return noise.mul_(0.5)
    if leaf == "embed":
        return noise
    return noise.div_(math.sqrt(shape[-1]))


class DSV4Model(nn.Module):
    def __init__(self, cfg: DSV4Config, devices: Sequence[torch.device | str] = ("cpu",), seed: int = 0) -> None:
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        self.cfg = cfg
        self.devices = list(dict.fromkeys(torch.device(d) for d in devices)) or [torch.device("cpu")]
        with torch.device(self.devices[0]):  # built and filled where the weights are drawn, no host copy
            self.embed = nn.Parameter(torch.empty(cfg.vocab_size, cfg.dim, dtype=dtype), requires_grad=False)
            self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
            self.hc_head = HyperHead(cfg)
            self.norm = nn.Parameter(torch.empty(cfg.dim, dtype=dtype), requires_grad=False)
            self.head = nn.Parameter(torch.empty(cfg.vocab_size, cfg.dim, dtype=torch.float32), requires_grad=False)
            self._init_weights(seed)
        n_dev = len(self.devices)
        self.layer_devices = [self.devices[i * n_dev // cfg.n_layers] for i in range(cfg.n_layers)]
        self.first_device, self.last_device = self.devices[0], self.devices[-1]
        self.embed.data = self.embed.data.to(self.first_device)
        for block, device in zip(self.blocks, self.layer_devices):
            block.to(device)
        self.hc_head.to(self.last_device)
        self.norm.data, self.head.data = self.norm.data.to(self.last_device), self.head.data.to(self.last_device)
        self.ropes = {str(d): rope_tables(cfg, d) for d in self.devices}

    @torch.no_grad()
    def _init_weights(self, seed: int) -> None:
        """Every weight drawn from one generator seeded with ``seed``, on the first device. On a GPU
        CUDA's generator fills them in place, where the host used to draw the ``small`` preset's 274 M
        weights and copy them over (on the H200 a graphlint worker spent 12-15 s building two
        instances while three workers drew on the host at once; 3.5 s for one on this project's CPU
        machine). Deterministic: the same weights for every decoder and device layout on one model of
        GPU (CUDA's draw depends on the GPU's SM count), but not the CPU's (another generator):
        compare decoders with each other on one machine, never a GPU run with a CPU one."""
        first = self.devices[0]
        gen = torch.Generator(device=first if first.type == "cuda" else "cpu").manual_seed(seed)
        for name, param in self.named_parameters():
            param.copy_(_initial_values(name, param.shape, gen))
        for name, table in self.named_buffers():
            if name.endswith("tid2eid") and table.numel():
                picks = torch.rand(table.shape[0], self.cfg.n_experts, generator=gen, device=gen.device).argsort(-1)
                table.copy_(picks[:, : table.shape[1]])

    def kernel_dtypes(self) -> tuple[torch.dtype, ...]:
        """What the step's kernels see: the weights' dtype and fp32 (logits, mHC mixing, norms)."""
        return tuple(dict.fromkeys((self.embed.dtype, torch.float32)))

    def rope(self, layer: int) -> Rope:
        return self.ropes[str(self.layer_devices[layer])]

    def new_caches(self) -> list[LayerCache]:
        return [new_cache(self.cfg, i, d) for i, d in enumerate(self.layer_devices)]

    def embed_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token ids [T] -> the hc_mult residual streams [T, n, D], each a copy of the embedding."""
        return F.embedding(tokens, self.embed).unsqueeze(1).expand(-1, self.cfg.hc_mult, -1).contiguous()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Streams [T, n, D] -> fp32 logits [T, vocab]."""
        y = kernels.rms_norm(self.hc_head(x), self.norm, self.cfg.norm_eps)
        return F.linear(y.float(), self.head)

    def decode_weight_bytes(self) -> int:
        """Bytes of weights one decode token reads: all but the embedding table and idle experts."""
        total = sum(p.numel() * p.element_size() for name, p in self.named_parameters() if name != "embed")
        idle = 1 - self.cfg.n_active_experts / self.cfg.n_experts
        for block in self.blocks:
            for w in (block.moe.w13, block.moe.w2):
                total -= int(w.numel() * w.element_size() * idle)
        return total + self.embed[0].numel() * self.embed.element_size()
