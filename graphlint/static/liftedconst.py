"""Python constants a ``torch.compile`` region lifts into its graph: ``torch.tensor(1.0, device=d)``.

Dynamo traces ``torch.tensor(<Python data>, device=...)`` of data known when it traces as a graph
constant (``_tensor_constant`` + ``lift_fresh_copy``; inductor folds the device copy of a constant
at compile time): made once when the graph is built, no host-to-device copy per replay. Inside a
``torch.cuda.graph`` capture or eager code the same line is a pageable upload on every call, so
only code that nothing but a ``torch.compile`` captures is spared (the link's
``Placement.compiled_only["graph"]``, rule param ``lifted_ok``).

Which data is a constant where the call runs (:func:`constant_data`): literals; lists and tuples of
them, repeated or joined; shapes (``x.shape[1]``, ``x.size(0)``, ``len(x)``: static in a compile
that is not dynamic); non-tensor fields of a configuration object (``self.config.n``, ``cfg.n``),
arithmetic and ``math`` of these; a parameter with a number literal default (a setting,
``num_steps=10``); a local every binding of which (augmented ones included) that may reach the call is such a value
(one before it in the source, or after it in a loop around it; not the call's own statement:
``dt = torch.tensor(dt, device=d)``). A per-step position, a read-back,
a plain parameter or ``self``'s own field (``self.step``) is per-step data: dynamo specialises on it
and recompiles per value, so the line stays reported.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.oncebound import counts

#: the flag a candidate whose host data is a Python constant carries (:meth:`.walker.Walker.defer`)
LIFTED = "lifted"
#: calls of constants that give constants
_SCALAR_CALLS = frozenset(("float", "int", "bool", "abs", "min", "max", "round", "len"))
_DEPTH = 8


def lifted(placement, params: dict, fid, cand) -> bool:
    """Whether a ``lifted_ok`` rule's candidate in captured code is a lifted constant: its data a
    Python constant (flag :data:`LIFTED`), in a function only ``torch.compile`` roots capture, not
    a dynamic one (its ints are symbolic there), and not inside a ``torch.cuda.graph`` block."""
    return LIFTED in cand.flags and bool(params.get("lifted_ok")) and fid in placement.compiled_only["graph"] \
        and not cand.in_capture and fid not in placement.symbolic


def lifted_call(call: cst.CSTNode, func, oracle) -> bool:
    """Whether ``torch.tensor(data, ...)``'s data (its first positional argument) is a Python
    constant where the call runs (``func``: the walker's function record, its ``defaults``)."""
    if type(call) is not cst.Call or not call.args or call.args[0].keyword is not None or call.args[0].star:
        return False
    return _Consts(func, oracle, call).data(call.args[0].value, 0)


class _Consts:
    def __init__(self, func, oracle, call: cst.Call):
        self.defaults = getattr(func, "defaults", {}) or {}
        self.oracle, self.call = oracle, call
        self.facts = oracle.fn
        self.pending: set[str] = set()  # names being decided: a self-reference adds nothing
        self._later: set[int] | None = None

    def data(self, node: cst.BaseExpression, depth: int) -> bool:
        if depth > _DEPTH:
            return False
        t = type(node)
        if t in (cst.Integer, cst.Float, cst.SimpleString):
            return True
        if t is cst.Name:
            return node.value in ("True", "False", "None") or self.name(node.value, depth)
        if t in (cst.List, cst.Tuple):
            return all(type(el) is cst.Element and self.data(el.value, depth + 1) for el in node.elements)
        if t is cst.UnaryOperation:
            return self.data(node.expression, depth + 1)
        if t is cst.BinaryOperation:
            return self.data(node.left, depth + 1) and self.data(node.right, depth + 1)
        if t is cst.IfExp:
            return self.data(node.body, depth + 1) and self.data(node.orelse, depth + 1)
        if t is cst.Subscript:
            return _shape(node.value) or (self.data(node.value, depth + 1) and all(
                type(s.slice) is cst.Index and self.data(s.slice.value, depth + 1) for s in node.slice))
        if t is cst.Attribute:
            return _shape(node) or self.field(node)
        if t is cst.Call:
            return self.scalar_call(node, depth)
        return False

    def scalar_call(self, node: cst.Call, depth: int) -> bool:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "size":  # ``x.size(1)``: a shape
            return all(self.data(a.value, depth + 1) for a in node.args)
        if type(func) is cst.Name and func.value == "len":
            return len(node.args) == 1
        math = type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "math"
        if (type(func) is cst.Name and func.value in _SCALAR_CALLS) or math:
            return all(a.keyword is None and not a.star and self.data(a.value, depth + 1) for a in node.args)
        return False

    def field(self, node: cst.Attribute) -> bool:
        """``self.config.n`` / ``cfg.n``: a field of an object that is not ``self`` itself (whose own
        fields may be per-step state) and no tensor."""
        inner = node.value
        while type(inner) is cst.Attribute:
            inner = inner.value
        if type(inner) is not cst.Name or (node.value is inner and inner.value == "self"):
            return False
        return not self.oracle.is_tensor(node) and not self.oracle.is_tensor(node.value)

    def name(self, name: str, depth: int) -> bool:
        facts = self.facts
        if name in self.pending:
            return True
        if name in facts.positions or name in facts.readbacks or facts.defn is None:
            return False
        if name in self.defaults:  # a parameter: only a setting's number literal default
            default = self.defaults[name]
            return default is not None and default[0] == "c" and type(default[1]) in (int, float) \
                and counts(facts).get(name, 0) == 1
        values = self.bindings(name)
        if values is None or not values:
            return False
        self.pending.add(name)
        try:
            return all(self.data(v, depth + 1) for v in values)
        finally:
            self.pending.discard(name)

    def bindings(self, name: str) -> list[cst.BaseExpression] | None:
        """The values of every binding of ``name`` in the function (``x = v``, ``x += v``, ``a, x =
        x.shape[:2]``), the call's own statement aside; None when some binding is of another kind."""
        found: list[cst.BaseExpression] = []
        own, after, later = 0, False, self.later()
        for node in preorder(self.facts.defn):
            t = type(node)
            after = after or node is self.call
            if t is cst.Assign:
                for target in node.targets:
                    hit = _binds(target.target, name)
                    if hit is None:
                        continue
                    if (after and id(node) not in later) or any(n is self.call for n in preorder(node.value)):
                        own += 1  # the call's own statement, or one after it that cannot reach it
                    elif hit == "name":
                        found.append(node.value)
                    elif _shape(node.value) or (type(node.value) is cst.Subscript and _shape(node.value.value)):
                        found.append(cst.Integer("0"))  # ``b, n = x.shape[:2]``: sizes
                    else:
                        return None
            elif t is cst.AugAssign and type(node.target) is cst.Name and node.target.value == name:
                own += 1  # counted twice by :func:`.oncebound.binding_counts`: a rebinding
                if after and id(node) not in later:
                    own += 1
                else:
                    found.append(node.value)
        return found if len(found) + own == counts(self.facts).get(name, 0) else None


    def later(self) -> set[int]:
        """Ids of the nodes in a loop around the call: bound after it in the source, they reach it
        on the loop's next round; any other binding after it does not."""
        if self._later is None:
            loops = [n for n in preorder(self.facts.defn) if type(n) in (cst.For, cst.While)
                     and any(m is self.call for m in preorder(n))]
            self._later = {id(m) for loop in loops for m in preorder(loop)}
        return self._later


def _binds(target: cst.BaseExpression, name: str) -> str | None:
    if type(target) is cst.Name:
        return "name" if target.value == name else None
    if type(target) in (cst.Tuple, cst.List) and any(
            type(el.value) is cst.Name and el.value.value == name for el in target.elements):
        return "unpack"
    return None


def _shape(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Attribute and node.attr.value == "shape"
