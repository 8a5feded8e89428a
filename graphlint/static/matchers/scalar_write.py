"""A Python value written into a tensor in the hot path: ``buf[0] = step``, ``buf.fill_(n)``.

Capture records the value the Python variable had at capture time; every replay writes that
same stale number. Literal constants are fine (the same every step), tensor values are fine
(a device copy that replays).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.matchers import Matcher, MatchContext

HOST_CALLS = frozenset("int float len min max round abs".split())
HOST_METHODS = frozenset("item size dim numel tolist".split())
LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def is_host_value(node: cst.BaseExpression, ctx: MatchContext) -> bool:
    """A Python number that may differ from step to step: not a literal, not a tensor, and not a
    name we know nothing about (it may well be a tensor we could not prove)."""
    oracle = ctx.oracle
    if isinstance(node, LITERALS):
        return False
    if isinstance(node, cst.Name):  # only names we know hold Python data (a parameter ``step: int``)
        facts = oracle.fn
        return node.value in facts.hosts or node.value in facts.positions or node.value in facts.readbacks
    if isinstance(node, cst.Attribute):  # ``self.step_count``; other attributes may be anything
        if oracle.is_self_attr(node) is None:
            return False
        return not oracle.is_tensor(node) and oracle.module_source(node) is None
    if isinstance(node, cst.Subscript):
        return isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape"
    if isinstance(node, cst.UnaryOperation):
        return is_host_value(node.expression, ctx)
    if isinstance(node, cst.BinaryOperation):
        if oracle.is_tensor(node.left) or oracle.is_tensor(node.right):
            return False
        return is_host_value(node.left, ctx) or is_host_value(node.right, ctx)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name):
            return func.value in HOST_CALLS
        return isinstance(func, cst.Attribute) and func.attr.value in HOST_METHODS
    return False


class ScalarWrite(Matcher):
    kind = "scalar-write"
    node_types = ("Assign", "Call")
    params = {"methods": list}

    def setup(self, params: dict) -> None:
        self.methods = frozenset(params.get("methods", ["fill_"]))

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if isinstance(node, cst.Assign):
            if not is_host_value(node.value, ctx):
                return
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Subscript) and ctx.oracle.is_tensor(t.value):
                    ctx.report(self.rule, t, "item assignment")
                    return
            return
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in self.methods
            and len(node.args) == 1
            and ctx.oracle.is_tensor(func.value)
            and is_host_value(node.args[0].value, ctx)
        ):
            ctx.report(self.rule, node, f".{func.attr.value}()")
