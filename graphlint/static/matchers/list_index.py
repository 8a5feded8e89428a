"""``x[..., [-2], :]``: a tensor indexed with a Python list.

PyTorch turns the list into an index tensor on the host and copies it to the tensor's device
inside the indexing op: on a CUDA tensor that is a pageable host-to-device copy every step, which
a capture refuses ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the
CPU tensor is pinned"; Falcon's multi-query ``_split_heads`` on an H200). Only list displays,
list comprehensions and ``list(...)`` count: a tuple is several indices, and a name may hold an
int. A host tensor copies nothing: one the oracle knows (:mod:`graphlint.static.cputensors`) or a
local the function bound to a torch factory given no device (``mask = torch.ones(n, dtype=torch.bool)``
then ``mask[list(ids)] = False``; under a default CUDA device that is a miss, never a false alarm),
and neither does a receiver not known as a tensor (a Python list of lists).
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import keyword
from graphlint.static.names import resolve

LISTS = (cst.List, cst.ListComp)
#: factories: given no device they build on the host (an op's result is where its inputs are)
FACTORIES = frozenset(f"torch.{n}" for n in "zeros ones empty full arange tensor as_tensor rand randn randint eye "
                      "linspace".split())
SHORT_FACTORIES = frozenset(name.rsplit(".", 1)[1] for name in FACTORIES)


def _is_list(node: cst.BaseExpression) -> bool:
    if isinstance(node, LISTS):
        return bool(getattr(node, "elements", True))  # ``x[[]]``: an empty index, nothing copied
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "list"


class ListIndex(Matcher):
    kind = "list-index"
    node_types = ("Assign", "Subscript")

    def setup(self, params: dict) -> None:
        self.host_locals: dict[str, set[str]] = defaultdict(set)  # function -> locals made on the host

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if isinstance(node, cst.Assign):
            value, names = node.value, self.host_locals[ctx.function_name]
            func = value.func if isinstance(value, cst.Call) else None
            short = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            host = (short in SHORT_FACTORIES and keyword(value, "device") is None
                    and resolve(func, ctx.imports) in FACTORIES)  # the name first: most calls are no factory
            if not host and not names:
                return
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    (names.add if host else names.discard)(target.target.value)
            return
        if not any(isinstance(el.slice, cst.Index) and _is_list(el.slice.value) for el in node.slice):
            return
        receiver = node.value
        if isinstance(receiver, cst.Name) and receiver.value in self.host_locals[ctx.function_name]:
            return
        if ctx.oracle.is_tensor(receiver) and not is_cpu_tensor(receiver, ctx.oracle):
            ctx.report(self.rule, node, "a Python list index")
