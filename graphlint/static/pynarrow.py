"""Names a type test vouches to hold Python values where its answer is known.

A helper that takes an int shorthand or a tensor tests the type first::

    elif isinstance(mask, int) and (mask < 0):   # the comparison runs only for an int
        mask = torch.ones(n, n).tril()

Python evaluates the right operand of ``a and b`` only when ``a`` is true (of ``a or b`` only when it
is false), and the body of an ``if`` only when its test holds: there ``mask`` is an int, whatever the
oracle presumes of a parameter, so ``mask < 0`` is a Python comparison, no device read. The tests
are :func:`.typetests.type_test`'s (``isinstance`` against Python scalar and container types,
``torch.is_tensor`` / ``isinstance(x, torch.Tensor)`` under ``not``), of a plain name.

:func:`narrow` takes the names out of the function's tensor facts for the operand or the body being
judged; :func:`widen` puts back what it took (also where the body rebound the name: after the ``if``
it may hold either).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts
from graphlint.static.refresh import disjuncts
from graphlint.static.typetests import type_test

#: the tensor facts a Python value is in none of (:class:`.tensorfacts.FunctionFacts`)
TENSOR_FACTS = ("tensors", "scalars", "vectors", "bools")


def held_python(test: cst.BaseExpression, imports: dict[str, str]) -> frozenset[str]:
    """The names ``test`` being true says hold no tensor: a conjunct no tensor passes."""
    return frozenset(typed[0] for part in conjuncts(test)
                     if (typed := type_test(part, imports)) is not None and not typed[1])


def failed_python(test: cst.BaseExpression, imports: dict[str, str]) -> frozenset[str]:
    """The names ``test`` being false says hold no tensor: a disjunct every tensor passes."""
    return frozenset(typed[0] for part in disjuncts(test)
                     if (typed := type_test(part, imports)) is not None and typed[1])


def operand_names(test: cst.BaseExpression, imports: dict[str, str],
                  known: frozenset[str] = frozenset()) -> dict[int, frozenset[str]]:
    """id of each operand of ``test``'s ``and`` / ``or`` / ``not`` -> the names an earlier operand's
    answer (the one that lets it run) says hold Python values; operands with none are left out."""
    out: dict[int, frozenset[str]] = {}
    if type(test) is cst.BooleanOperation:
        out.update(operand_names(test.left, imports, known))
        after = held_python(test.left, imports) if type(test.operator) is cst.And else failed_python(test.left, imports)
        out.update(operand_names(test.right, imports, known | after))
    elif type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        out.update(operand_names(test.expression, imports, known))
    elif known:
        out[id(test)] = known
    return out


def narrow(fn, names) -> dict[str, set[str]]:
    """Take ``names`` out of ``fn``'s tensor facts; what was taken, for :func:`widen`."""
    taken: dict[str, set[str]] = {}
    for fact in TENSOR_FACTS:
        held = getattr(fn, fact)
        if hit := held & names:
            held -= hit
            taken[fact] = hit
    return taken


def widen(fn, taken: dict[str, set[str]]) -> None:
    for fact, names in taken.items():
        getattr(fn, fact).update(names)
