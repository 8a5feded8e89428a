"""``x[..., [-2], :]``: a tensor indexed with a Python list.

PyTorch turns the list into an index tensor on the host and copies it to the tensor's device
inside the indexing op: on a CUDA tensor that is a pageable host-to-device copy every step, which
a capture refuses ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the
CPU tensor is pinned"; Falcon's multi-query ``_split_heads`` on an H200). Only list displays,
list comprehensions and ``list(...)`` count, and names and ``self`` fields bound only to those
(``TensorOracle.is_list_value``: ``self.banned = list(ids)`` in ``__init__`` indexing the logits in
another method): a tuple is several indices, and a name or a field that may hold an int is none. A host tensor copies nothing: one the oracle knows (:mod:`graphlint.static.cputensors`) or a
tensor built by a torch factory given no device (``mask = torch.ones(n, dtype=torch.bool)`` then
``mask[list(ids)] = False``: :mod:`graphlint.static.pageable`; under a default CUDA device that is
a miss, never a false alarm),
and neither does a receiver not known as a tensor (a Python list of lists) -- unless what the
indexing gives is used as a torch tensor (``cache[key][rows].detach()``: only a tensor has
``detach``, and a list or a dict cannot be indexed with a list at all), which a dict of tensors
filled elsewhere (a KV cache keyed by module) is.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cputensors import on_host
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.pageable import is_pageable

LISTS = (cst.List, cst.ListComp)
#: methods only a torch tensor has (numpy arrays, lists and dicts do not): what they are called on is one
TENSOR_ONLY = frozenset(("detach", "contiguous", "clone", "cuda", "index_select", "masked_fill", "masked_fill_"))


def _is_list(node: cst.BaseExpression, ctx: MatchContext) -> bool:
    if isinstance(node, LISTS):
        return bool(getattr(node, "elements", True))  # ``x[[]]``: an empty index, nothing copied
    return ctx.oracle.is_list_value(node)


class ListIndex(Matcher):
    kind = "list-index"
    node_types = ("Subscript", "Call")

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"method": TENSOR_ONLY}

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        used_as_tensor = False
        if type(node) is cst.Call:  # ``cache[key][rows].detach()``: the receiver is evidently a tensor
            func = node.func
            if type(func) is not cst.Attribute or func.attr.value not in TENSOR_ONLY \
                    or type(func.value) is not cst.Subscript or ctx.oracle.is_tensor(func.value.value):
                return  # a known tensor's subscript is reported when it is visited itself
            node, used_as_tensor = func.value, True
        if not any(isinstance(el.slice, cst.Index) and _is_list(el.slice.value, ctx) for el in node.slice):
            return
        receiver = node.value
        if (used_as_tensor or ctx.oracle.is_tensor(receiver)) and not is_pageable(receiver, ctx.oracle) \
                and not on_host(receiver, ctx.oracle):
            ctx.report(self.rule, node, "a Python list index")
