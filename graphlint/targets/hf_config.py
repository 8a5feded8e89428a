"""A tiny config for any transformers architecture, derived from its own defaults.

``tiny_config("mixtral")`` takes the architecture's config class (``CONFIG_MAPPING``), builds it
with its defaults (the released model's shape) and divides that shape down, so a zoo of every
causal LM runs in seconds and no config is written by hand (the issue-21 trial's hand-written
deepseek_v3 config failed at warm-up on a shape mismatch of its own making).

The rule is one idea, applied by attribute name: **keep the model's proportions, divide its
widths**. Attention heads are divided by ``fh`` (to 4 heads), head dimensions by ``fd`` (to 16),
and every width (hidden size, intermediate and MoE sizes, LoRA ranks, embeddings) by
``fw = fh * fd``. A model whose widths are products of heads and head dimensions (``hidden =
heads * head_dim``, a Mamba block's ``expand * hidden = heads * head_dim``, MLA's
``qk_head_dim = nope + rope``) stays consistent without knowing it. Counts are set, not divided:
experts (4 routed, 2 per token, 1 shared, groups kept meaningful), a vocabulary of
:data:`VOCAB`, positions enough for ``max_len``. Layers: one of every kind the config states or
derives, at the model's own positions (:mod:`graphlint.targets.hf_layers`): a Gemma 3 keeps a
sliding and a full layer, a DeepSeek its dense first layer and an MoE one, a Gemma 3n its
KV-storing and KV-reusing layers. Sliding windows and attention chunks become :data:`WINDOW`
tokens, fewer than a zoo's decode steps, so the window is crossed. What each attribute name
means, and the arithmetic, is :mod:`graphlint.targets.hf_sizes`.

Per-architecture exceptions: none. An architecture the rules cannot shrink fails to build or
to run a step, and says so; ``tests/dynamic/test_hf_config.py`` counts them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from graphlint.targets import hf_layers
from graphlint.targets.hf_layers import Layers, is_int
from graphlint.targets.hf_sizes import (EXPERT_COUNTS, EXPERTS, GROUPS, HEAD_COUNTS, HEAD_DIMS, LAYER_COUNTS,
                                        PER_TOKEN, PER_TOKEN_COUNTS, POSITION_COUNTS, POSITIONS, QUERY_HEADS,
                                        SHARED_COUNTS, TOKEN_IDS, TOPK_GROUPS, VOCAB, VOCABS, WIDTHS, WINDOW, WINDOWS,
                                        Factors, factors, first, head_dim, heads, rope, width)


@dataclasses.dataclass
class _Plan:
    values: dict[str, Any]
    f: Factors
    query_heads: int | None
    layers: Layers | None


def _values(config) -> dict[str, Any]:
    """The config's own values: its instance dict first (a heterogeneous config -- Gemma 4 -- refuses
    ``getattr`` of a per-layer attribute), then its remaining fields."""
    out = {n: v for n, v in vars(config).items() if not n.startswith("_")}
    for name in _fields(type(config)) - set(out):
        try:
            out[name] = getattr(config, name)
        except Exception:  # noqa: BLE001 - a per-layer attribute or a property that needs more
            continue
    return dict(sorted(out.items()))


def _properties(config) -> dict[str, Any]:
    """What a config derives (``@property``: Jamba's ``layers_block_type``)."""
    out = {}
    for name in dir(type(config)):
        if isinstance(getattr(type(config), name, None), property) and not name.startswith("_"):
            try:
                out[name] = getattr(config, name)
            except Exception:  # noqa: BLE001 - a property that needs what this config lacks
                continue
    return out


def _fields(cls) -> set[str]:
    try:
        return {f.name for f in dataclasses.fields(cls)}
    except TypeError:
        import inspect

        return set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}


def layer_count(values: dict[str, Any]) -> int:
    return first(values, ("num_hidden_layers", *sorted(n for n in values if LAYER_COUNTS.match(n)))) or 0


def select_layers(config, how: str = "pick") -> Layers | None:
    """The layers a tiny ``config`` keeps (:mod:`graphlint.targets.hf_layers`); ``None`` without layers."""
    values = _values(config)
    count = layer_count(values)
    if count < 2:
        return None
    kinds, explicit = hf_layers.patterns(values, {**_properties(config), **values}, count)
    return hf_layers.pick(kinds, count) if how == "pick" and explicit else hf_layers.prefix(kinds, count)


