"""Loops that drain a work list their own function made: no serving loop.

A serving loop gets its work from outside -- a socket, a queue another thread fills, a scheduler's
field (:mod:`.loops`) -- and runs the model step once per message. ``handles = deque()``, a loop
that appends one compile handle per candidate kernel, then ``while handles: handles.popleft().wait()``
gets nothing from outside: its test reads only locals its own function bound to a fresh container
(``deque()``, ``[]``, ``list()``) before the loop, on every path to it, and never handed to anything
-- no call gets one as an argument, no field or container stores one, no nested function sees one --
so nothing else can put work there. The loop ends when the function's own list is done, once per
call (a kernel search joining its compiles, a breadth-first walk), and what it calls is no step of a
server. A queue that is a parameter, a field, or a local handed to a producer stays a serving loop's.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import children

#: constructors of an empty or fresh container (``deque(xs)`` copies ``xs``)
FRESH = frozenset(("deque", "collections.deque", "list", "dict", "set"))
FRESH_DISPLAYS = (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)
#: calls a local may be handed to without escaping: they read it and keep nothing
READERS = frozenset(("len", "bool", "any", "all"))
#: where a use of the local hands it to nothing: a method called on it (``q.append(x)``, ``q.popleft()``),
#: a reader's argument (``len(q)``, checked at the call), a test of it, its own assignment (checked there)
HARMLESS = (cst.Attribute, cst.Arg, cst.AssignTarget, cst.If, cst.While, cst.UnaryOperation, cst.BooleanOperation,
            cst.Comparison, cst.ComparisonTarget)


def drains_local_list(loop: cst.While, body: cst.CSTNode | None) -> bool:
    """See the module docstring: every name ``loop``'s test reads is such a local of ``body``."""
    if body is None or not isinstance(loop, cst.While):
        return False
    names = {n.value for n in _names(loop.test)} - READERS
    if not names:
        return False
    path = _path_to(body, loop)
    return path is not None and all(_local_list(name, body, path) for name in names)


def _names(node: cst.CSTNode):
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Name:
            yield n
        stack.extend((n.value,) if type(n) is cst.Attribute else children(n))


def _path_to(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The nodes from ``root`` down to ``target``, both included; None when it is not below."""
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = [(root, [root])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        stack.extend((c, [*path, c]) for c in children(node))
    return None


def _local_list(name: str, body: cst.CSTNode, path: list[cst.CSTNode]) -> bool:
    fresh_before = False
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, bool]] = [(body, None, False)]
    while stack:
        node, parent, nested = stack.pop()
        kind = type(node)
        if kind in (cst.Global, cst.Nonlocal) and any(n.name.value == name for n in node.names):
            return False
        if kind is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets):
            if nested or len(node.targets) != 1 or not _fresh(node.value):
                return False
            fresh_before |= _dominates(parent, path)
        elif kind is cst.Call and any(type(a.value) is cst.Name and a.value.value == name for a in node.args) \
                and not (type(node.func) is cst.Name and node.func.value in READERS):
            return False  # handed to a call that may keep it (a producer, a thread)
        elif kind is cst.Name and node.value == name and not (type(parent) is cst.Attribute and parent.attr is node) \
                and (nested or type(parent) not in HARMLESS):
            return False
        inner = nested or kind in (cst.FunctionDef, cst.Lambda, cst.ClassDef)
        stack.extend((c, node, inner) for c in children(node))
    return fresh_before


def _fresh(value: cst.BaseExpression) -> bool:
    if isinstance(value, FRESH_DISPLAYS):
        return True
    func = value.func if type(value) is cst.Call else None
    spelled = func.value if type(func) is cst.Name else (
        f"{func.value.value}.{func.attr.value}" if type(func) is cst.Attribute and type(func.value) is cst.Name else "")
    return spelled in FRESH


def _dominates(parent: cst.CSTNode | None, path: list[cst.CSTNode]) -> bool:
    """The assignment's statement line sits in a block on the way to ``loop``, before it."""
    return parent is not None and any(_before_in(block, parent, path) for block in path)


def _before_in(block: cst.CSTNode, line: cst.CSTNode, path: list[cst.CSTNode]) -> bool:
    stmts = getattr(block, "body", None)
    if not isinstance(stmts, (list, tuple)):
        return False
    ids = [id(s) for s in stmts]
    if id(line) not in ids:
        return False
    on_path = next((i for i, s in enumerate(stmts) if any(s is p for p in path)), None)
    return on_path is not None and ids.index(id(line)) < on_path
