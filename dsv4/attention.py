"""Attention: low-rank queries, one shared KV head (K = V), a sliding-window ring cache plus
compressed entries, and a per-head sink logit.

``attend_eager`` is the reference: Python positions, a host-side compressor branch and caches
sliced to their current length. ``attend_static`` is graph-ready: positions are a device tensor,
the compressor runs every step and commits with a boundary mask, and attention reads fixed-shape
buffers with validity masks instead of slices.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from dsv4 import kernels
from dsv4.compressor import Compressor, Indexer
from dsv4.config import DSV4Config
from dsv4.rope import apply_rope


@dataclass
class LayerCache:
    """One layer's decode state, allocated once and updated in place."""

    ring: torch.Tensor  # [window, hd] kv of the last `window` positions, slot = pos % window
    comp: torch.Tensor | None = None  # [max_seq_len // ratio, hd] committed compressed entries
    index_keys: torch.Tensor | None = None  # [max_seq_len // ratio, index_head_dim] (ratio 4)
    state_kv: torch.Tensor | None = None  # [ratio, hd] the block being accumulated
    state_score: torch.Tensor | None = None  # [ratio, hd] fp32 gate scores of that block

    def reset(self) -> None:
        for f in fields(self):
            tensor = getattr(self, f.name)
            if tensor is not None:
                tensor.zero_()


def new_cache(cfg: DSV4Config, layer: int, device: torch.device) -> LayerCache:
    dtype, hd, ratio = getattr(torch, cfg.dtype), cfg.head_dim, cfg.compress_ratios[layer]
    cache = LayerCache(ring=torch.zeros(cfg.window, hd, dtype=dtype, device=device))
    if ratio:
        slots = cfg.compressed_slots(layer)
        cache.comp = torch.zeros(slots, hd, dtype=dtype, device=device)
        cache.state_kv = torch.zeros(ratio, hd, dtype=dtype, device=device)
        cache.state_score = torch.zeros(ratio, hd, dtype=torch.float32, device=device)
    if ratio == 4:
        cache.index_keys = torch.zeros(slots, cfg.index_head_dim, dtype=dtype, device=device)
    return cache


