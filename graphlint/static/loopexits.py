"""Blocks that leave their loop: what runs on a path that ends by leaving a loop runs at most once
per run of that loop.

``for ...: ...; if stop: <log; a zeros column>; break`` -- the branch's body runs on the iteration
that leaves, so once per run of the loop, not once per token: the same category as the body of
``if i == 0:`` (:mod:`.iterations`). The walker walks such a body with the loop among its
``first_iters`` (:mod:`.branchwalk`): its flows and call sites are kept, so the call graph stays
whole, but a candidate in it carries ``first-iter:<loop>`` and is no per-token hazard of that loop
(:meth:`.contexts.Placement.first_step_only`), and a per-token loop does not make what it calls
there hot (:meth:`.entries.Discovery.add`). The ``if``'s TEST is no part of the block: it runs
every iteration, and a read in it stays a finding (unless it is the loop's one read).

A block (an ``if``'s body or ``else``, a loop's ``else``) leaves loop L when its last statement,
at the block's own level, is

- ``break``, and L is the innermost loop around the block (a ``break`` in a nested loop leaves
  that loop only; a loop's ``else:`` is outside that loop, so a ``break`` there leaves the one
  around it);
- ``return``: every loop of the function (never the one-step pseudo loop of ``__next__``, where
  a ``return`` ends one step, not the iteration);
- ``raise``: the loops with no ``try`` or ``with`` between them and the block (a handler, or a
  context manager's exit, may swallow it and the loop go on);

and nothing in the block goes back into the loop: a ``continue`` of the innermost loop around the
block (one in a nested loop's body continues that loop; one in a nested loop's ``else:`` does not)
leaves nothing; a ``break`` of that loop before the end leaves only that loop; a ``raise`` in the
block is followed as a last ``raise`` is; and no ``try`` between the block and L has a
``finally`` holding a ``continue`` (which would cancel the exit). An exception a call in the block
raises is not followed: a handler that swallows it and lets the loop go on is an error path.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import last_statement, name_children
from graphlint.static.facts import PROTOCOL_LOOP

_EXITS = (cst.Break, cst.Return, cst.Raise)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_LOOPS = (cst.For, cst.While)


def left_loops(suite: cst.BaseSuite, loop_ids: list[int], shelters: list[tuple], func) -> tuple[int, ...]:
    """The loops (ids, outermost first) that ``suite`` leaves whenever it runs to its end, as the
    module docstring says; ``shelters``: the ``try`` / ``with`` statements the walk is inside, each
    as (node, the loop ids around it, its function's facts); ``func``: the function walked."""
    loops = [i for i in loop_ids if i != PROTOCOL_LOOP]
    last = _last(suite) if loops else None
    if last is None:
        return ()
    continues, breaks, raises = _jumps(suite)
    if continues:
        return ()
    if type(last) is cst.Break:
        out = loops[-1:] if loop_ids[-1] != PROTOCOL_LOOP else []
    else:  # ``return`` / ``raise`` leave the function; a ``break`` before them leaves the inner loop only
        out = loops[-1:] if breaks else loops
        raises = raises or type(last) is cst.Raise
    return tuple(i for i in out if _clear(i, shelters, raises, func))


def leaves_at_end(suite: cst.BaseSuite) -> bool:
    """The block ends in ``break`` or ``return`` and holds no ``continue`` of the loop around it."""
    last = _last(suite)
    return last is not None and type(last) is not cst.Raise and not _jumps(suite)[0]


def _last(suite: cst.BaseSuite) -> cst.BaseSmallStatement | None:
    """The block's last statement when it is a ``break``, ``return`` or ``raise``."""
    last = last_statement(suite)
    return last if type(last) in _EXITS else None


def _jumps(node: cst.CSTNode) -> tuple[bool, bool, bool]:
    """(a ``continue`` of the loop around the block, a ``break`` of it, any ``raise``) under
    ``node``, outside nested functions and classes; a nested loop's body is that loop's own."""
    continues = breaks = raises = False
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        node, nested = stack.pop()
        kind = type(node)
        if kind is cst.Continue:
            continues = continues or not nested
        elif kind is cst.Break:
            breaks = breaks or not nested
        elif kind is cst.Raise:
            raises = True
        elif kind in _SCOPES:
            continue
        elif kind in _LOOPS:
            stack.append((node.body, True))
            if node.orelse is not None:
                stack.append((node.orelse, nested))
            continue
        stack.extend((child, nested) for child in name_children(node))
    return continues, breaks, raises


def _clear(loop_id: int, shelters: list[tuple], raises: bool, func) -> bool:
    """No ``try`` between the block and the loop cancels its exit (a ``finally`` with a
    ``continue``) nor, when the block raises, may swallow the exception (any ``try`` or ``with``)."""
    for node, loops, owner in shelters:
        if owner is not func or loop_id not in loops:
            continue  # around the loop, or in another function
        if raises:
            return False
        if type(node) in (cst.Try, cst.TryStar) and node.finalbody is not None and _jumps(node.finalbody)[0]:
            return False
    return True
