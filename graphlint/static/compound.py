"""Compound conditions and values: ``and``, ``or``, ``not`` and ``x if c else y``, with Python's
short-circuit semantics, in the terms of :mod:`.valuefacts`.

Two things follow from an operand that decides the rest:

- **what an operand evaluates under** (:func:`guarded_operands`): the right operand of ``a and b``
  runs only when ``a`` is true, that of ``a or b`` only when ``a`` is false, the branches of ``x if
  c else y`` under ``c`` / ``not c``. The walker walks each such operand with that conjunct added
  to the branch conditions, so a call or a hazard inside it is dead where no value reaching the
  function can make it run (``if mask is not None and 0.0 in mask:`` where the decode step passes
  no mask). An operand evaluated first is never guarded: ``mask.item() and mask is not None``
  reads the device whatever the mask is.
- **what a compound expression is worth** (:func:`compound_value`, :func:`compound_condition`):
  ``a or b`` is ``a`` when ``a`` is true, else ``b``; ``a and b`` the reverse; ``x if c else y``
  either side under its condition -- each a binding list ``("l", ((value, conditions), ...))``
  that :mod:`.argvalues` already evaluates (a side the values rule out contributes nothing; an
  unknown side that may run makes the whole unknown).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.iterations import ALWAYS, NEVER

UNKNOWN = ("?",)
_MAX_REPR = 400  # a larger compound value is unknown (as a large binding list is)


def guarded_operands(values, node: cst.CSTNode, shapes: set[str]) -> tuple:
    """(operand, the conjunct it is evaluated under) for each operand of ``node`` that runs only
    when an earlier operand decides so; empty when that operand is undecidable here."""
    if isinstance(node, cst.BooleanOperation):
        c = values.condition(node.left, shapes)
        if c == UNKNOWN:
            return ()
        return ((node.right, c if isinstance(node.operator, cst.And) else ("not", c)),)
    if isinstance(node, cst.IfExp):
        c = values.condition(node.test, shapes)
        if c == UNKNOWN:
            return ()
        return ((node.body, c), (node.orelse, ("not", c)))
    return ()


def tested_operands(values, test: cst.BaseExpression, shapes: set[str], extra: tuple = ()):
    """Each operand of a test's ``and``/``or``/``not`` with the conjuncts it is evaluated under (the
    truth-test rule reads each operand on its own: ``if mask is not None and 0.0 in mask:`` reads
    the mask back only when one is passed)."""
    if type(test) is cst.BooleanOperation:
        yield from tested_operands(values, test.left, shapes, extra)
        guard = guarded_operands(values, test, shapes) if values is not None else ()
        yield from tested_operands(values, test.right, shapes, extra + tuple(c for _, c in guard))
    elif type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        yield from tested_operands(values, test.expression, shapes, extra)
    else:
        yield test, extra


def compound_value(values, node: cst.IfExp | cst.BooleanOperation) -> tuple | None:
    """The value of ``a or b`` / ``a and b`` / ``x if c else y`` as a binding list, or None."""
    if isinstance(node, cst.IfExp):
        c = values.condition(node.test, values.shapes())
        if c in (NEVER, ALWAYS):  # a loop counter's test on a later iteration (:func:`.iterations.past_first`)
            return values.value(node.body if c == ALWAYS else node.orelse)
        sides = ((values.value(node.body), (c,) if c != UNKNOWN else ()),
                 (values.value(node.orelse), (("not", c),) if c != UNKNOWN else ()))
    else:
        left = values.value(node.left)
        if left is None or left[0] == "self":
            return None
        truth = ("t", left)
        taken, other = ((("not", truth),), (truth,)) if isinstance(node.operator, cst.And) else ((truth,), (("not", truth),))
        sides = ((left, taken), (values.value(node.right), other))
    if all(value is None for value, _ in sides) or any(value is not None and value[0] == "self" for value, _ in sides):
        return None
    found = ("l", sides)
    return found if len(repr(found)) < _MAX_REPR else None


def compound_condition(values, node: cst.IfExp, shapes: set[str]) -> tuple:
    """``if (x if c else y):``: either side's truth under its condition."""
    c = values.condition(node.test, shapes)
    body, orelse = values.condition(node.body, shapes), values.condition(node.orelse, shapes)
    if c == UNKNOWN and (body == UNKNOWN or orelse == UNKNOWN):
        return UNKNOWN
    return ("or", ("and", c, body), ("and", ("not", c), orelse))