def attend(q: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor, sink: torch.Tensor) -> torch.Tensor:
    """Softmax attention of q [T, H, hd] over shared keys = values [K, hd], mask [T, K], with a
    per-head sink logit that takes probability mass without contributing a value."""
    scores = torch.einsum("thd,kd->thk", q.float(), keys.float()) * q.shape[-1] ** -0.5
    scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
    sinks = sink.view(1, -1, 1).expand(scores.shape[0], -1, 1)
    probs = torch.softmax(torch.cat([scores, sinks], dim=-1), dim=-1)[..., :-1]
    return torch.einsum("thk,kd->thd", probs, keys.float()).to(q.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: DSV4Config, layer: int) -> None:
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        H, hd, g = cfg.n_heads, cfg.head_dim, cfg.o_groups
        self.n_heads, self.head_dim, self.groups = H, hd, g
        self.window, self.ratio, self.eps = cfg.window, cfg.compress_ratios[layer], cfg.norm_eps

        def weight(*shape: int, dt: torch.dtype = dtype) -> nn.Parameter:
            return nn.Parameter(torch.empty(shape, dtype=dt), requires_grad=False)

        self.wq_a, self.q_norm = weight(cfg.q_lora_rank, cfg.dim), weight(cfg.q_lora_rank)
        self.wq_b = weight(H * hd, cfg.q_lora_rank)
        self.wkv, self.kv_norm = weight(hd, cfg.dim), weight(hd)
        self.wo_a = weight(g, cfg.o_lora_rank, H // g * hd)  # grouped low-rank output projection
        self.wo_b = weight(cfg.dim, g * cfg.o_lora_rank)
        self.sink = weight(H, dt=torch.float32)
        self.register_buffer("head_ones", torch.ones(hd, dtype=dtype), persistent=False)
        self.register_buffer("ring_slots", torch.arange(cfg.window), persistent=False)
        self.register_buffer("comp_slots", torch.arange(cfg.compressed_slots(layer)), persistent=False)
        self.compressor = Compressor(cfg, self.ratio) if self.ratio else None
        self.indexer = Indexer(cfg) if self.ratio == 4 else None

    def project(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """Queries [T, H, hd], the shared kv [T, hd] and the query latent [T, q_lora] (indexer input)."""
        q_latent = kernels.rms_norm(F.linear(h, self.wq_a), self.q_norm, self.eps)
        q = F.linear(q_latent, self.wq_b).view(h.shape[0], self.n_heads, self.head_dim)
        q = apply_rope(kernels.rms_norm(q, self.head_ones, self.eps), cos.unsqueeze(1), sin.unsqueeze(1))
        kv = apply_rope(kernels.rms_norm(F.linear(h, self.wkv), self.kv_norm, self.eps), cos, sin)
        return q, kv, q_latent

    def output(self, o: torch.Tensor) -> torch.Tensor:
        grouped = o.reshape(o.shape[0], self.groups, -1)
        return F.linear(torch.einsum("tgi,goi->tgo", grouped, self.wo_a).flatten(1), self.wo_b)

    # -- reference path ------------------------------------------------------------------------
    def attend_eager(self, q, kv, q_latent, h, cache: LayerCache, start: int, cos, sin) -> torch.Tensor:
        """Attention for tokens at positions start .. start+T-1 (prefill or one decode token)."""
        W, end = self.window, start + q.shape[0]
        first = max(0, start - W + 1)
        cached = [cache.ring[p % W] for p in range(first, start)]
        keys = torch.cat([torch.stack(cached), kv]) if cached else kv
        key_pos = torch.arange(first, end, device=q.device)
        query_pos = torch.arange(start, end, device=q.device).unsqueeze(1)
        mask = (key_pos <= query_pos) & (key_pos > query_pos - W)
        if self.compressor is not None:
            comp_keys, comp_mask = self._compressed_eager(h, q_latent, cache, start, cos, sin)
            keys, mask = torch.cat([keys, comp_keys]), torch.cat([mask, comp_mask], dim=1)
        for i, pos in enumerate(range(start, end)):
            cache.ring[pos % W] = kv[i]
        return self.output(attend(q, keys, mask, self.sink))

    def _compressed_eager(self, h, q_latent, cache: LayerCache, start: int, cos, sin):
        r, end = self.ratio, start + h.shape[0]
        kv_rows, scores = self.compressor.project(h, torch.arange(start, end, device=h.device) % r)
        for i, pos in enumerate(range(start, end)):
            cache.state_kv[pos % r] = kv_rows[i]
            cache.state_score[pos % r] = scores[i]
            if (pos + 1) % r == 0:
                block = pos // r
                entry = self.compressor.pool(cache.state_kv, cache.state_score, cos[block * r], sin[block * r])
                cache.comp[block] = entry[0]
                if self.indexer is not None:
                    cache.index_keys[block] = self.indexer.key(entry)[0]
        n_comp = end // r
        last_pos = (torch.arange(n_comp, device=h.device) + 1) * r - 1
        visible = last_pos <= torch.arange(start, end, device=h.device).unsqueeze(1)
        if self.indexer is not None and n_comp > 0:
            relevance = self.indexer.scores(q_latent, h, cache.index_keys[:n_comp])
            masked = relevance.masked_fill(~visible, float("-inf"))
            top = self.indexer.select(masked, min(self.indexer.top_k, n_comp))
            visible = visible & torch.zeros_like(visible).scatter_(1, top, True)
        return cache.comp[:n_comp], visible

    # -- graph-ready path ----------------------------------------------------------------------
    def attend_static(self, q, kv, q_latent, h, cache: LayerCache, pos: torch.Tensor, cos, sin) -> torch.Tensor:
        """One decode token at device position ``pos`` [1]; every shape is fixed."""
        W = self.window
        cache.ring.index_copy_(0, pos % W, kv)
        held = pos - (pos - self.ring_slots) % W  # the position each ring slot holds
        keys, mask = cache.ring, (held >= 0).unsqueeze(0)
        if self.compressor is not None:
            comp_keys, comp_mask = self._compressed_static(h, q_latent, cache, pos, cos, sin)
            keys, mask = torch.cat([keys, comp_keys]), torch.cat([mask, comp_mask], dim=1)
        return self.output(attend(q, keys, mask, self.sink))

    def _compressed_static(self, h, q_latent, cache: LayerCache, pos: torch.Tensor, cos, sin):
        r = self.ratio
        slot, block = pos % r, pos // r
        kv_row, score = self.compressor.project(h, slot)
        cache.state_kv.index_copy_(0, slot, kv_row)
        cache.state_score.index_copy_(0, slot, score)
        self._commit_block(cache, pos, cos, sin)
        valid = self.comp_slots < (pos + 1) // r
        if self.indexer is None:
            return cache.comp, valid.unsqueeze(0)
        relevance = self.indexer.scores(q_latent, h, cache.index_keys)
        top = self.indexer.select(relevance.masked_fill(~valid, float("-inf")), self.indexer.top_k)[0]
        return cache.comp.index_select(0, top), valid.index_select(0, top).unsqueeze(0)

    def _commit_block(self, cache: LayerCache, pos: torch.Tensor, cos, sin) -> None:
        """Pool the block being accumulated and commit it (and its index key) only where it is
        complete: a device-side boundary mask, the same work on every step."""
        r = self.ratio
        block = pos // r
        first = block * r
        entry = self.compressor.pool(cache.state_kv, cache.state_score,
                                     cos.index_select(0, first), sin.index_select(0, first))
        boundary = ((pos + 1) % r == 0).unsqueeze(-1)
        cache.comp.index_copy_(0, block, torch.where(boundary, entry, cache.comp.index_select(0, block)))
        if self.indexer is not None:
            key = self.indexer.key(entry)
            cache.index_keys.index_copy_(0, block, torch.where(boundary, key, cache.index_keys.index_select(0, block)))
