"""Every component against a plain reference written with loops and textbook formulas."""

import math

import torch
import torch.nn.functional as F

from dsv4 import kernels
from dsv4.mhc import HyperConnection
from dsv4.quant import fake_quant_rows
from dsv4.rope import apply_rope

TOL = dict(atol=1e-5, rtol=1e-5)


def naive_sinkhorn(logits, iters, eps=1e-6):
    p = [[math.exp(v) for v in row] for row in logits.tolist()]
    p = [[v / sum(row) + eps for v in row] for row in p]
    n = len(p)

    def cols(m):
        sums = [sum(m[i][j] for i in range(n)) + eps for j in range(n)]
        return [[m[i][j] / sums[j] for j in range(n)] for i in range(n)]

    p = cols(p)
    for _ in range(iters - 1):
        p = [[v / (sum(row) + eps) for v in row] for row in p]
        p = cols(p)
    return torch.tensor(p)


def test_rope_rotates_pairs_of_the_last_channels(gen):
    x = torch.randn(3, 10, generator=gen)
    angles = torch.randn(3, 2, generator=gen)
    out = apply_rope(x, angles.cos(), angles.sin())
    assert torch.equal(out[:, :6], x[:, :6])
    for t in range(3):
        for k in range(2):
            a, b, th = x[t, 6 + k].item(), x[t, 8 + k].item(), angles[t, k].item()
            assert math.isclose(out[t, 6 + k].item(), a * math.cos(th) - b * math.sin(th), abs_tol=1e-5)
            assert math.isclose(out[t, 8 + k].item(), a * math.sin(th) + b * math.cos(th), abs_tol=1e-5)


def test_hyper_connection_pre_and_post_match_loops(tiny_model, gen):
    hc: HyperConnection = tiny_model.blocks[0].attn_hc
    n, D = hc.n, tiny_model.cfg.dim
    x = torch.randn(2, n, D, generator=gen)
    y, post, comb = hc.pre(x)
    for t in range(2):
        flat = x[t].flatten()
        mixes = (hc.fn @ flat) / torch.sqrt(flat.square().mean() + hc.eps)
        pre = torch.sigmoid(mixes[:n] * hc.scale[0] + hc.base[:n]) + hc.eps
        expect_post = 2 * torch.sigmoid(mixes[n:2 * n] * hc.scale[1] + hc.base[n:2 * n])
        expect_comb = naive_sinkhorn((mixes[2 * n:] * hc.scale[2] + hc.base[2 * n:]).view(n, n), hc.iters)
        torch.testing.assert_close(y[t], sum(pre[i] * x[t, i] for i in range(n)), **TOL)
        torch.testing.assert_close(post[t], expect_post, **TOL)
        torch.testing.assert_close(comb[t], expect_comb, **TOL)
    f = torch.randn(2, D, generator=gen)
    out = HyperConnection.post(f, x, post, comb)
    for t in range(2):
        for j in range(n):
            expect = post[t, j] * f[t] + sum(comb[t, i, j] * x[t, i] for i in range(n))
            torch.testing.assert_close(out[t, j], expect, **TOL)


def test_router_matches_per_token_selection(tiny_model, gen):
    cfg = tiny_model.cfg
    router = tiny_model.blocks[cfg.n_hash_layers].moe.router
    h = torch.randn(6, cfg.dim, generator=gen)
    weights, ids = router(h, torch.arange(6))
    for t in range(6):
        scores = [math.sqrt(math.log1p(math.exp(v))) for v in (router.gate @ h[t]).tolist()]
        ranked = sorted(range(cfg.n_experts), key=lambda e: -(scores[e] + router.bias[e].item()))
        chosen = ranked[: cfg.n_active_experts]
        assert sorted(ids[t].tolist()) == sorted(chosen)
        total = sum(scores[e] for e in chosen)
        for k, e in enumerate(ids[t].tolist()):
            assert math.isclose(weights[t, k].item(), scores[e] / total * cfg.route_scale, rel_tol=1e-4)


