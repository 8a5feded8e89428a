"""Locals a call computed itself: this step's activations, which no concatenation onto them grows.

``x = torch.cat([x, new])`` grows ``x`` only when ``x`` holds something carried from the step
before -- the caller's tensor (a parameter), a field, a cache entry, a local carried round a loop.
A joint-attention processor that projects the query and joins the text tokens' query onto it
(``query = attn.to_q(h); query = attn.norm_q(query); query = torch.cat([query, txt_q], dim=1)``),
or a head join (``k = self.split_heads(k); k = torch.cat((k, rope_k), dim=1)``), joins two
tensors of this step: the result is as large every step, and nothing is carried over.

A local is **fresh** when its latest binding, in the loop where it is joined (not round it), is
the result of a computation: a call of a layer or function, arithmetic -- and, where it reads
the local itself, only while the local was fresh already (``q = q * scale``). A view, a cast or
an element of another name (``k.view(...)``, ``k.float()``, ``x[:, -1]``) is as fresh as that
name, and a join or pad is as fresh as its parts (``q = torch.cat([rope(q[..., :r]), q[..., r:]])``);
a field (``self.k``, ``cache.keys``), a retrieval (``kwargs.get("past")``, ``next(it)``) and a
parameter never are. Prefer reporting to a false silence: any other binding is not fresh.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.grownstate import view_base
from graphlint.static.joins import CONCAT_TAILS
from graphlint.static.loopnames import names_read

#: calls that hand back something held elsewhere (a cache entry, the caller's state), not a result
RETRIEVALS = frozenset(("get", "pop", "setdefault", "getattr", "next", "__getitem__", "item"))
#: calls that add to what they are given: ``F.pad(x, ...)`` grows ``x`` as a concatenation does
_GROWERS = CONCAT_TAILS | {"pad", "stack", "append"}


def _callee_tail(call: cst.Call) -> str:
    func = call.func
    if type(func) is cst.Attribute:
        return func.attr.value
    return func.value if type(func) is cst.Name else ""


class StepLocals:
    """Per-function: which locals hold a fresh value, and at which loop depth it was bound."""

    def __init__(self) -> None:
        self.fresh: dict[str, int] = {}  # local -> loop depth of its fresh binding

    def reset(self) -> None:
        self.fresh = {}

    def is_fresh(self, name: str, loop_depth: int) -> bool:
        """Whether the local ``name`` holds this step's value where it is joined at ``loop_depth``:
        bound fresh in this loop (or deeper), not before it (then the loop carries it round)."""
        return self.fresh.get(name, -1) >= loop_depth

    def computed(self, value: cst.BaseExpression, target: str, loop_depth: int) -> bool:
        """Whether binding ``target = value`` at ``loop_depth`` leaves ``target`` fresh."""
        base = view_base(value)
        if type(base) is cst.Name:
            return self.is_fresh(base.value, loop_depth)
        if type(base) is cst.IfExp:
            return self.computed(base.body, target, loop_depth) and self.computed(base.orelse, target, loop_depth)
        if type(base) is cst.Call:
            tail = _callee_tail(base)
            if tail in _GROWERS and base.args and base.args[0].keyword is None:
                return self.joined(base.args[0].value, target, loop_depth)
            if tail in RETRIEVALS | _GROWERS:
                return False
        elif type(base) not in (cst.BinaryOperation, cst.UnaryOperation):
            return False  # a field, a literal, a comprehension: not known to be this step's result
        return target not in names_read(base) or self.is_fresh(target, loop_depth)

    def joined(self, parts: cst.BaseExpression, target: str, loop_depth: int) -> bool:
        """A join or pad of this step's tensors is one too (``q = torch.cat([rope(q[..., :r]), q[..., r:]])``
        of a fresh ``q``); a part carried over (a parameter, a field, a list of them) makes it state."""
        if type(parts) in (cst.List, cst.Tuple):
            return bool(parts.elements) and all(
                type(el) is cst.Element and self.computed(el.value, target, loop_depth) for el in parts.elements)
        return self.computed(parts, target, loop_depth)

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression, loop_depth: int) -> None:
        """Record ``target = value``; ``a, b = f(x)`` binds each name to a part of a computation."""
        if type(target) in (cst.Tuple, cst.List):
            values = list(value.elements) if type(value) in (cst.Tuple, cst.List) else []
            for i, el in enumerate(target.elements):
                part = values[i].value if len(values) == len(target.elements) else value
                self.bind(el.value, part, loop_depth)
            return
        if type(target) is not cst.Name:
            return
        if self.computed(value, target.value, loop_depth):
            self.fresh[target.value] = loop_depth
        else:
            self.fresh.pop(target.value, None)
