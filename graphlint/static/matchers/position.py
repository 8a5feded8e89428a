"""A per-step Python position used as a tensor index or as a branch condition.

``cos[start:end]``, ``cache.ring[pos % W] = kv``, ``cache.comp[:n_comp]``: capture bakes the
position the step had while capturing into the graph, so every replay reads and writes the same
slots (``where: index``). ``if (pos + 1) % r == 0:`` decides once, at capture, which branch the
graph contains (``where: branch``). Positions are parameters named like ``start``/``pos``/
``*_pos`` and the host values computed from them (see ``params.POSITION_NAMES``); tensors
holding positions are the fix and are never reported, and neither are bounds checks that only
raise. Any indexed value counts (a tensor we could not prove to be one is still likely one in
decode code) except names known to be Python containers (literals, comprehensions, parameters
annotated or defaulted as non-tensors); a list that arrives unannotated is the rare false alarm.

``source: readback`` looks for host copies of device data instead: names bound from ``.item()``,
``.tolist()``, ``int(t)`` and the host values computed from them (``for c in counts``,
``offset += c``). The read-back call itself is the host-sync rules' finding; only its uses
through a name are reported here, so ``x[t.item()]`` is one finding, not two -- and so is
``w[i].item()`` with ``i`` such a value: the element read by the index is the read reported.
"""

from __future__ import annotations

import libcst as cst

from graphlint.rules import RuleError
from graphlint.static.fixedcounters import counter_loop, tag_counter
from graphlint.static.graphconsts import flag as flag_sources
from graphlint.static.looppositions import loops_of, tag_loops
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.readbacks import READBACK_METHODS
from graphlint.static.matchers.truth_test import operands


HOST_CONTAINERS = frozenset(("list", "tuple", "sorted", "range", "dict", "reversed"))


class PositionDependent(Matcher):
    kind = "position-dependent"
    params = {"where": str, "source": str}
    node_types = ("Subscript", "If", "While", "IfExp", "Call")

    def setup(self, params: dict) -> None:
        self.read_receivers: set[int] = set()  # ``x[i]`` of ``x[i].item()``: the read is the finding
        self.where = params.get("where", "index")
        self.source = params.get("source", "position")
        if self.where not in ("index", "branch"):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: where must be 'index' or 'branch'")
        if self.source not in ("position", "readback"):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: source must be 'position' or 'readback'")

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        oracle = ctx.oracle
        names = oracle.fn.positions if self.source == "position" else oracle.fn.readbacks
        if self.source == "position" and self.where == "index" and oracle.fn.loop_positions:
            names = names | oracle.fn.loop_positions.keys()  # a step loop's own positions (:mod:`.looppositions`)
        if not names:
            return
        if isinstance(node, cst.Call):
            if self.where == "index" and self.source == "readback" and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value in READBACK_METHODS and isinstance(node.func.value, cst.Subscript):
                self.read_receivers.add(id(node.func.value))  # met before its receiver: the walk is pre-order
            return
        if isinstance(node, cst.Subscript):
            if self.where != "index" or id(node) in self.read_receivers:
                return
            base = node.value
            if isinstance(base, cst.Name) and (base.value in oracle.fn.hosts or base.value in names):
                return  # a Python list or tuple indexed by the position: host work, no graph
            if isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value in HOST_CONTAINERS:
                return  # ``list(graph.nodes)[idx]``: the same
            if oracle.is_host_attr(base):
                return  # ``self.history[pos]``: the same, kept on the module
            if oracle.module_source(base) is not None:
                return  # ``self.layers[i]`` picks a sub-module, not tensor data
            if any(_host_index(el.slice, oracle) and oracle.uses(el.slice, names) for el in node.slice):
                self._report(ctx, node, "index", [el.slice for el in node.slice])
            return
        if self.where == "branch":
            if isinstance(node, cst.If) and _only_raises(node.body):
                return  # a bounds check: raising is the eager path's business
            for operand in operands(node.test):
                if _none_test(operand) or _type_test(operand):
                    continue  # ``if upto is not None:``, ``isinstance(offset, int)``: the same answer on every step
                if not oracle.is_tensor(operand) and oracle.uses(operand, names):
                    self._report(ctx, operand, "", [operand])
                    return

    def _report(self, ctx: MatchContext, anchor: cst.CSTNode, name: str, read: list) -> None:
        """Report; one on a fixed loop's counter alone says which loop (:mod:`.fixedcounters`)."""
        pending = ctx.defer(self.rule, anchor, name)
        if pending is not None and self.source == "position":
            tag_counter(pending, counter_loop(ctx.oracle, read))
            tag_loops(pending, loops_of(ctx.oracle, read))
            flag_sources(pending, ctx.oracle, read)  # where its positions come from (:mod:`.graphconsts`)
        ctx.emit(pending)


def _none_test(node: cst.BaseExpression) -> bool:
    """``x is None`` / ``x is not None`` (or ``== None`` / ``!= None``, the same test spelled
    loosely on a Python int): whether a position was given, not what it is."""
    return isinstance(node, cst.Comparison) and all(
        isinstance(c.operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)) and isinstance(c.comparator, cst.Name)
        and c.comparator.value == "None" for c in node.comparisons)


def _type_test(node: cst.BaseExpression) -> bool:
    """``isinstance(x, int)`` (or ``not`` it): a value's type, which a per-step int keeps from step to step."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        node = node.expression
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "isinstance"


def _only_raises(body: cst.BaseSuite) -> bool:
    stmts: list[cst.CSTNode] = []
    for line in body.body:
        stmts.extend(line.body if isinstance(line, cst.SimpleStatementLine) else (line,))
    return bool(stmts) and all(isinstance(s, cst.Raise) for s in stmts)


def _host_index(index: cst.BaseSlice, oracle) -> bool:
    """``x[order[a:b]]`` indexes by a tensor: the inner slice is the one to report."""
    return not (isinstance(index, cst.Index) and oracle.is_tensor(index.value))
