"""Model configuration and presets.

``tiny`` runs the CPU tests, ``small`` the H200 benchmark. ``flash`` and ``pro`` record the
public DeepSeek-V4 sizes (see dsv4-architecture-notes) for reference; they are never built
here. Fields the public notes leave open (the indexer's sizes, the exact per-layer compress
ratio pattern) use DeepSeek-V3.2-like values and are marked "assumed" below.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypedDict


@dataclass(frozen=True)
class DSV4Config:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    head_dim: int
    rope_dim: int  # RoPE is applied to the last ``rope_dim`` channels of each head
    q_lora_rank: int
    o_groups: int
    o_lora_rank: int
    n_experts: int
    n_active_experts: int
    moe_inter_dim: int
    n_hash_layers: int  # the first layers route by token id through a fixed table
    window: int  # sliding-window ring cache length
    compress_ratios: tuple[int, ...]  # per layer: 0 = window only, else pool every `ratio` positions
    index_n_heads: int
    index_head_dim: int
    index_topk: int  # compressed entries the indexer keeps on ratio-4 layers
    max_seq_len: int
    hc_mult: int = 4
    sinkhorn_iters: int = 20
    swiglu_limit: float = 10.0
    route_scale: float = 1.0
    rope_theta: float = 10000.0
    norm_eps: float = 1e-6
    hc_eps: float = 1e-6
    dtype: str = "float32"  # parameter / activation dtype; logits are always fp32
    # NVFP4 fake quantisation of expert inputs. Rounding to the FP4 grid turns ULP-level GEMM
    # differences into visible logit jumps, so exact decoder comparisons may switch it off.
    fake_quant_experts: bool = True

    def __post_init__(self) -> None:
        if len(self.compress_ratios) != self.n_layers:
            raise ValueError("compress_ratios needs one entry per layer")
        if self.n_heads % self.o_groups:
            raise ValueError("n_heads must be a multiple of o_groups")
        if any(r and self.max_seq_len % r for r in self.compress_ratios):
            raise ValueError("max_seq_len must be a multiple of every compress ratio")
        if any(r == 4 and self.max_seq_len // 4 < self.index_topk for r in self.compress_ratios):
            raise ValueError("the indexer needs at least index_topk compressed slots")
        if self.dim % 16 or self.moe_inter_dim % 16:
            raise ValueError("NVFP4 blocks need dim and moe_inter_dim divisible by 16")

    def compressed_slots(self, layer: int) -> int:
        ratio = self.compress_ratios[layer]
        return self.max_seq_len // ratio if ratio else 0


class ConfigOverrides(TypedDict, total=False):
    """What ``make_target(..., **options)`` (``--option KEY=VALUE``) may override: every
    :class:`DSV4Config` field. graphlint reads this class from the source to refuse a misspelt
    option before it imports anything (``graphlint.dynamic.factory_check``); a test holds the two
    equal."""

    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    head_dim: int
    rope_dim: int
    q_lora_rank: int
    o_groups: int
    o_lora_rank: int
    n_experts: int
    n_active_experts: int
    moe_inter_dim: int
    n_hash_layers: int
    window: int
    compress_ratios: tuple[int, ...]
    index_n_heads: int
    index_head_dim: int
    index_topk: int
    max_seq_len: int
    hc_mult: int
    sinkhorn_iters: int
    swiglu_limit: float
    route_scale: float
    rope_theta: float
    norm_eps: float
    hc_eps: float
    dtype: str
    fake_quant_experts: bool


PRESETS: dict[str, DSV4Config] = {
    "tiny": DSV4Config(
        vocab_size=256, dim=64, n_layers=4, n_heads=4, head_dim=32, rope_dim=16,
        q_lora_rank=32, o_groups=2, o_lora_rank=32, n_experts=8, n_active_experts=2,
        moe_inter_dim=32, n_hash_layers=1, window=8, compress_ratios=(0, 4, 16, 4),
        index_n_heads=2, index_head_dim=16, index_topk=4, max_seq_len=128,
    ),
    "small": DSV4Config(
        vocab_size=8192, dim=1024, n_layers=8, n_heads=16, head_dim=128, rope_dim=64,
        q_lora_rank=512, o_groups=4, o_lora_rank=512, n_experts=16, n_active_experts=4,
        moe_inter_dim=512, n_hash_layers=2, window=128, compress_ratios=(0, 4, 128, 4, 0, 4, 128, 4),
        index_n_heads=8, index_head_dim=64, index_topk=16, max_seq_len=512, dtype="bfloat16",
    ),
    # Public V4-Flash sizes; the ratio pattern and the indexer sizes are assumed.
    "flash": DSV4Config(
        vocab_size=129280, dim=4096, n_layers=43, n_heads=64, head_dim=512, rope_dim=64,
        q_lora_rank=1024, o_groups=8, o_lora_rank=1024, n_experts=256, n_active_experts=6,
        moe_inter_dim=2048, n_hash_layers=3, window=128,
        compress_ratios=(0,) + (4, 128) * 21, index_n_heads=64, index_head_dim=128,
        index_topk=2048, max_seq_len=65536, dtype="bfloat16",
    ),
    # Public V4-Pro sizes (the seed's 61-layer model); ratio pattern and indexer sizes assumed.
    "pro": DSV4Config(
        vocab_size=129280, dim=7168, n_layers=61, n_heads=128, head_dim=512, rope_dim=64,
        q_lora_rank=1536, o_groups=16, o_lora_rank=1024, n_experts=384, n_active_experts=6,
        moe_inter_dim=3072, n_hash_layers=3, window=128,
        compress_ratios=(0,) + (4, 128) * 30, index_n_heads=64, index_head_dim=128,
        index_topk=2048, max_seq_len=65536, dtype="bfloat16",
    ),
}


def get_config(preset: str, **overrides: object) -> DSV4Config:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r} (expected one of {', '.join(PRESETS)})")
    return replace(PRESETS[preset], **overrides) if overrides else PRESETS[preset]