def shrink(config, how: str = "pick") -> dict[str, Any]:
    """The keyword arguments that rebuild ``config`` (a default instance) tiny: see the module doc.
    ``how``: ``pick`` or ``prefix``, the layer selection (:mod:`graphlint.targets.hf_layers`)."""
    values = _values(config)
    f = factors(values)
    heads_name = next((n for n in QUERY_HEADS if is_int(values.get(n))), None)
    plan = _Plan(values, f, heads(values[heads_name], f.heads, None) if heads_name else None,
                 select_layers(config, how))
    out: dict[str, Any] = {}
    for name, value in values.items():
        new = _shrunk(name, value, plan, how)
        if new is not _SAME and new != value:
            out[name] = new
    per_layer = config.to_dict().get("per_layer_config")
    if isinstance(per_layer, dict) and per_layer and plan.layers:
        out["per_layer_config"] = {plan.layers.position(int(k)): {n: _keep(_shrunk(n, v, plan, how), v)
                                                                  for n, v in overrides.items()}
                                   for k, overrides in per_layer.items() if int(k) in plan.layers.kept}
    _fill_unset(values, out, plan.query_heads)
    _cap_token_ids(values, out)
    return out


def _fill_unset(values: dict, out: dict, query_heads: int | None) -> None:
    """Sizes a default leaves unset (``None``) that the model needs, given the meaning every other
    architecture gives them: ``head_dim`` = hidden / heads, key/value heads = query heads, an expert
    count and experts per token as for any MoE; and a causal LM runs as a decoder (``is_decoder``)."""
    hidden = next((out.get(n, values.get(n)) for n in ("hidden_size", "d_model", "n_embd") if is_int(values.get(n))),
                  None)
    if "head_dim" in values and values["head_dim"] is None and hidden and query_heads:
        out["head_dim"] = hidden // query_heads
    for name in ("num_key_value_heads", "num_kv_heads"):
        if name in values and values[name] is None and query_heads:
            out[name] = query_heads
    moe = any(EXPERT_COUNTS.match(n) or PER_TOKEN_COUNTS.match(n) for n in values)
    for name, value in values.items():
        if value is None and moe and EXPERT_COUNTS.match(name):
            out[name] = EXPERTS
        elif value is None and moe and PER_TOKEN_COUNTS.match(name):
            out[name] = PER_TOKEN
        elif value is None and moe and SHARED_COUNTS.match(name):
            out[name] = 1
    if values.get("is_decoder") is False:
        out["is_decoder"] = True


_SAME = object()


def _keep(new: Any, old: Any) -> Any:
    return old if new is _SAME else new


def _shrunk(name: str, value: Any, plan: _Plan, how: str) -> Any:
    if hasattr(value, "to_dict") and hasattr(type(value), "model_type"):  # a sub-config (text, vision, ...)
        fields = _fields(type(value))  # to_dict's bookkeeping keys (_name_or_path) are refused by some classes
        return {**{k: v for k, v in value.to_dict().items() if k in fields or not fields}, **shrink(value, how)}
    if isinstance(value, dict) and ("rope_type" in value or "rope_theta" in value):
        return rope(value, plan.f)
    if isinstance(value, dict) and value and all(isinstance(v, dict) and ("rope_type" in v or "rope_theta" in v)
                                                 for v in value.values()):
        return {k: rope(v, plan.f) for k, v in value.items()}  # per layer type (Gemma 3: sliding and full)
    layers = plan.layers
    if isinstance(value, (list, tuple)):
        if layers and hf_layers.is_per_layer(value, layers.original):
            return [_keep(_scalar(name, v, plan), v) if is_int(v) else v for v in layers.take(value)]
        if layers and hf_layers.is_index_list(name, value, layers.original):
            return [layers.position(i) for i in value if i in layers.kept]
        if value and all(is_int(v) for v in value) and WIDTHS.search(name):  # Reformer's axial_pos_embds_dim
            return type(value)(width(v, plan.f.width) for v in value)
        return _SAME
    return _scalar(name, value, plan) if is_int(value) else _SAME


