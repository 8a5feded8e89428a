"""What a transformers config attribute is, by its name, and how it shrinks.

The vocabulary of :mod:`graphlint.targets.hf_config`: which names are layer counts, head counts,
head dimensions, widths, expert counts, windows, positions, vocabularies and token ids (one
pattern each, read over every config class of transformers), and the arithmetic that keeps a
shrunk model consistent: heads divided by ``fh``, head dimensions by ``fd``, widths by
``fw = fh * fd`` as multiples of 8. Torch-free, transformers-free.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from graphlint.targets.hf_layers import is_int

HEADS, HEAD_DIM, HIDDEN = 4, 16, 64
VOCAB = 512
WINDOW = 8  # sliding windows and attention chunks, in tokens: a decode of > 8 steps crosses one
POSITIONS = 4096  # max_position_embeddings and the like: room for any max_len a zoo uses
EXPERTS, PER_TOKEN = 4, 2

LAYER_COUNTS = re.compile(r"^(num_hidden_layers|n_layers?|num_layers|num_decoder_layers|decoder_layers|"
                          r"num_encoder_layers|encoder_layers|num_blocks|num_layers_per_stack)$")
HEAD_COUNTS = re.compile(r"(^|_)(heads|n_head|num_kv_heads|num_query_groups|n_groups|mamba_n_groups|n_heads|"
                         r"n_mamba_heads|attention_heads|num_heads|heads_per_\w+|o_groups)$|heads$")
HEAD_DIMS = re.compile(r"(head_dim|d_head|head_size|kv_channels|dim_head|rotary_dim|d_state|state_size|"
                       r"ssm_state_size|d_rel)$")
WIDTHS = re.compile(r"(hidden_size|intermediate_size|_size_mlp|ffn_dim|ffn_hidden_size|d_model|n_embd|n_inner|"
                    r"lora_rank|d_inner|dff|dim_ff|d_ssm|lru_width|embedding_size|embed_dim|embedding_dim|"
                    r"laurel_rank|dt_rank|time_step_rank|loop_gate_rank|hc_lowrank|gated_norm_rank|"
                    r"word_embed_proj_dim|expert_ffn_hidden_size|input_embedding_size|output_embedding_size|"
                    r"d_ff|emb_dim|prompt_mid_dim|attention_head_dim|backbone_hidden_size|intermediate_dim|"
                    r"latent_size|d_embed|hidden_dim|_in_dim|_out_dim|embds_dim)$")
EXPERT_COUNTS = re.compile(r"^(num_experts|num_local_experts|n_routed_experts|moe_num_experts|num_routed_experts|"
                           r"num_moe_experts|moe_num_routed_experts|zero_expert_num)$")
PER_TOKEN_COUNTS = re.compile(r"^(num_experts_per_tok|num_experts_per_token|moe_topk|moe_k|top_k_experts|"
                              r"num_selected_experts|router_topk|moe_top_k|experts_per_token)$")
SHARED_COUNTS = re.compile(r"^(n_shared_experts|num_shared_experts|moe_num_shared_experts|shared_experts)$")
WINDOWS = re.compile(r"(sliding_window|sliding_window_size|attention_window_size|attention_chunk_size|window_size|"
                     r"local_attention|local_attention_window_len|keep_window_size)$")
POSITION_COUNTS = re.compile(r"^(max_position_embeddings|n_positions|n_ctx|max_seq_len|context_length|"
                             r"max_target_positions|max_sequence_length|model_max_length|seq_length)$")
VOCABS = re.compile(r"^(vocab_size|decoder_vocab_size|unpadded_vocab_size|output_vocab_size|"
                    r"vocab_size_per_layer_input)$")
TOKEN_IDS = re.compile(r"^(?!.*layer).*(_token_id|_token_index|_token_ids|_index)$")  # not moe_layer_start_index
GROUPS = ("n_group", "num_expert_group")  # expert groups (DeepSeek routing): 2 groups of 2
TOPK_GROUPS = ("topk_group",)


@dataclasses.dataclass
class Factors:
    heads: int = 1  # fh: attention heads are divided by this
    head_dim: int = 1  # fd: head dimensions (and SSM state sizes) by this

    @property
    def width(self) -> int:  # fw = fh * fd: every width
        return self.heads * self.head_dim


def first(values: dict, names) -> Any:
    return next((values[n] for n in names if isinstance(values.get(n), int) and not isinstance(values.get(n), bool)), None)


def divisor_near(value: int, target: int) -> int:
    """The divisor of ``value`` closest to ``target`` from below (``value`` itself when smaller)."""
    if value <= target:
        return value
    return max(d for d in range(1, target + 1) if value % d == 0)


def factors(values: dict[str, Any]) -> Factors:
    heads = first(values, ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads",
                            "attention_heads", "mamba_n_heads", "num_decoder_attention_heads"))
    hidden = first(values, ("hidden_size", "d_model", "n_embd", "embedding_dim", "embed_dim", "dim"))
    head_dim = first(values, ("head_dim", "attention_head_size", "d_head", "kv_channels", "dim_head",
                               "mamba_d_head", "attention_head_dim"))
    if head_dim is None and heads and hidden and hidden % heads == 0:
        head_dim = hidden // heads
    out = Factors()
    if heads:
        out.heads = heads // divisor_near(heads, HEADS)
    if head_dim:
        target = divisor_near(head_dim, HEAD_DIM)
        out.head_dim = head_dim // (target if target % 2 == 0 or target == head_dim else target - 1 or 1)
    if not heads and hidden:  # no attention (Mamba, RWKV): the widths alone
        out.head_dim = hidden // divisor_near(hidden, HIDDEN)
    return out


def width(value: int, f: int) -> int:
    """``value / f`` as a multiple of 8 (16 bytes in bf16: grouped GEMMs need aligned strides), at
    least 8; exact when it divides (a width that is a product of heads and head dims stays one)."""
    if f <= 1 or value <= 8:
        return value
    if value % f == 0 and (value // f) % 8 == 0:
        return value // f
    return max(8, 8 * round(value / f / 8))


def heads(value: int, f: int, heads: int | None) -> int:
    new = max(1, math.ceil(value / f)) if f > 1 else value
    if heads and new and heads % new:  # key/value heads (and groups) must divide the query heads
        new = max(d for d in range(1, new + 1) if heads % d == 0)
    return new


def head_dim(value: int, f: int) -> int:
    if f <= 1 or value <= 0:
        return value
    new = max(2, value // f) if value % f == 0 else max(2, round(value / f))
    return new + (new % 2)  # rotary halves need an even size


QUERY_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads", "attention_heads")


def rope(params: dict, f: Factors) -> dict:
    """Rotary parameters: per-frequency lists (LongRoPE factors) and M-RoPE sections follow the head dim."""
    out = dict(params)
    for key, value in params.items():
        if not isinstance(value, list) or not value or f.head_dim <= 1:
            continue
        if key == "mrope_section" and all(is_int(v) for v in value):
            total = sum(value) // f.head_dim
            sections = [max(1, v // f.head_dim) for v in value]
            sections[-1] += total - sum(sections)
            out[key] = sections
        elif all(isinstance(v, (int, float)) for v in value):
            out[key] = value[:: f.head_dim] if len(value) >= f.head_dim else value
    if is_int(params.get("original_max_position_embeddings")):  # strictly below the new max positions
        out["original_max_position_embeddings"] = min(params["original_max_position_embeddings"], POSITIONS // 2)
    return out
