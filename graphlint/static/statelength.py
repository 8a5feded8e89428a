"""A per-step length read from state the step carries: ``past = cache.get_seq_length()``.

A position enters a function as a parameter named like one (``params.POSITION_NAMES``); it also
enters as the length a stateful object reports of itself: a KV cache's ``get_seq_length()``, a
sequence's ``cur_len()``. That value grows by one every decode step, so used as a size or an index
it is a per-step Python value frozen into a graph (GL308/GL310, as any position); and where the
object keeps its length on the device so that it can be captured (transformers' ``StaticCache``),
using it as a size reads it back on the host, which a capture refuses (six BART-style decoders
on an H200: ``torch.ones(batch, past + seq_len)``). Recognised: a call of a method whose name,
less a ``get_`` prefix, is a sequence length (:data:`LENGTH_METHODS`, the position names' ``len``
vocabulary) on an object that is not an imported module, also when guarded
(``cache.get_seq_length() if cache is not None else 0``). Not on ``self``: an object consulting its
own length is its bookkeeping (trimming a draft cache in speculative decoding), and the length
enters a step where a caller reads it. Attributes are not: ``config.seq_length`` is a constant,
and a mutated ``self`` counter is GL307's.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import is_imported_root, name_matcher, resolve
from graphlint.static.tensors import TensorOracle

#: method names (``get_`` dropped) that report how long a growing sequence is now; ``max_length``,
#: ``max_cache_len`` and other capacities are constants and do not match
LENGTH_METHODS = ("seq_len", "seqlen", "seq_length", "*_seq_len", "*_seq_length", "cache_len", "cache_length",
                  "past_len", "past_length", "cur_len", "cur_length", "n_past", "num_tokens_seen")


#: library caches that keep their length on the device, so that a capture can advance it: their
#: ``get_seq_length()`` is a 0-dim device tensor (transformers' ``StaticCache``: ``keys[0, 0].any(-1).sum()``)
DEVICE_LENGTH_CACHES = frozenset(f"transformers.{m}{c}" for m in ("", "cache_utils.")
                                 for c in ("StaticCache", "SlidingWindowCache", "OffloadedStaticCache"))


def note_device_cache(target: cst.BaseExpression, value: cst.BaseExpression | None, oracle: TensorOracle) -> None:
    """``cache = StaticCache(...)`` anywhere in the function (any binding counts: a cache taken from
    a pool or built when the pool has none is one of these)."""
    if type(target) is cst.Name and type(value) is cst.Call \
            and resolve(value.func, oracle.imports) in DEVICE_LENGTH_CACHES:
        oracle.fn.device_caches.add(target.value)


def device_length(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """``cache.get_seq_length()`` of a cache the function builds as one of :data:`DEVICE_LENGTH_CACHES`:
    a 0-dim device tensor, read back wherever Python takes it for a number (a size, a range bound)."""
    return type(value) is cst.Call and type(value.func) is cst.Attribute and type(value.func.value) is cst.Name \
        and value.func.value.value in oracle.fn.device_caches and is_length_method(value.func.attr.value)


def is_length_method(name: str) -> bool:
    return name_matcher(LENGTH_METHODS).match(name[4:] if name.startswith("get_") else name) is not None


def reads_state_length(value: cst.BaseExpression | None, oracle: TensorOracle) -> bool:
    if type(value) is cst.IfExp:  # ``cache.get_seq_length() if cache is not None else 0``
        return reads_state_length(value.body, oracle) or reads_state_length(value.orelse, oracle)
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return False
    receiver = value.func.value
    # no receiver test against the oracle's tensors: an unannotated ``past_key_values=None`` of a
    # forward is presumed a tensor, and no ``torch.Tensor`` method has such a name
    if type(receiver) is cst.Name and receiver.value == "self":
        return False  # the object's own bookkeeping (``crop``, ``reorder``): the step's callers read it
    return is_length_method(value.func.attr.value) and not is_imported_root(receiver, oracle.imports)
