"""Batch stop checks and stop tests: the truth tests a per-token loop stops on (:mod:`.stepresult`,
:mod:`.hostreads`)."""

from __future__ import annotations

import re

import libcst as cst

from graphlint.static.cstwalk import called_name, preorder, top_small_statements
from graphlint.static.loopexits import leaves_at_end


#: a flag named for stopping (``stop``, ``done``, ``finished``, ``is_eos``): ``fresh = True`` is no stop
STOP_FLAG = re.compile(r"stop|done|finish|eos|end|terminat|complete|exit|halt", re.IGNORECASE)
#: reductions and membership tests: a truth test of one is a batch stop check (``if done.all():``)
STOP_REDUCTIONS = frozenset(("all", "any", "isin"))


def stop_check(anchor: cst.CSTNode) -> bool:
    """``done.all()``, ``any(flags)``, ``torch.isin(t, stops)``, ``eos in ids``: one bit the engine
    could keep on the device or test every few steps, not the step's data the host consumes."""
    for node in preorder(anchor):
        if type(node) is cst.Call:
            func = node.func
            name = called_name(func)
            if name in STOP_REDUCTIONS:
                return True
        elif type(node) is cst.ComparisonTarget and type(node.operator) in (cst.In, cst.NotIn):
            return True
    return False


def exits_loop(stmt: cst.CSTNode) -> bool:
    """A loop's exit test: ``while t:`` or ``if t: break`` / ``return`` (the body's first statement):
    the host decides there whether to run the next step at all."""
    if type(stmt) is cst.While:
        return True
    if type(stmt) is not cst.If or stmt.orelse is not None:
        return False
    body = stmt.body.body
    first = body[0] if body else None
    if type(first) is cst.SimpleStatementLine:
        first = first.body[0] if first.body else None
    return type(first) in (cst.Break, cst.Return)


def stops_loop(stmt: cst.CSTNode) -> bool:
    """A loop's stop test: an exit test (:func:`exits_loop`), or an ``if t:`` whose arm breaks or
    returns further down, or sets a flag named for stopping (``stop = True``) that the loop tests later."""
    if exits_loop(stmt):
        return True
    if type(stmt) is not cst.If:
        return False
    for small in top_small_statements(stmt.body):
        if type(small) in (cst.Break, cst.Return):
            return True
        if type(small) is cst.Assign and type(small.value) is cst.Name and small.value.value == "True" \
                and all(type(t.target) is cst.Name and STOP_FLAG.search(t.target.value) for t in small.targets):
            return True
    return False


def exits_at_end(stmt: cst.CSTNode) -> bool:
    """``if t: <log the lengths>; break``: an exit test whose body leaves the loop at its end, with
    no ``continue`` in it (:func:`.loopexits.leaves_at_end`) -- a batch stop check there is taken
    for the step loop's exit only where it sits in the step loop itself, not in a loop nested in it
    or in a function it calls (:mod:`.stepresult`, :meth:`.contexts.Placement.loop_exit`)."""
    return type(stmt) is cst.If and stmt.orelse is None and not exits_loop(stmt) and leaves_at_end(stmt.body)
