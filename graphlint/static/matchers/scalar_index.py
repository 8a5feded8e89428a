"""A 0-dim device tensor used where Python needs an int: a slice bound, an index, a ``range()``
argument.

``x[best, : n + 1]`` with ``n = lengths.max()`` calls ``n.__index__()``, which copies the value to
the host: a read-back as real as ``.item()``, every time the line runs, that no ``.item()`` shows
(:mod:`graphlint.static.scalars` says which values are such tensors). Indexing *by* a 0-dim one
(``x[best]`` with ``best = t.argmax()``) selects with its value as an int the same way (measured on
the H200 under sync-debug mode: ``reports/h200-2026-12-03-f/``). Indexing with an index tensor of
one or more dimensions (``x[idx]``, ``x[:, idx]``) is a gather on the device and is not reported;
neither is a value the code read back explicitly first (``n = t.max().item()``: that call is the
finding).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.scalars import is_scalar_tensor


class ScalarIndex(Matcher):
    kind = "scalar-index"
    node_types = ("Subscript", "Call")

    def call_index(self) -> dict[str, frozenset[str]]:
        return {"callee": frozenset(("range",))}

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        oracle = ctx.oracle
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Name) and node.func.value not in ctx.local_names:
                if any(is_scalar_tensor(arg.value, oracle) for arg in node.args if arg.keyword is None):
                    ctx.report(self.rule, node, "range()")
            return
        for element in node.slice:
            part = element.slice
            if isinstance(part, cst.Slice) and any(
                    bound is not None and is_scalar_tensor(bound, oracle) for bound in (part.lower, part.upper, part.step)):
                ctx.report(self.rule, node, "a slice bound")
                return
            if isinstance(part, cst.Index) and is_scalar_tensor(part.value, oracle):
                ctx.report(self.rule, node, "an index")
                return
