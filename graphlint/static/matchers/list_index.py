"""``x[..., [-2], :]``: a tensor indexed with a Python list.

PyTorch turns the list into an index tensor on the host and copies it to the tensor's device
inside the indexing op: on a CUDA tensor that is a pageable host-to-device copy every step, which
a capture refuses ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the
CPU tensor is pinned"; Falcon's multi-query ``_split_heads`` on an H200). Only list displays,
list comprehensions and ``list(...)`` count: a tuple is several indices, and a name may hold an
int. Tensors the oracle knows to live on the host (:mod:`graphlint.static.cputensors`) copy
nothing, and neither does a receiver it does not know as a tensor (a Python list of lists).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor
from graphlint.static.matchers.base import Matcher, MatchContext

LISTS = (cst.List, cst.ListComp)


def _is_list(node: cst.BaseExpression) -> bool:
    if isinstance(node, LISTS):
        return bool(getattr(node, "elements", True))  # ``x[[]]``: an empty index, nothing copied
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "list"


class ListIndex(Matcher):
    kind = "list-index"
    node_types = ("Subscript",)

    def visit(self, node: cst.Subscript, ctx: MatchContext) -> None:
        if not any(isinstance(el.slice, cst.Index) and _is_list(el.slice.value) for el in node.slice):
            return
        if ctx.oracle.is_tensor(node.value) and not is_cpu_tensor(node.value, ctx.oracle):
            ctx.report(self.rule, node, "a Python list index")