def _scalar(name: str, value: int, plan: _Plan) -> Any:
    f, layers = plan.f, plan.layers
    if layers and LAYER_COUNTS.match(name):
        return len(layers) if value == layers.original else min(value, len(layers))
    if layers and 0 < value <= layers.original:
        if hf_layers.LEADING.match(name):
            return layers.below(value)
        if hf_layers.TRAILING.match(name):
            return layers.from_(layers.original - value)
        if hf_layers.RANGE_START.match(name):
            return layers.first_at_or_after(value)
        if hf_layers.RANGE_END.match(name):
            return layers.last_at_or_before(value)
    if EXPERT_COUNTS.match(name):
        return min(value, EXPERTS) if value > 1 else value
    if PER_TOKEN_COUNTS.match(name):
        return min(value, PER_TOKEN)
    if SHARED_COUNTS.match(name):
        return min(value, 1)
    if name in GROUPS:
        return 2 if value > 1 else value
    if name in TOPK_GROUPS:
        return 1 if value > 1 else value
    if VOCABS.match(name):
        return min(value, VOCAB)
    if POSITION_COUNTS.match(name):
        return min(value, POSITIONS)
    if WINDOWS.search(name):
        return min(value, WINDOW) if value > 0 else value
    if name in QUERY_HEADS:
        return plan.query_heads if value == plan.values.get(name) and plan.query_heads else heads(value, f.heads, None)
    if HEAD_COUNTS.search(name):
        shares = "key_value" in name or "kv" in name or "group" in name
        return heads(value, f.heads, plan.query_heads if shares else None)
    if HEAD_DIMS.search(name):
        return head_dim(value, f.head_dim)
    if WIDTHS.search(name):
        return width(value, f.width)
    return _SAME


