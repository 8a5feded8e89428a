"""Factories that build the host step's data, not a constant rebuilt every step (:func:`mark_step_data`).

Around a replay, the host step stages each step's input; a buffer it fills with the step's own
values -- the sampled ids, a mask at the step's positions, a random draw -- is that input in a
fresh tensor, not a constant a buffer made once would hold. Only the host step reads these flags
(:meth:`.contexts.Placement.step_data`): in eager code the labelled sets disagree (the older ones
count the constant built before a scatter or a random fill as the hazard, the newer ones the
step's data), so eager code keeps every factory. Kept apart from :mod:`.stepflow`, which only calls
it when a function ends."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import names_in, preorder
from graphlint.static.readshapes import custom_op

LITERALS = (cst.Integer, cst.Float, cst.SimpleString)
#: out-of-place writes at positions the arguments give (a cast or a copy, ``.to(dev)``, is none)
REFILLS = frozenset(("scatter", "scatter_add", "scatter_reduce", "index_fill", "index_copy", "index_add",
                     "index_put", "masked_fill", "masked_scatter", "put"))
#: in-place fills with random values: whatever the arguments, what they write is a fresh draw
RANDOM_FILLS = frozenset(("exponential_", "uniform_", "normal_", "bernoulli_", "geometric_", "cauchy_",
                          "log_normal_", "random_"))


def _literal(node: cst.BaseExpression) -> bool:
    if type(node) is cst.UnaryOperation:
        node = node.expression
    return isinstance(node, LITERALS) or (type(node) is cst.Name and node.value in ("True", "False", "None"))


def _data_index(target: cst.Subscript, bound: set[str]) -> bool:
    """``buf[picked, k] = True``: written where a local the function computed says (a mask, indices)."""
    return any(type(n) is cst.Name and n.value in bound for el in target.slice for n in preorder(el.slice))


def _refilled(name: str, value: cst.BaseExpression) -> bool:
    """``mask = mask.scatter(-1, idx, False)``: the buffer rebuilt from itself with the step's values."""
    return type(value) is cst.Call and type(value.func) is cst.Attribute and type(value.func.value) is cst.Name \
        and value.func.value.value == name and value.func.attr.value in REFILLS \
        and any(not _literal(a.value) for a in value.args)


def _fills(method: str, call: cst.Call, out_of_place: bool) -> bool:
    """``.exponential_()``, ``.copy_(ids)``, ``.fill_(tok)`` (and, on a fresh factory's result,
    ``.scatter_reduce(0, idx, src, "prod")``): the call writes the step's values into its receiver."""
    if method in RANDOM_FILLS:
        return True
    if method.endswith("_") and method != "zero_" or out_of_place and method in REFILLS:
        return any(not _literal(a.value) for a in call.args)
    return False


def mark_step_data(raws: list, start: int, body: cst.CSTNode) -> None:
    """Flag factories (rules marked ``step_data: false`` or ``in_graph: false``, ``raws[start:]``) that
    build the step's data rather than a constant: ``step-data`` when the buffer is
    filled afterwards in the function with values that are not literals (``buf = torch.full((1, k),
    pad); buf[:, 0] = tok``), at places a local computed (``m[picked, k] = True``), or rebuilt from
    itself with such values (``m = m.scatter(-1, idx, False)``), or filled with a random draw
    (``q.exponential_()``); the same for a factory whose result is filled on the spot
    (``torch.empty_like(p).exponential_()``, ``torch.ones_like(x).scatter_reduce(0, idx, rp, "prod")``);
    ``step-data`` alone when an argument reads a
    local the function advances in place (``pos += k``); ``arg-attr:NAME`` for each attribute an
    argument reads, which is per-step state when the project advances it in place (``cache.seq_len
    += n``: decided when linking, :meth:`.contexts.Placement.step_data`); ``op-output`` when the
    buffer is handed to a custom op (``torch.ops.ext.gemm(a, b, y)``), which writes its result there:
    the op's output, allocated as every eager op's is, no constant rebuilt."""
    mine = [r for r in raws[start:] if type(r.anchor) is cst.Call and (
        r.rule.params.get("step_data") is False or r.rule.params.get("in_graph") is False)]
    if not mine:
        return
    filled: set[str] = set()
    advanced: set[str] = set()
    outputs: set[str] = set()
    filled_on_the_spot: set[int] = set()  # id() of factory calls whose result a chained call fills
    nodes = list(preorder(body))
    bound = {t.target.value for node in nodes if type(node) is cst.Assign  # masks and indices the step computes
             and type(node.value) in (cst.Comparison, cst.Call, cst.BinaryOperation, cst.UnaryOperation)
             for t in node.targets if type(t.target) is cst.Name}
    for node in nodes:
        kind = type(node)
        if kind is cst.AugAssign and type(node.target) is cst.Name:
            advanced.add(node.target.value)
        elif kind is cst.Assign:
            filled.update(t.target.value.value for t in node.targets if type(t.target) is cst.Subscript
                          and type(t.target.value) is cst.Name and (not _literal(node.value) or _data_index(t.target, bound)))
            filled.update(t.target.value for t in node.targets if type(t.target) is cst.Name
                          and _refilled(t.target.value, node.value))
        elif kind is cst.Call and custom_op(node.func):  # ``torch.ops.ext.gemm(a, b, out)``: the kernel's output
            outputs.update(a.value.value for a in node.args if type(a.value) is cst.Name)
        elif kind is cst.Call and type(node.func) is cst.Attribute:
            receiver, method = node.func.value, node.func.attr.value
            if type(receiver) is cst.Name and _fills(method, node, False):
                filled.add(receiver.value)  # ``buf.copy_(ids)``, ``buf.fill_(tok)``, ``q.exponential_()``
            elif type(receiver) is cst.Call and _fills(method, node, True):
                filled_on_the_spot.add(id(receiver))
    for raw in mine:
        stmt, flags = raw.stmt, set()
        target = stmt.targets[0].target if type(stmt) is cst.Assign and len(stmt.targets) == 1 else None
        name = target.value if type(target) is cst.Name else None
        if name in filled or id(raw.anchor) in filled_on_the_spot:
            flags.add("step-data")
        if name is not None and name in outputs:
            flags.add("op-output")
        args = [a.value for a in raw.anchor.args]
        if advanced.intersection(n for a in args for n in names_in(a)):
            flags.add("step-data")
        flags.update(f"arg-attr:{n.attr.value}" for a in args for n in preorder(a) if type(n) is cst.Attribute)
        if flags:
            raw.flags = raw.flags | flags
