"""``x = torch.cat([x, new])``: a tensor that grows by one step's worth every step.

The KV cache of a dynamic cache (``self.keys = torch.cat([self.keys, k], dim=-2)``), the ids of a
generate loop (``input_ids = torch.cat([input_ids, next_ids[:, None]], -1)``): every step copies
the whole tensor into a new, larger allocation, and its shape changes every step, which a
captured graph cannot follow. Reported when the assignment's target is itself the first of the
concatenated tensors (the same name, ``self`` attribute or constant-key item): it grows at its
end. Concatenating activations into a new name, or prepending (``x = cat([prefix, x])``, done
once), is an ordinary op.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.names import resolve

CONCATS = frozenset(("torch.cat", "torch.concat", "torch.concatenate", "torch.hstack", "torch.vstack",
                     "torch.column_stack", "torch.row_stack"))


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        return a.value == b.value
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        return a.attr.value == b.attr.value and _same(a.value, b.value)
    if isinstance(a, cst.Subscript) and isinstance(b, cst.Subscript):  # ``kwargs["mask"]``: constant keys only
        keys = [(x.slice, y.slice) for x, y in zip(a.slice, b.slice)]
        return len(a.slice) == len(b.slice) and _same(a.value, b.value) and all(
            isinstance(x, cst.Index) and isinstance(y, cst.Index) and isinstance(x.value, cst.SimpleString)
            and isinstance(y.value, cst.SimpleString) and x.value.value == y.value.value for x, y in keys)
    return False


class GrowingConcat(Matcher):
    kind = "growing-concat"
    node_types = ("Assign",)

    def setup(self, params: dict[str, Any]) -> None:
        self.callees = CONCATS

    def visit(self, node: cst.Assign, ctx: MatchContext) -> None:
        value = node.value
        if not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
            return
        if resolve(value.func, ctx.imports) not in self.callees:
            return
        parts = value.args[0].value
        if not isinstance(parts, (cst.List, cst.Tuple)):
            return
        first = parts.elements[0].value if parts.elements else None
        for target in node.targets:
            if first is not None and _same(target.target, first):  # appended to itself; a prefix is put once
                ctx.report(self.rule, value, "torch.cat")
                return
