"""Calls of qualified names (``torch.cuda.synchronize``, ``mylib.kernels.sync_launch``, ``int``).

``callees`` are fnmatch patterns on the name resolved through the file's imports, so
``from torch.cuda import synchronize as sync; sync()`` matches ``torch.cuda.synchronize``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import CALL_PARAMS, CallConditions


class FunctionCall(Matcher):
    kind = "function-call"
    node_types = ("Call",)
    params = {"callees": list, **CALL_PARAMS}

    def setup(self, params: dict[str, Any]) -> None:
        callees = self.require(params, "callees")
        self.exact = frozenset(c for c in callees if not any(ch in c for ch in "*?["))
        self.patterns = tuple(c for c in callees if c not in self.exact)
        self.conditions = CallConditions(params, f"{self.rule.pack}: rule {self.rule.code}")

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return None if self.patterns else {"callee": self.exact}

    def visit(self, node: cst.Call, ctx: MatchContext) -> None:
        name = ctx.call_name  # resolved once per call by the walker, through the imports
        if name is None or (name not in self.exact and not any(fnmatchcase(name, p) for p in self.patterns)):
            return
        func = node.func
        if isinstance(func, cst.Name) and name == func.value and func.value in ctx.local_names:
            return  # a module-level def shadows the builtin
        if self.conditions.holds(node, ctx):
            ctx.report(self.rule, node, name)
