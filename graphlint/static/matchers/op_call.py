"""A torch operation in either spelling: ``torch.bincount(ids)`` or ``ids.bincount()``.

One rule per hazard, whichever form the code uses. The method form needs a receiver we know is
a tensor (``.unique()`` exists on other types too); argument positions in ``params`` count in
the function form (``tensor_arg: 1`` is ``repeats`` in ``torch.repeat_interleave(x, repeats)``
and in ``x.repeat_interleave(repeats)``).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import CALL_PARAMS, CallConditions
from graphlint.static.names import is_imported_root


class OpCall(Matcher):
    kind = "op-call"
    node_types = ("Call",)
    params = {"ops": list, **CALL_PARAMS}

    def setup(self, params: dict[str, Any]) -> None:
        self.ops = frozenset(self.require(params, "ops"))
        self.callees = frozenset(f"torch.{op}" for op in self.ops)
        self.conditions = CallConditions(params, f"{self.rule.pack}: rule {self.rule.code}")

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"callee": self.callees, "method": self.ops}

    def visit(self, node: cst.Call, ctx: MatchContext) -> None:
        if ctx.call_name in self.callees:
            if self.conditions.holds(node, ctx):
                ctx.report(self.rule, node, ctx.call_name)
            return
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in self.ops
            and not is_imported_root(func.value, ctx.imports)
            and ctx.oracle.is_tensor(func.value)
            and self.conditions.holds(node, ctx, offset=1)
        ):
            ctx.report(self.rule, node, f".{func.attr.value}()")