def _cap_token_ids(values: dict, out: dict) -> None:
    """Special token ids past the new vocabulary move to its top, distinct, in name order. A multimodal
    config has no vocabulary of its own: its text part's counts, and the ids its parts use are taken."""
    parts = [v for v in out.values() if isinstance(v, dict) and is_int(v.get("vocab_size"))]
    vocab = out.get("vocab_size", values.get("vocab_size"))
    if not is_int(vocab):
        vocab = min((p["vocab_size"] for p in parts), default=None)
    if not is_int(vocab):
        return
    taken = {i for p in parts for n, v in p.items() if TOKEN_IDS.search(n)
             for i in (v if isinstance(v, list) else [v]) if is_int(i)}
    free = iter(i for i in range(vocab - 1, vocab // 2, -1) if i not in taken)
    remap: dict[int, int] = {}

    def cap(v):
        if not is_int(v) or v < vocab:
            return v
        if v not in remap:
            remap[v] = next(free)
        return remap[v]

    for name, value in values.items():
        if not TOKEN_IDS.search(name) or name in out:
            continue
        new = [cap(v) for v in value] if isinstance(value, list) else cap(value)
        if new != value:
            out[name] = new


def reserved_ids(config) -> set[int]:
    """Token ids a decode must not feed as text (image, audio, boundary tokens of a multimodal model)."""
    text = config.get_text_config(decoder=True)
    ids: set[int] = set()
    for c in {id(config): config, id(text): text}.values():
        for name, value in _values(c).items():
            if TOKEN_IDS.search(name) and not name.startswith(("pad", "bos", "eos", "decoder_start")):
                ids |= {v for v in (value if isinstance(value, list) else [value]) if is_int(v)}
    return ids


def config_class(arch: str):
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[arch]


def tiny_config(arch: str):
    """The architecture's config with its defaults shrunk (see the module doc), as the causal-LM
    class takes it (Musicgen's takes its ``decoder`` sub-config). Layers are picked, and taken as a
    prefix instead when the picked config does not validate or derives other kinds of layer at the
    kept positions (:mod:`graphlint.targets.hf_layers`). Raises what the config class raises when
    neither validates."""
    cls = config_class(arch)
    default = cls()
    try:
        kwargs = shrink(default, "pick")
        config = cls(**kwargs)
        if not _same_kinds(default, config):
            raise ValueError("the picked layers derive other kinds of layer")
    except Exception:  # noqa: BLE001 - the config's validators decide; the prefix is the fallback
        kwargs = shrink(default, "prefix")
        config = cls(**kwargs)
    config = with_attention_layer(cls, kwargs, config)
    wanted = getattr(causal_lm_class(arch), "config_class", None)
    if wanted is not None and not isinstance(config, wanted):
        config = next((sub for sub in vars(config).values() if isinstance(sub, wanted)), config)
    return config


def with_attention_layer(cls, kwargs: dict[str, Any], config):
    """A hybrid whose defaults state no attention layer gets one: its last layer.

    Bamba and Granite 4.0-H default to every layer ``linear_attention`` (their released models put
    attention layers among them), and their forward builds an attention mask that asks the cache
    for a length only an attention layer holds, so the default cannot decode at all. A config
    whose layers are all ``linear_attention`` and which has a way to state attention layers --
    a ``layer_types`` field, or an unset attention index list (``attn_layer_indices``) -- is rebuilt
    with its last layer ``full_attention``; a pure state-space model (Mamba) has no such way and
    is left as it is. The rebuilt config must derive exactly that, or the original is kept."""
    types = list(getattr(config, "layer_types", None) or [])
    if not types or set(types) != {LINEAR}:
        return config
    wanted = [LINEAR] * (len(types) - 1) + [ATTENTION]
    fields, values = _fields(cls), _values(config)
    if "layer_types" in fields:
        change = {"layer_types": wanted}
    else:
        index = next((n for n in sorted(fields) if _ATTENTION_INDEX.search(n) and values.get(n) is None), None)
        if index is None:
            return config
        change = {index: [len(types) - 1]}
    try:
        rebuilt = cls(**{**kwargs, **change})
    except Exception:  # noqa: BLE001 - the config refuses: the default's kinds stay
        return config
    return rebuilt if list(getattr(rebuilt, "layer_types", None) or []) == wanted else config


LINEAR, ATTENTION = "linear_attention", "full_attention"
_ATTENTION_INDEX = re.compile(r"^(attn|attention)_layer_(indices|idxs|ids)$")


def _same_kinds(default, tiny) -> bool:
    """Whether every per-layer list ``tiny`` (text part) states or derives is the default's, at the kept layers."""
    old, new = default.get_text_config(decoder=True), tiny.get_text_config(decoder=True)
    chosen = select_layers(old, "pick")
    if chosen is None:
        return True
    before, after = {**_properties(old), **_values(old)}, {**_properties(new), **_values(new)}
    for name, value in before.items():
        if hf_layers.is_per_layer(value, chosen.original) and name in after and not name.startswith("_"):
            if all(is_int(v) for v in value):
                continue  # per-layer sizes (Gemma 3n's intermediate_size) are shrunk, not compared
            if list(after[name]) != chosen.take(list(value)):
                return False
    return True


def causal_lm_class(arch: str):
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(arch, ""), None)


def causal_lm_architectures() -> list[str]:
    """Every model type the installed transformers maps to a causal LM class, sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def describe(config) -> str:
    """``2 layers, hidden 64, 4/2 heads x 16, 4 experts (2 per token)``: a row's config column. A
    config with a vocabulary of its own describes itself (Bart's ``get_text_config`` is another one)."""
    own = _values(config)
    text = config if is_int(own.get("vocab_size")) else config.get_text_config(decoder=True)
    v = own if text is config else _values(text)
    parts = []
    layers = first(v, [n for n in v if LAYER_COUNTS.match(n)])
    if layers:
        parts.append(f"{layers} layers")
    hidden = first(v, ("hidden_size", "d_model", "n_embd"))
    if hidden:
        parts.append(f"hidden {hidden}")
    heads = first(v, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
    kv = first(v, ("num_key_value_heads", "num_kv_heads"))
    dim = first(v, ("head_dim",))
    if heads:
        parts.append(f"{heads}{f'/{kv}' if kv and kv != heads else ''} heads" + (f" x {dim}" if dim else ""))
    experts = first(v, [n for n in v if EXPERT_COUNTS.match(n)])
    if experts and experts > 1:
        k = first(v, [n for n in v if PER_TOKEN_COUNTS.match(n)])
        parts.append(f"{experts} experts" + (f" ({k} per token)" if k else ""))
    kinds = sorted({str(t) for t in (getattr(text, "layer_types", None) or [])})
    if len(kinds) > 1:
        parts.append("/".join(kinds))
    window = first(v, [n for n in v if WINDOWS.search(n)])
    if window:
        parts.append(f"window {window}")
    return ", ".join(parts)
