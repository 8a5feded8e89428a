"""Branch conditions on tensor shapes, and which of them a real capture can take either way.

A test computed from shapes alone (``if x.shape[-1] > 64:``) is decided when a graph is captured,
for shapes static analysis does not know: code under it is in the graph only for some captures,
so a finding there is capped at warning (:mod:`.contexts`). A test that a batch is non-empty
(``x.shape[0] != 0``, ``x.size(0) > 0``, ``x.numel() >= 1``, ``if x.shape[0]:``) is different: a
graph is captured for a real batch, so it is true in every capture, and only its ``else`` (or
``not`` it) is code a capture never records.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import shape_only

SHAPE = ("shape",)
NONEMPTY = ("nonempty",)
EMPTY = ("not", NONEMPTY)
#: a size against an integer: which (operator, integer) say "non-empty" and which "empty"
_NONZERO = {(cst.NotEqual, 0), (cst.GreaterThan, 0), (cst.GreaterThanEqual, 1)}
_ZERO = {(cst.Equal, 0), (cst.LessThanEqual, 0), (cst.LessThan, 1)}
#: the same with the integer written on the left (``0 < x.numel()``)
_MIRROR = {cst.NotEqual: cst.NotEqual, cst.Equal: cst.Equal, cst.LessThan: cst.GreaterThan,
           cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThan: cst.LessThan,
           cst.GreaterThanEqual: cst.LessThanEqual}


def size_read(node: cst.BaseExpression) -> bool:
    """A tensor's size read directly: ``x.shape[k]``, ``x.size(k)``, ``x.numel()``, ``x.nelement()``
    (nothing computed from one: ``x.shape[0] - 1 > 0`` may well be false in a capture)."""
    if type(node) is cst.Subscript:
        return type(node.value) is cst.Attribute and node.value.attr.value == "shape" and len(node.slice) == 1
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        name = node.func.attr.value
        return (name == "size" and len(node.args) == 1) or (name in ("numel", "nelement") and not node.args)
    return False


def emptiness(left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression) -> tuple | None:
    """``NONEMPTY`` / ``EMPTY`` for a size compared with 0 or 1 so that it says "non-empty" or
    "empty"; None for anything else."""
    if size_read(right) and type(left) is cst.Integer and type(op) in _MIRROR:
        left, right, kind = right, left, _MIRROR[type(op)]
    else:
        kind = type(op)
    if not size_read(left) or type(right) is not cst.Integer:
        return None
    key = (kind, right.evaluated_value)
    return NONEMPTY if key in _NONZERO else EMPTY if key in _ZERO else None


def varies_at_capture(c: tuple) -> bool:
    """A condition a real capture may find either way (a shape test, or its negation), or one it
    never finds true (a batch is empty): code under it is in the graph only for some captures."""
    return c in (SHAPE, ("not", SHAPE), EMPTY)


def has_shape(c: tuple) -> bool:
    """Whether a condition (:mod:`.valuefacts`) has a shape test among its parts."""
    return c in (SHAPE, NONEMPTY) or any(
        isinstance(part, tuple) and part[:1] in (("not",), ("and",), ("or",), SHAPE, NONEMPTY) and has_shape(part)
        for part in c[1:])


def shape_test(left: cst.BaseExpression, right: cst.BaseExpression, shapes: set[str]) -> bool:
    """``x.shape[-1] > 64``, ``q.size(1) == 1``: only shapes and integer constants."""
    sides = (left, right)
    return any(shape_only(s, shapes) for s in sides) and all(
        isinstance(s, cst.Integer) or shape_only(s, shapes) for s in sides)
