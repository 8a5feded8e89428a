"""Timing switches: a flag whose branches only instrument the step, off the decode path.

Engines time their steps behind a switch: ``if self.log_time: s = time.time()`` before a phase,
``if self.log_time: self.log["patch"] += time.time() - s; self.log["tokens"] += n.sum().item()``
after it; a benchmark script's ``if benchmark: torch.cuda.synchronize(); t1 = time.time()``. The
sync or read-back such a branch does runs only when someone measures, never in the decode a user
runs: the labels of every set read a *switched* timer as instrumentation (false), an unconditional
one as a per-step hazard (true; :mod:`.timingloops` has the loops that time a step).

A flag is a timing switch of a function when some ``if flag:`` of that function (a plain
truthiness test of a name or an attribute chain, no ``else``) reads a clock in its body
(:func:`.timingloops.reads_clock`); then every ``if flag:`` of the function is instrumentation,
the ones that only sync or count included (the clock is read in a sibling branch of the same
switch). Such a body is walked as set-up by :class:`.branchwalk.BranchWalker`: its flows stay,
its findings go. A branch that does anything under a test of another kind (``if not flag:``,
``if step % 10 == 0:``) is not decided here.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import dotted_name
from graphlint.static.timingloops import reads_clock


def switch_name(stmt: cst.If) -> str | None:
    """The flag an ``if flag:`` with no ``else`` tests, dotted (``self.log_time``), or None."""
    if stmt.orelse is not None or not isinstance(stmt.test, (cst.Name, cst.Attribute)):
        return None
    return dotted_name(stmt.test)


def timing_switches(body: cst.CSTNode | None, imports: dict[str, str]) -> frozenset[str]:
    """The flags of the function whose body is ``body`` that gate a clock reading (its own
    statements, not a nested function's: only an ``if``'s body is read to its expressions)."""
    if body is None:
        return frozenset()
    found: set[str] = set()
    stack = list(getattr(body, "body", ()))
    while stack:
        node = stack.pop()
        if type(node) in (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef):
            continue
        if type(node) is cst.If:
            name = switch_name(node)
            if name is not None and name not in found and reads_clock(node.body, imports):
                found.add(name)
        stack.extend(_blocks(node))
    return frozenset(found)


def _blocks(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of a compound statement's blocks (``else``, handlers and ``finally`` too)."""
    out: list[cst.CSTNode] = []
    for part in (getattr(node, "body", None), getattr(node, "orelse", None), getattr(node, "finalbody", None),
                 *getattr(node, "handlers", ())):
        while part is not None and not isinstance(part, cst.BaseSuite):
            if isinstance(part, cst.If):  # an ``elif``: a statement of its own
                out.append(part)
                part = None
            else:
                part = getattr(part, "body", None)
        if part is not None:
            out.extend(getattr(part, "body", ()))
    return out
