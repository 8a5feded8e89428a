"""A Python value written into a tensor in the hot path: ``buf[0] = step``, ``buf.fill_(n)``.

Capture records the value the Python variable had at capture time; every replay writes that
same stale number. Literal constants are fine (the same every step, ``-float("inf")`` too),
tensor values are fine (a device copy that replays), and so is an attribute the class only sets
in ``__init__`` (``self.filter_value``, a config constant): a ``self.x`` written into a tensor is
reported only once the class assigns ``self.x`` outside ``__init__``.

Shapes are fine too (``buf.fill_(ids.numel())``, ``x.size(0)``, ``x.shape[-1]``): a graph is
captured for one set of shapes, so on every replay of it they are what they were at capture. A
tensor whose shape changes from step to step is the hazard itself, reported where it grows
(GL207; GL394 at run time), not at every number read from it.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import operands, shape_only
from graphlint.static.matchers.base import Matcher, MatchContext

HOST_CALLS = frozenset("int float len min max round abs".split())
HOST_METHODS = frozenset("item tolist".split())  # not size/dim/numel: see the module docstring
LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def is_host_value(node: cst.BaseExpression, ctx: MatchContext) -> bool:
    """A Python number that may differ from step to step: not a literal, not a tensor, and not a
    name we know nothing about (it may well be a tensor we could not prove)."""
    oracle = ctx.oracle
    if type(node) in LITERALS or shape_only(node, oracle.fn.shapes):
        return False
    if type(node) is cst.Name:  # only names we know hold Python data (a parameter ``step: int``)
        facts = oracle.fn
        return node.value in facts.hosts or node.value in facts.positions or node.value in facts.readbacks
    if type(node) is cst.Attribute:  # ``self.step_count``; other attributes may be anything
        if oracle.is_self_attr(node) is None:
            return False
        return not oracle.is_tensor(node) and oracle.module_source(node) is None
    if type(node) is cst.UnaryOperation:
        return is_host_value(node.expression, ctx)
    if type(node) is cst.BinaryOperation:  # no operand a tensor, one of them a host value
        leaves = operands(node)
        return not any(map(oracle.is_tensor, leaves)) and any(is_host_value(leaf, ctx) for leaf in leaves)
    if type(node) is cst.Call:
        func = node.func
        if type(func) is cst.Name:  # ``int(n)``, but not ``float("inf")``: a constant
            return func.value in HOST_CALLS and not all(type(a.value) in LITERALS for a in node.args)
        return type(func) is cst.Attribute and func.attr.value in HOST_METHODS
    return False


def _only_self_attr(node: cst.BaseExpression, ctx: MatchContext) -> str | None:
    """``self.x`` (or ``-self.x``): the attribute whose per-step mutation would make it a hazard."""
    while isinstance(node, cst.UnaryOperation):
        node = node.expression
    return ctx.oracle.is_self_attr(node) if isinstance(node, cst.Attribute) else None


class ScalarWrite(Matcher):
    kind = "scalar-write"
    node_types = ("Assign", "AugAssign", "Call")
    params = {"methods": list}

    def setup(self, params: dict) -> None:
        self.methods = frozenset(params.get("methods", ["fill_"]))
        self.assigned: set[str] = set()  # self attributes assigned outside __init__ in this class
        self.pending: dict[str, list] = {}  # attribute -> deferred reports

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if type(node) in (cst.Assign, cst.AugAssign) and ctx.function_name != "__init__":
            targets = [node.target] if type(node) is cst.AugAssign else [t.target for t in node.targets]
            self.assigned.update(a for t in targets if (a := ctx.oracle.is_self_attr(t)) is not None)
        if type(node) is cst.AugAssign:
            return
        if type(node) is cst.Assign:
            if not is_host_value(node.value, ctx):
                return
            for target in node.targets:
                t = target.target
                if type(t) is cst.Subscript and ctx.oracle.is_tensor(t.value):
                    self._report(node.value, t, "item assignment", ctx)
                    return
            return
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value in self.methods
            and len(node.args) == 1
            and ctx.oracle.is_tensor(func.value)
            and is_host_value(node.args[0].value, ctx)
        ):
            self._report(node.args[0].value, node, f".{func.attr.value}()", ctx)

    def _report(self, value: cst.BaseExpression, anchor: cst.CSTNode, name: str, ctx: MatchContext) -> None:
        attr = _only_self_attr(value, ctx)
        if attr is None or not ctx.class_name:
            ctx.report(self.rule, anchor, name)
        else:
            self.pending.setdefault(attr, []).append(ctx.defer(self.rule, anchor, name))

    def end_class(self, ctx: MatchContext) -> None:
        for attr, reports in sorted(self.pending.items()):
            if attr in self.assigned:
                for pending in reports:
                    ctx.emit(pending)
        self.assigned, self.pending = set(), {}
