"""A statement that reads an attribute of a name runs on only when that name is not None.

``image_flags = image_flags.squeeze(-1)`` raises ``AttributeError`` when ``image_flags`` is None,
so the rest of its block runs only when it is not: the same as ``if image_flags is None: raise``.
The condition goes on what follows (the block's condition, as a branch's: not an early exit's,
which :meth:`.valuefacts.ValueFacts.binding_cond` leaves off the bindings after it), and
:mod:`.argvalues` decides it from what the hot callers pass: a multimodal ``forward(pixel_values,
input_ids=None, ..., image_flags=None)`` that the decode loop's call reaches without image flags
(the points-to's over-approximation of what ``self.llm`` may hold) raises at its first line, and
nothing after it is on that call's path. Only reads the statement makes whatever happens (the
callee, receiver or argument chain of a call, an operand, the value bound or returned), never one
under a condition (``x.a if c else y``, ``c and x.a``, a lambda or comprehension), nor inside
``try`` (the handler runs instead), nor a dunder every object has (``x.__class__``).
"""

from __future__ import annotations

import libcst as cst

#: nodes whose listed children always run when the node does
_SPINE = {cst.Call: ("func",), cst.Attribute: ("value",), cst.Subscript: ("value",),
          cst.BinaryOperation: ("left", "right"), cst.Comparison: ("left",), cst.UnaryOperation: ("expression",)}


def deref_conditions(values, small: cst.BaseSmallStatement, optional: set[str]) -> tuple:
    """The conditions ``small`` leaves on the rest of its block: ``not (name is None)`` for each
    name whose attribute it reads unconditionally and that may be None -- a parameter defaulting to
    None (``optional``) or a local one of whose bindings is None (the only ones a caller's values can
    decide: anything else adds nothing); ``values``: the walker's :class:`.valuefacts.ValueFacts`."""
    if values.in_try:
        return ()
    kind = type(small)
    root = small.value if kind in (cst.Assign, cst.Expr, cst.AugAssign, cst.Return) else None
    if root is None:
        return ()
    out = []
    for name in _derefs(root):
        value = values.value(name)
        if value is not None and ((value[0] == "p" and value[1] in optional) or (
                value[0] == "l" and any(v == ("c", None) for v, _ in value[1]))):
            out.append(("not", ("is", value, None)))
    return tuple(out)


def _derefs(node: cst.BaseExpression) -> list[cst.Name]:
    found: list[cst.Name] = []
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is cst.Attribute and type(n.value) is cst.Name and not n.attr.value.startswith("__"):
            found.append(n.value)
        if kind is cst.Call:
            stack.extend(a.value for a in n.args)
        for field in _SPINE.get(kind, ()):
            stack.append(getattr(n, field))
    return found
