"""Tests of the class a ``self`` field holds, as the walker sees them (the syntax half of
:mod:`.classguards`).

An engine that can build one of several implementations (a registry picked by an option at load)
often captures only when the one it built supports it: ``"_fast" in str(self.backbone.__class__)``,
``isinstance(self.backbone, FusedBackbone)``, ``type(self.backbone) is FusedBackbone``,
``self.backbone.__class__.__name__ == "FusedBackbone"``. Each such test is recorded as the value
``("k", field, test)`` of :mod:`.valuefacts` (its truth a condition, a local bound from it, a
method returning it), where ``test`` is one of

- ``("in", part, literal)``: ``literal in <part of the class>``, ``part`` one of ``str`` (``str(cls)``
  / ``repr(cls)``: ``<class 'module.Qual'>``), ``name``, ``qualname``, ``module``;
- ``("eq", part, literal)``: ``<part of the class> == literal``;
- ``("isinstance", dotted, ...)``: ``isinstance(self.f, A)`` / ``(A, B)``;
- ``("is", dotted)``: ``type(self.f) is A`` / ``self.f.__class__ == A``;
- ``("attr", name)``: ``self.f.name`` truthy, and ``("call", name)``: ``self.f.name()`` truthy -- a
  capability the implementations declare (``supports_graphs = False`` in the class body, ``def
  supports_graphs(self): return False``); recorded where a predicate returns them (and a condition's
  ``self.f.name()`` is read at link time from the call's callee), not in every condition.

Only the receiver ``self`` is recorded: the capture runs on the object whose method tests it.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import self_attr
from graphlint.static.names import dotted_name

PARTS = {"__name__": "name", "__qualname__": "qualname", "__module__": "module"}


def class_of(node: cst.BaseExpression) -> str | None:
    """The field whose class ``node`` is: ``type(self.f)``, ``self.f.__class__``."""
    if isinstance(node, cst.Attribute) and node.attr.value == "__class__":
        return self_attr(node.value)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "type" \
            and len(node.args) == 1 and node.args[0].keyword is None and node.args[0].star == "":
        return self_attr(node.args[0].value)
    return None


def class_part(node: cst.BaseExpression) -> tuple[str, str] | None:
    """(field, part) of ``str(<class>)``, ``repr(<class>)``, ``<class>.__name__`` ..."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("str", "repr") \
            and len(node.args) == 1 and node.args[0].keyword is None and node.args[0].star == "":
        field = class_of(node.args[0].value)
        return (field, "str") if field is not None else None
    if isinstance(node, cst.Attribute) and node.attr.value in PARTS:
        field = class_of(node.value)
        return (field, PARTS[node.attr.value]) if field is not None else None
    return None


#: the comparisons a class test is written with
TEST_OPS = (cst.In, cst.Equal, cst.Is)


def may_test(node: cst.BaseExpression) -> bool:
    """A cheap look before :func:`class_test` (asked for every call and comparison the value facts see)."""
    kind = type(node)
    if kind is cst.Attribute:
        owner = node.value
        return type(owner) is cst.Attribute and type(owner.value) is cst.Name and owner.value.value == "self"
    if kind is cst.Call:
        return type(node.func) is cst.Name and node.func.value == "isinstance"
    return kind is cst.Comparison and len(node.comparisons) == 1 and type(node.comparisons[0].operator) in TEST_OPS


#: what may test a field's class in a condition or a bound value; a capability attribute
#: ``self.f.graph_safe`` only where a predicate returns it (a field's field read in a condition is
#: everywhere, and stays the configuration field or unknown value it was)
TESTABLE = frozenset((cst.Call, cst.Comparison))


def tested_class(node: cst.BaseExpression) -> tuple | None:
    """:func:`class_test` of a condition or a bound value, after a cheap look."""
    return class_test(node) if type(node) in TESTABLE and may_test(node) else None


