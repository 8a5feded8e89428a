"""Calls of qualified names (``torch.cuda.synchronize``, ``mylib.kernels.sync_launch``, ``int``).

``callees`` are fnmatch patterns on the name resolved through the file's imports, so
``from torch.cuda import synchronize as sync; sync()`` matches ``torch.cuda.synchronize``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import libcst as cst

from graphlint.static.matchers import Matcher, MatchContext
from graphlint.static.matchers.call_args import CALL_PARAMS, CallConditions
from graphlint.static.names import dotted_name, resolve


class FunctionCall(Matcher):
    kind = "function-call"
    node_types = ("Call",)
    params = {"callees": list, **CALL_PARAMS}

    def setup(self, params: dict[str, Any]) -> None:
        self.callees = tuple(self.require(params, "callees"))
        self.last_names = {c.rsplit(".", 1)[-1] for c in self.callees if "*" not in c.rsplit(".", 1)[-1]}
        self.any_last = len(self.last_names) < len(self.callees)
        self.conditions = CallConditions(params, f"{self.rule.pack}: rule {self.rule.code}")

    def visit(self, node: cst.Call, ctx: MatchContext) -> None:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if last is None:
            return
        if not self.any_last and last not in self.last_names and dotted_name(func) == resolve(func, ctx.imports):
            return  # quick reject; an alias (``sync``) may still resolve to a callee below
        name = resolve(func, ctx.imports)
        if name is None:
            return
        if isinstance(func, cst.Name) and func.value in ctx.local_names and func.value not in ctx.imports:
            return  # a local variable or def shadows the builtin
        if any(fnmatchcase(name, pat) for pat in self.callees) and self.conditions.holds(node, ctx):
            ctx.report(self.rule, node, name)
