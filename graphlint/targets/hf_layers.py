"""Which of a model's layers a tiny config keeps: one of every kind, in the model's own order.

A released model repeats a few kinds of layer: sliding and full attention, linear attention,
dense and MoE MLPs, layers that store or reuse another layer's KV. A tiny config needs each kind
once, where the model puts it, and nothing else. The kinds are read from the config: its
per-layer lists (``layer_types``, ``mlp_layer_types``, ``kv_sharing_modes``, a per-layer
``intermediate_size``...), the lists it derives (Jamba's ``layers_block_type`` property), layer
index lists (``mlp_only_layers``), leading and trailing counts (``first_k_dense_replace``: the
first k layers are dense; ``num_kv_shared_layers``: the last k reuse a KV cache) and index
ranges (``moe_layer_start_index``..``moe_layer_end_index``).

Two selections. **Pick**: the first layer of each combination of kinds, plus the model's last
layer (Gemma 4 makes it a full-attention layer whatever the list says); used when every kind is
written in the config, so any layers can be picked. **Prefix**: the shortest run of first layers
that holds every kind; used when a kind is computed from periods and offsets (Jamba:
``i % attn_layer_period == attn_layer_offset``), which only a prefix preserves.
:func:`graphlint.targets.hf_config.tiny_config` tries the pick, checks that the built config
derives the same kinds for the same layers, and falls back to the prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAX_LAYERS = 12  # a selection never keeps more; kinds past it are lost (the check reports it)

LEADING = re.compile(r"^(first_k_dense_replace|num_dense_layers|n_dense_layers|first_k_dense|"
                     r"prefix_dense_layers)$")
TRAILING = re.compile(r"^(num_kv_shared_layers)$")
RANGE_START = re.compile(r"^(moe_layer_start_index|loop_layer_index_start)$")
RANGE_END = re.compile(r"^(moe_layer_end_index|loop_layer_index_end)$")
_INDEX_LIST = re.compile(r"(layers|idxs|ids|indices|layer_ids)$")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_per_layer(value: Any, layers: int) -> bool:
    return isinstance(value, (list, tuple)) and layers > 1 and len(value) == layers


def is_index_list(name: str, value: Any, layers: int) -> bool:
    return (isinstance(value, list) and bool(value) and all(is_int(v) for v in value) and max(value) < layers
            and min(value) >= 0 and _INDEX_LIST.search(name) is not None and len(value) != layers)


@dataclass(frozen=True)
class Layers:
    original: int  # the model's layer count
    kept: tuple[int, ...]  # the original indices kept, in order

    def __len__(self) -> int:
        return len(self.kept)

    def take(self, values: list) -> list:
        return [values[i] for i in self.kept]

    def position(self, index: int) -> int | None:
        return self.kept.index(index) if index in self.kept else None

    def below(self, k: int) -> int:
        return sum(i < k for i in self.kept)

    def from_(self, k: int) -> int:
        return sum(i >= k for i in self.kept)

    def first_at_or_after(self, index: int) -> int:
        return next((p for p, i in enumerate(self.kept) if i >= index), len(self.kept))

    def last_at_or_before(self, index: int) -> int:
        return max((p for p, i in enumerate(self.kept) if i <= index), default=-1)


def patterns(values: dict[str, Any], derived: dict[str, Any], layers: int) -> tuple[list[list], bool]:
    """(one list of kinds per layer for every per-layer fact the config states, whether every one of
    them is written in the config rather than derived by it)."""
    out, explicit = [], True
    for name, value in derived.items():
        if is_per_layer(value, layers) and not name.startswith("_"):
            out.append([_hashable(v) for v in value])
            explicit = explicit and name in values
    for name, value in values.items():
        if is_index_list(name, value, layers):
            members = set(value)
            out.append([i in members for i in range(layers)])
        elif is_int(value) and 0 < value < layers:
            if LEADING.match(name):
                out.append([i < value for i in range(layers)])
            elif TRAILING.match(name):
                out.append([i >= layers - value for i in range(layers)])
            elif RANGE_START.match(name):
                out.append([i >= value for i in range(layers)])
            elif RANGE_END.match(name):
                out.append([i <= value for i in range(layers)])
    return out, explicit


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def pick(kinds: list[list], layers: int) -> Layers:
    """The first layer of each combination of kinds, and the last layer; at least two layers."""
    kept, seen = [], set()
    for i in range(layers):
        combo = tuple(p[i] for p in kinds)
        if combo not in seen:
            seen.add(combo)
            kept.append(i)
    kept = sorted(set(kept[: MAX_LAYERS - 1]) | {layers - 1})
    if len(kept) < 2 and layers > 1:
        kept = [0, 1] if layers - 1 == 1 else sorted({0, 1, layers - 1})[:2]
    return Layers(layers, tuple(kept))


def prefix(kinds: list[list], layers: int) -> Layers:
    """The shortest run of first layers holding every kind of every pattern; at least two layers."""
    need = 2
    for pattern in kinds:
        wanted, seen = set(pattern), set()
        for i, v in enumerate(pattern):
            seen.add(v)
            if seen == wanted:
                need = max(need, i + 1)
                break
    return Layers(layers, tuple(range(min(need, MAX_LAYERS, layers))))


def lost_kinds(kinds: list[list], chosen: Layers) -> int:
    """How many kinds of layer the selection leaves out (0 when it holds every one)."""
    return sum(len(set(p)) - len({p[i] for i in chosen.kept}) for p in kinds)
