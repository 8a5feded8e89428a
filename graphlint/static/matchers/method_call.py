"""``x.item()``-style calls, matched by method name.

``receiver``: ``any`` (the method name alone is telling: ``.item()``; only a receiver known to be
host data -- a literal, a numpy value, ``x.size(0)`` -- is exempt), ``tensor`` (the receiver
must be a known tensor: ``.unique()``), or ``weight`` (a parameter or buffer of the module,
``self.w`` / ``self.w.T``: constant data converted again every step).

A call whose receiver is an imported name chain (``torch.cuda.synchronize()``) is a function
call, not a method call, so the two kinds never report the same node.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.rules import RuleError
from graphlint.static.cputensors import on_host
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import CALL_PARAMS, CallConditions
from graphlint.static.names import is_imported_root
from graphlint.static.weightargs import converts


class MethodCall(Matcher):
    kind = "method-call"
    node_types = ("Call",)
    params = {"methods": list, "receiver": str, **CALL_PARAMS}

    def setup(self, params: dict[str, Any]) -> None:
        self.methods = frozenset(self.require(params, "methods"))
        self.receiver = params.get("receiver", "any")
        if self.receiver not in ("any", "tensor", "weight"):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: receiver must be 'any', 'tensor' or 'weight'")
        self.conditions = CallConditions(params, f"{self.rule.pack}: rule {self.rule.code}")

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"method": self.methods}

    def visit(self, node: cst.Call, ctx: MatchContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.methods:
            return
        if is_imported_root(func.value, ctx.imports):
            return
        if self.receiver == "any" and ctx.oracle.is_host_data(func.value):
            return  # ``np.float32(v).item()``, ``sizes.item()`` on a list: no device behind it
        if self.rule.category == "host-sync" and on_host(func.value, ctx.oracle):
            return  # ``pinned.numpy()``, ``done.cpu().tolist()``: host memory, no sync
        if self.receiver == "tensor" and not ctx.oracle.is_tensor(func.value):
            return
        if self.receiver == "weight" and not (ctx.oracle.is_weight(func.value) and converts(node)):
            return  # ``w.contiguous()`` returns the weight itself; of ``w.t()`` it copies every element
        if self.conditions.holds(node, ctx, offset=1):
            ctx.report(self.rule, node, f".{func.attr.value}()")
