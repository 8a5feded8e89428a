"""A Python list of tensors appended to every step and joined whole in the same loop.

A sampler that keeps the tokens it generated as a list (``generated = []`` before the loop,
``generated.append(tok)`` in it) and hands the whole history to a repetition penalty each step
(``ids = torch.cat(generated, dim=1)``) copies a tensor one token longer every step: the same
growth as ``ids = torch.cat([ids, tok])``, with the state carried in the list. Reported
(GL207, from :class:`.matchers.growing_concat.GrowingConcat`) when the joined list is a local bound
before the innermost loop, not rebound in it, the loop counts steps (``while``, ``for`` over a range:
:func:`.loopnames.eligible`; a loop over layers or items is no step) and every iteration appends to
the list (a statement of the loop's own body: appended under a test, once a frame, it grows per frame). Joined once after the loop (``out = torch.cat(generated)``), it is the result, made once.

The same history kept in a field of a record the step loop rebuilds one element longer (``State(ids=
state.ids + [tok])`` in the loop, ``torch.cat(state.ids)`` in it): :func:`grown_field` -- the field joined
whole, and a constructor in an enclosing step loop passing that field the old record's same field
plus a list display.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.loopnames import eligible

#: what puts one more element into a list
APPENDS = frozenset(("append", "extend", "insert"))


def joined_list(value: cst.BaseExpression) -> str | None:
    """``L`` of ``torch.cat(L, dim=1)``: a join of a whole list named by a local (not a display)."""
    if type(value) is not cst.Call or not value.args or value.args[0].keyword is not None or value.args[0].star:
        return None
    first = value.args[0].value
    return first.value if type(first) is cst.Name else None


def appended_in(loop: cst.For | cst.While, name: str) -> bool:
    """Whether every iteration appends to the list ``name`` (``name.append(x)``, ``name += [x]``): a
    statement of the loop's own body, not one under a test (once a frame, once a chunk)."""
    stmts = [s for s in loop.body.body if isinstance(s, cst.SimpleStatementLine)] \
        if isinstance(loop.body, cst.IndentedBlock) else [loop.body]
    for node in (n for stmt in stmts for n in preorder(stmt)):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in APPENDS \
                and type(node.func.value) is cst.Name and node.func.value.value == name:
            return True
        if type(node) is cst.AugAssign and type(node.target) is cst.Name and node.target.value == name \
                and isinstance(node.operator, cst.AddAssign):
            return True
    return False


def grown_list(value: cst.BaseExpression, loops: list, bound_depth: dict[str, int], loop_depth: int) -> bool:
    """Whether ``value`` joins a list the innermost step loop grows (``bound_depth``: the loop depth
    of each local's latest binding)."""
    name = joined_list(value)
    if name is None or not loops or bound_depth.get(name, loop_depth) >= loop_depth:
        return False
    loop = loops[-1]
    return eligible(loop) and appended_in(loop, name)


def grown_field(value: cst.BaseExpression, loops: list) -> bool:
    """Whether ``value`` joins a whole list field (``torch.cat(state.ids)``) that an enclosing step loop
    rebuilds one element longer every iteration (``State(ids=state.ids + [tok])``, any depth of it)."""
    if type(value) is not cst.Call or not value.args or value.args[0].keyword is not None or value.args[0].star:
        return False
    field = value.args[0].value
    if type(field) is not cst.Attribute or type(field.value) is not cst.Name:
        return False
    name = field.attr.value
    return any(eligible(loop) and any(_extends(node, name) for node in preorder(loop.body)) for loop in loops)


def _extends(node: cst.CSTNode, name: str) -> bool:
    """``name=<x>.name + [...]``: a keyword giving the field its old value one display longer."""
    if type(node) is not cst.Arg or node.keyword is None or node.keyword.value != name:
        return False
    grown = node.value
    return type(grown) is cst.BinaryOperation and isinstance(grown.operator, cst.Add) \
        and type(grown.left) is cst.Attribute and grown.left.attr.value == name \
        and type(grown.right) in (cst.List, cst.Tuple)
