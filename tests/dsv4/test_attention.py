"""Attention (window ring, compressor commits, indexer top-k, sinks) against a from-scratch loop."""

import math

import pytest
import torch

from dsv4.attention import new_cache

S = 40  # past the window (8) and several compressor blocks (ratios 4 and 16)


def naive_attention(attn, h, cos, sin):
    """Recompute everything for every query position from the whole sequence."""
    q, kv, q_latent = attn.project(h, cos[:S], sin[:S])
    r, W = attn.ratio, attn.window
    entries = []
    if r:
        kv_rows, scores = attn.compressor.project(h, torch.arange(S) % r)
        for b in range(S // r):
            block = slice(b * r, (b + 1) * r)
            entries.append(attn.compressor.pool(kv_rows[block], scores[block], cos[b * r], sin[b * r])[0])
    outs = []
    for t in range(S):
        keys = [kv[p] for p in range(max(0, t - W + 1), t + 1)]
        visible = [b for b in range(len(entries)) if (b + 1) * r - 1 <= t]
        if attn.indexer is not None and visible:
            index_keys = torch.stack([attn.indexer.key(entries[b][None])[0] for b in visible])
            relevance = attn.indexer.scores(q_latent[t:t + 1], h[t:t + 1], index_keys)[0].tolist()
            best = sorted(range(len(visible)), key=lambda j: (-relevance[j], j))[: attn.indexer.top_k]
            visible = [visible[j] for j in best]
        keys = torch.stack(keys + [entries[b] for b in visible])
        heads = []
        for head in range(attn.n_heads):
            logits = [(q[t, head] @ k).item() / math.sqrt(attn.head_dim) for k in keys]
            top = max(logits + [attn.sink[head].item()])
            weights = [math.exp(v - top) for v in logits]
            total = sum(weights) + math.exp(attn.sink[head].item() - top)
            heads.append(sum(w / total * k for w, k in zip(weights, keys)))
        outs.append(torch.stack(heads))
    return attn.output(torch.stack(outs))


@pytest.mark.parametrize("layer", [0, 1, 2], ids=["window-only", "ratio4-indexer", "ratio16"])
def test_prefill_and_both_decode_paths_match_the_loop(tiny_model, gen, layer):
    cfg, attn = tiny_model.cfg, tiny_model.blocks[layer].attn
    cos, sin = tiny_model.rope(layer)
    h = torch.randn(S, cfg.dim, generator=gen)
    with torch.no_grad():
        expect = naive_attention(attn, h, cos, sin)
        q, kv, q_latent = attn.project(h, cos[:S], sin[:S])
        batched = attn.attend_eager(q, kv, q_latent, h, new_cache(cfg, layer, "cpu"), 0, cos, sin)
        torch.testing.assert_close(batched, expect, atol=1e-5, rtol=1e-4)
        eager_cache, static_cache = new_cache(cfg, layer, "cpu"), new_cache(cfg, layer, "cpu")
        for t in range(S):
            row = slice(t, t + 1)
            args = (q[row], kv[row], q_latent[row], h[row])
            one = attn.attend_eager(*args, eager_cache, t, cos, sin)
            fixed = attn.attend_static(*args, static_cache, torch.tensor([t]), cos, sin)
            torch.testing.assert_close(one, expect[row], atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(fixed, expect[row], atol=1e-5, rtol=1e-4)
        for name in ("ring", "comp", "index_keys", "state_kv", "state_score"):
            if getattr(eager_cache, name) is not None:
                torch.testing.assert_close(getattr(static_cache, name), getattr(eager_cache, name))
