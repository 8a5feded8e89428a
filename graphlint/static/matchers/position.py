"""A per-step Python position used as a tensor index or as a branch condition.

``cos[start:end]``, ``cache.ring[pos % W] = kv``, ``cache.comp[:n_comp]``: capture bakes the
position the step had while capturing into the graph, so every replay reads and writes the same
slots (``where: index``). ``if (pos + 1) % r == 0:`` decides once, at capture, which branch the
graph contains (``where: branch``). Positions are parameters named like ``start``/``pos``/
``*_pos`` and the host values computed from them (see ``tensors.POSITION_NAMES``); tensors
holding positions are the fix and are never reported, and neither are bounds checks that only
raise. Any indexed value counts (a tensor we could not prove to be one is still likely one in
decode code) except names known to be Python containers (literals, comprehensions, parameters
annotated or defaulted as non-tensors); a list that arrives unannotated is the rare false alarm.
"""

from __future__ import annotations

import libcst as cst

from graphlint.rules import RuleError
from graphlint.static.matchers import Matcher, MatchContext
from graphlint.static.matchers.truth_test import operands


class PositionDependent(Matcher):
    kind = "position-dependent"
    params = {"where": str}
    node_types = ("Subscript", "If", "While", "IfExp")

    def setup(self, params: dict) -> None:
        self.where = params.get("where", "index")
        if self.where not in ("index", "branch"):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: where must be 'index' or 'branch'")

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        oracle = ctx.oracle
        if not oracle.fn.positions:
            return
        if isinstance(node, cst.Subscript):
            if self.where != "index":
                return
            base = node.value
            if isinstance(base, cst.Name) and base.value in oracle.fn.hosts:
                return  # a Python list or tuple indexed by the position: host work, no graph
            if any(oracle.uses_position(el.slice) for el in node.slice):
                ctx.report(self.rule, node, "index")
            return
        if self.where == "branch":
            if isinstance(node, cst.If) and _only_raises(node.body):
                return  # a bounds check: raising is the eager path's business
            for operand in operands(node.test):
                if not oracle.is_tensor(operand) and oracle.uses_position(operand):
                    ctx.report(self.rule, operand)
                    return


def _only_raises(body: cst.BaseSuite) -> bool:
    stmts: list[cst.CSTNode] = []
    for line in body.body:
        stmts.extend(line.body if isinstance(line, cst.SimpleStatementLine) else (line,))
    return bool(stmts) and all(isinstance(s, cst.Raise) for s in stmts)
