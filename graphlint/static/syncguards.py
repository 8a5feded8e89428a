"""The tests a synchronize's own ``if`` statements make, when the loop round it cannot change them.

A timer's synchronizes usually sit under the same switch (``if device.type == "cuda":``,
``if self.timing:``): the opening one of a step and the closing one of the step before run
together or not at all. A flow that joins both ways of every ``if`` sees the closing one skipped
and the device pending at the opening one. When the test cannot change inside the loop, the
synchronize runs only on iterations where it holds, and so did every earlier iteration: the flow
of :mod:`.syncpending` may take the same ``if`` on the same test one way only.

A test is loop-invariant when it is built of names, attributes, constants, comparisons, ``not``,
``and`` / ``or`` and constant subscripts (no call, no ``await``, no walrus), and the loop binds
none of its names and stores to none of its attributes or subscripts. A method call that flips
an attribute in place is not seen (a known limit: a switch is set up before the loop, not in it).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.deviceevents import walk

PURE = (cst.Name, cst.Attribute, cst.Comparison, cst.ComparisonTarget, cst.UnaryOperation, cst.BooleanOperation,
        cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.Subscript, cst.SubscriptElement,
        cst.Index)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_MODULE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    return _MODULE.code_for_node(node)


def assumed_tests(loop: cst.CSTNode, target: cst.CSTNode) -> dict[str, bool]:
    """``{test's code: its value}`` for each ``if`` between ``loop`` and ``target`` whose test the
    loop cannot change (True when ``target`` is in its body, False when in its ``else``)."""
    path = _path(loop, target)
    if not path:
        return {}
    stored = _stored(loop)
    out: dict[str, bool] = {}
    for parent, child in zip(path, path[1:]):
        if type(parent) is not cst.If or child is parent.test:
            continue
        if _invariant(parent.test, stored):
            test, value = parent.test, child is parent.body
            while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
                test, value = test.expression, not value
            out[code(test)] = value
    return out


def decided(test: cst.BaseExpression, assumed: dict[str, bool]) -> bool | None:
    """The value ``test`` has under ``assumed`` (``not`` of an assumed test too), or None."""
    if not assumed:
        return None
    value = assumed.get(code(test))
    if value is not None:
        return value
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = decided(test.expression, assumed)
        return None if inner is None else not inner
    return None


def _path(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes from ``root`` down to ``target`` ([] when it is not under ``root``'s own code)."""
    stack: list[tuple[cst.CSTNode, tuple]] = [(root, (root,))]
    while stack:
        node, path = stack.pop()
        if node is target:
            return list(path)
        if type(node) in SCOPES:
            continue
        stack.extend((child, path + (child,)) for child in node.children)
    return []


def _stored(loop: cst.CSTNode) -> set[str]:
    """The code of every name, attribute and subscript the loop (its head included) binds or stores."""
    out: set[str] = set()
    for node in walk(loop):
        kind = type(node)
        if kind is cst.AssignTarget:
            targets = [node.target]
        elif kind in (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor):
            targets = [node.target]
        elif kind is cst.WithItem and node.asname is not None:
            targets = [node.asname.name]
        elif kind is cst.Del:
            targets = [node.target]
        elif kind in (cst.FunctionDef, cst.ClassDef):
            out.add(node.name.value)
            continue
        else:
            continue
        for target in targets:
            out.update(_stores(target))
    return out


def _stores(target: cst.CSTNode) -> list[str]:
    """What a target stores: itself, or each element of a tuple or list target."""
    if type(target) in (cst.Tuple, cst.List):
        return [s for e in target.elements for s in _stores(e.value)]
    if type(target) is cst.StarredElement:
        return _stores(target.value)
    if type(target) is cst.Subscript:
        return [code(target.value) + "[]"]  # any element of it
    return [code(target)]


def _reads(test: cst.CSTNode):
    """The test's nodes, without an attribute's own name (``type`` of ``device.type`` is no variable)."""
    stack = [test]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in node.children if not (type(node) is cst.Attribute and c is node.attr))


def _invariant(test: cst.BaseExpression, stored: set[str]) -> bool:
    for node in _reads(test):
        if isinstance(node, cst.BaseExpression) and not isinstance(node, PURE):
            return False
        if type(node) is cst.Subscript and not all(
                type(e.slice) is cst.Index and type(e.slice.value) in (cst.Integer, cst.SimpleString)
                for e in node.slice):
            return False
        if type(node) in (cst.Name, cst.Attribute) and code(node) in stored or \
                type(node) is cst.Subscript and code(node.value) + "[]" in stored:
            return False
    return True