def class_test(node: cst.BaseExpression) -> tuple | None:
    """``("k", field, test)`` when ``node`` tests the class of ``self.<field>`` (module docstring)."""
    if isinstance(node, cst.Attribute):  # ``self.f.graph_safe`` (a configuration field is no class test)
        field = self_attr(node.value)
        return ("k", field, ("attr", node.attr.value)) if field is not None and not node.attr.value.startswith("__") \
            else None
    if isinstance(node, cst.Call):
        return _isinstance(node)
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    op, right = node.comparisons[0].operator, node.comparisons[0].comparator
    if isinstance(op, cst.In) and isinstance(node.left, cst.SimpleString):
        part = class_part(right)
        text = node.left.evaluated_value
        return ("k", part[0], ("in", part[1], text)) if part is not None and isinstance(text, str) else None
    if not isinstance(op, (cst.Equal, cst.Is)):
        return None
    for side, other in ((node.left, right), (right, node.left)):
        part = class_part(side)
        if part is not None and part[1] != "str" and isinstance(other, cst.SimpleString) \
                and isinstance(other.evaluated_value, str):
            return ("k", part[0], ("eq", part[1], other.evaluated_value))
        field = class_of(side)
        name = dotted_name(other) if field is not None else None
        if name is not None:
            return ("k", field, ("is", name))
    return None


def _isinstance(node: cst.Call) -> tuple | None:
    if not (isinstance(node.func, cst.Name) and node.func.value == "isinstance" and len(node.args) == 2) \
            or any(a.keyword is not None or a.star for a in node.args):
        return None
    field = self_attr(node.args[0].value)
    kinds = node.args[1].value
    elements = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    names = [dotted_name(e) for e in elements]
    if field is None or not names or None in names:
        return None
    return ("k", field, ("isinstance", *names))


def conjuncts(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``a and b and c`` -> [a, b, c] (parentheses are part of the nodes, not of the tree)."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return [*conjuncts(node.left), *conjuncts(node.right)]
    return [node]


def returned_tests(value: cst.BaseExpression | None) -> frozenset:
    """The class tests a truthy result of ``return value`` implies: its ``and`` operands' tests."""
    if value is None or type(value) not in (cst.Call, cst.Comparison, cst.BooleanOperation, cst.Attribute):
        return frozenset()
    return frozenset(t for t in (_returned_test(c) for c in conjuncts(value)) if t is not None)


def _returned_test(node: cst.BaseExpression) -> tuple | None:
    """A class test, or ``self.f.m()`` with no arguments: ``("call", m)`` (the value facts keep such
    a call's result as the call's, so only a returned one is recorded here)."""
    if type(node) is cst.Call and not node.args and type(node.func) is cst.Attribute:
        field = self_attr(node.func.value)
        if field is not None:
            return ("k", field, ("call", node.func.attr.value))
    return class_test(node) if may_test(node) else None


FALSE = (False, None, 0)


def false_members(stmt: cst.ClassDef, dataclass: bool = False) -> tuple[tuple[str, bool], ...]:
    """What a class body declares false: ``(name, False)`` for ``name = False`` (``None``, ``0``),
    ``(name, True)`` for a method whose body is ``return False``: a capability it lacks. A
    dataclass's annotated names are its instances' fields' defaults, not the class's."""
    out = []
    for item in stmt.body.body:
        if isinstance(item, cst.FunctionDef) and len(item.body.body) == 1:
            line = item.body.body[0]
            ret = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
            if isinstance(ret, cst.Return) and _false(ret.value):
                out.append((item.name.value, True))
        elif isinstance(item, cst.SimpleStatementLine) and len(item.body) == 1:
            small = item.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                    and _false(small.value):
                out.append((small.targets[0].target.value, False))
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None \
                    and not dataclass and _false(small.value):
                out.append((small.target.value, False))
    return tuple(out)


def _false(node: cst.BaseExpression | None) -> bool:
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    return isinstance(node, cst.Integer) and node.value == "0"
