"""Solver loops: a loop that feeds its model call's output back only through an integrator's update.

A flow-matching or diffusion decoder runs a fixed number of solver steps over one value::

    for step in range(1, len(t_span)):
        v = self.estimator(x, mu, t)
        x = x + dt * v
        t = t + dt

The loop feeds back (``x`` reaches the next call), so :mod:`.loops` records it; but what it feeds
back is the same value refined, never a token picked from the output. Such a loop runs once per
call of its function -- per utterance when a text-to-speech engine runs the flow after the language
model has generated every token, per patch when a per-patch decode loop calls it -- so it is per
token only where its caller is, which the call graph already decides (issue 19 item 2: a loop is
per-token when it feeds a *sampled* output back into a model step). An eager decode loop of its own
it is not (:meth:`.tokenloops.TokenLoops.token_loops`).

The test, per loop: every name through which a feeding call's output reaches the next iteration's
call is *accumulated* -- bound in the body only as ``n = n + step``, ``n = n - step`` or ``n +=
step`` with ``step`` a product or quotient (``dt * v``: an increment scaled by a step size) -- and
the body calls no sampler (:mod:`.sampledcarry`). A list grown by ``ids = ids + [tok]``, a value
shifted by what the step returned (``logits = logits + token``), or a position advanced by it
(``pos = pos + accepted``, a speculative decode's carry; position names are never accumulated) is
no integrator, so the loop stays a decode loop."""

from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from graphlint.static.params import POSITION_NAMES


def note_update(frame, names, value: cst.BaseExpression | None, augmented: bool) -> None:
    """Record how the body binds ``names`` (one assignment; ``frame``: a :class:`.loops.LoopFrame`):
    as an integrator's update of each from itself, or any other way."""
    for name in names:
        if _accumulates(name, value, augmented):
            frame.accumulated.add(name)
        else:
            frame.rebound.add(name)


def _accumulates(name: str, value: cst.BaseExpression | None, augmented: bool) -> bool:
    if value is None or any(fnmatchcase(name, p) for p in POSITION_NAMES):
        return False
    if augmented:
        return _scaled(value)
    if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, (cst.Add, cst.Subtract)):
        return False
    left, right = value.left, value.right
    if _is_name(left, name):
        return _scaled(right)
    return isinstance(value.operator, cst.Add) and _is_name(right, name) and _scaled(left)


def _scaled(term: cst.BaseExpression) -> bool:
    """A step scaled by a size (``dt * v``, ``v / n``, ``lr * g``): an integrator's increment. A bare
    name (``logits + token``, ``pos + accepted``) or a list (``ids + [tok]``) is none."""
    return isinstance(term, cst.BinaryOperation) and isinstance(term.operator, (cst.Multiply, cst.Divide))


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    if type(node) is cst.Name:
        return node.value == name
    return (type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self"
            and f"self.{node.attr.value}" == name)


def solver_loop(frame, feeding: list[tuple[int, tuple, set[str]]]) -> bool:
    """Whether every feeding call of ``frame`` carries its output to the next iteration only through
    accumulated names, and nothing in the body samples. ``feeding``: the calls other than a
    container's own methods (``sol.append(x)`` keeps a history, no step)."""
    if not feeding or frame.sampled:
        return False
    state = frame.accumulated - frame.rebound
    if not state:
        return False
    return not any(frame.exposed(order, reads) & frame.derived(order, state) for order, _, reads in feeding)
