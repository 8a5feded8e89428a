"""Tests of a name's type that a tensor answers one way: ``torch.is_tensor(p)``, ``isinstance(p, int)``.

A helper that accepts an int or a tensor converts the int on the spot::

    if not torch.is_tensor(offset):
        offset = torch.tensor([offset], device=x.device)   # never runs when every caller passes a tensor

Where every caller passes ``offset`` a tensor (a ``param:`` fact of :mod:`.valueflow`, learned only
for the names such a test asks about: ``FunctionInfo.type_tested``), the conversion is a fallback no
caller takes (:func:`.branchwalk.given_none_test`). Decided only for a plain parameter name, a test of
``torch.is_tensor`` / ``isinstance`` against ``torch.Tensor`` or Python scalar and container types
(which no tensor is), under any number of ``not``.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import resolve

#: ``isinstance`` classes no tensor is an instance of
NOT_TENSORS = frozenset(("int", "float", "bool", "complex", "str", "list", "tuple", "dict"))


def type_test(test: cst.BaseExpression, imports: dict[str, str]) -> tuple[str, bool] | None:
    """(name, what the test gives when ``name`` holds a tensor), or None for any other test."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    if type(test) is not cst.Call or not test.args or type(test.args[0].value) is not cst.Name \
            or any(a.keyword is not None or a.star for a in test.args):
        return None
    name, func = test.args[0].value.value, resolve(test.func, imports)
    if func == "torch.is_tensor" and len(test.args) == 1:
        return name, not negated
    if type(test.func) is not cst.Name or test.func.value != "isinstance" or "isinstance" in imports \
            or len(test.args) != 2:
        return None
    kinds = test.args[1].value
    classes = [e.value for e in kinds.elements] if type(kinds) is cst.Tuple else [kinds]
    if all(resolve(c, imports) == "torch.Tensor" for c in classes):
        return name, not negated
    if all(type(c) is cst.Name and c.value in NOT_TENSORS and c.value not in imports for c in classes):
        return name, negated
    return None