def test_hash_router_uses_the_token_table(tiny_model, gen):
    router = tiny_model.blocks[0].moe.router
    assert router.hashed
    tokens = torch.tensor([3, 3, 250])
    _, ids = router(torch.randn(3, tiny_model.cfg.dim, generator=gen), tokens)
    assert torch.equal(ids, router.tid2eid[tokens])
    assert all(len(set(row)) == len(row) for row in router.tid2eid.tolist())


def naive_moe(moe, h, tokens):
    weights, ids = moe.router(h, tokens)
    xq = torch.cat([kernels.nvfp4_fake_quant(h[t:t + 1]) for t in range(h.shape[0])])

    def expert(x, w13, w2):
        gate, up = (w13 @ x).chunk(2)
        act = F.silu(gate.clamp(max=moe.limit)) * up.clamp(-moe.limit, moe.limit)
        return w2 @ kernels.nvfp4_fake_quant(act.unsqueeze(0))[0]

    rows = []
    for t in range(h.shape[0]):
        out = expert(xq[t], moe.shared_w13, moe.shared_w2)
        for k, e in enumerate(ids[t].tolist()):
            out = out + weights[t, k] * expert(xq[t], moe.w13[e], moe.w2[e])
        rows.append(out)
    return torch.stack(rows)


def test_moe_grouped_and_static_match_a_per_token_loop(tiny_model, gen):
    cfg = tiny_model.cfg
    for layer in (0, 2):  # hash-routed and score-routed
        moe = tiny_model.blocks[layer].moe
        h = torch.randn(5, cfg.dim, generator=gen)
        tokens = torch.randint(cfg.vocab_size, (5,), generator=gen)
        expect = naive_moe(moe, h, tokens)
        torch.testing.assert_close(moe.forward_grouped(h, tokens), expect, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(moe.forward_static(h, tokens), expect, atol=1e-4, rtol=1e-4)


def test_fake_quant_rows_quantises_each_token_on_its_own(gen):
    x = torch.randn(4, 32, generator=gen) * torch.tensor([[1.0], [100.0], [0.01], [0.0]])
    rows = fake_quant_rows(x)
    for t in range(4):
        assert torch.equal(rows[t:t + 1], kernels.nvfp4_fake_quant(x[t:t + 1]))
    assert torch.equal(rows[3], torch.zeros(32))


def test_compressor_pool_is_a_softmax_weighted_mean_then_norm_and_rope(tiny_model, gen):
    comp = tiny_model.blocks[2].attn.compressor
    hd = tiny_model.cfg.head_dim
    kv, score = torch.randn(comp.ratio, hd, generator=gen), torch.randn(comp.ratio, hd, generator=gen)
    cos, sin = tiny_model.rope(2)
    entry = comp.pool(kv, score, cos[32], sin[32])
    pooled = torch.zeros(hd)
    for c in range(hd):
        w = [math.exp(score[i, c].item()) for i in range(comp.ratio)]
        pooled[c] = sum(w[i] * kv[i, c].item() for i in range(comp.ratio)) / sum(w)
    normed = pooled / torch.sqrt(pooled.square().mean() + comp.eps) * comp.kv_norm
    torch.testing.assert_close(entry[0], apply_rope(normed, cos[32], sin[32]), **TOL)


def test_indexer_scores_and_stable_selection(tiny_model, gen):
    cfg = tiny_model.cfg
    idx = tiny_model.blocks[1].attn.indexer
    q_latent, h = torch.randn(2, cfg.q_lora_rank, generator=gen), torch.randn(2, cfg.dim, generator=gen)
    keys = torch.randn(7, cfg.index_head_dim, generator=gen)
    scores = idx.scores(q_latent, h, keys)
    q = (idx.wq @ q_latent.T).T.view(2, idx.n_heads, idx.head_dim)
    w = (idx.wweights @ h.T).T / math.sqrt(idx.n_heads)
    for t in range(2):
        for n in range(7):
            expect = sum(w[t, j] * max(0.0, (q[t, j] @ keys[n]).item() / math.sqrt(idx.head_dim))
                         for j in range(idx.n_heads))
            assert math.isclose(scores[t, n].item(), float(expect), rel_tol=1e-4, abs_tol=1e-5)
    assert idx.select(torch.tensor([[0.0, 2.0, 0.0, 0.0, 1.0]]), 3).tolist() == [[1, 4, 0]]
