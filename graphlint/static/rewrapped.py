"""A local rebound to a wrapper of itself, for :mod:`.flows`: ``model = Runner(model)``.

The points-to analysis is flow-insensitive: a name holds every value any of its bindings gives.
For ``model = Llama(cfg)`` then ``model = Runner(model)`` that makes the argument of ``Runner``
hold the runner itself, so the runner's ``self.model`` holds the runner, and the model forward a
graph runner captures would run the runner's own replay. In straight-line code of a function (no
loop around the binding; the name no parameter, loop target, import, def or ``global``) the
argument can only be what the name held before: the reads of the name in the value are renamed
to a snapshot, ``model@2``, bound to the earlier bindings' values (the snapshot before and the
values bound since). A parameter, or a loop feeding the name back, keeps the whole name.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.facts import ScopeFlow
from graphlint.static.flowir import IR

#: the separator of a snapshot's name: no identifier holds it
MARK = "@"


class Rebinds:
    """Per scope being walked: each local name -> the values bound to it so far, or None when
    some binding the snapshot cannot copy (a parameter, a loop target, a loop) reaches it."""

    def __init__(self) -> None:
        self.stack: list[dict[str, list[IR] | None] | None] = []
        self.count = 0  # snapshots made in the file: each name unique

    def begin(self, kind: str) -> None:
        self.stack.append({} if kind == "function" else None)

    def end(self) -> None:
        self.stack.pop()

    def untrack(self, *names: str) -> None:
        scope = self.stack[-1] if self.stack else None
        if scope is not None:
            scope.update(dict.fromkeys(names))

    def untrack_target(self, target) -> None:
        """A ``for`` target's names: rebound by every iteration."""
        for node in (target, *(el.value for el in getattr(target, "elements", ()))):
            if type(node) is cst.Name:
                self.untrack(node.value)

    def bind(self, scope: ScopeFlow, name: str, value: IR | None, looping: bool) -> list[tuple]:
        """The statements that record ``name = value`` in ``scope`` (none for an untracked value); a
        value reading the name reads a snapshot of its earlier values, bound first."""
        if value is None:  # nothing the points-to tracks: nothing to snapshot either
            return []
        known = self.stack[-1] if self.stack else None
        prior = known.get(name, []) if known is not None else None
        read = ("n", name)
        if prior is None or looping or name in scope.outer or (not prior and _reads(value, read)):
            self.untrack(name)  # a parameter, a loop, a global; or read before any binding here
            return [("=", read, value)]
        if not prior or not _reads(value, read):
            prior.append(value)
            known[name] = prior
            return [("=", read, value)]
        snap = ("n", f"{name}{MARK}{self.count}")  # what the name held until now: the last snapshot
        self.count += 1  # and the values bound since (a chain, not every earlier value again)
        scope.locals.add(snap[1])
        inner = set(_calls(value))
        at = len(scope.stmts)  # the calls of the value, recorded just before (``("e", call)``): renamed too
        while at and scope.stmts[at - 1][0] == "e" and scope.stmts[at - 1][1] in inner:
            at -= 1
            scope.stmts[at] = ("e", _renamed(scope.stmts[at][1], read, snap))
        value = _renamed(value, read, snap)
        out = [("=", snap, v) for v in prior]
        known[name] = [snap, value]
        return [*out, ("=", read, value)]


def _reads(ir, read: tuple) -> bool:
    if ir == read:
        return True
    return type(ir) is tuple and any(type(part) is tuple and _reads(part, read) for part in ir)


def _renamed(ir, read: tuple, snap: tuple):
    if ir == read:
        return snap
    if type(ir) is not tuple:
        return ir
    return tuple(_renamed(part, read, snap) if type(part) is tuple else part for part in ir)


def _calls(ir):
    """The calls inside ``ir``, itself included."""
    if type(ir) is not tuple:
        return
    if ir and ir[0] == "c":
        yield ir
    for part in ir:
        if type(part) is tuple:
            yield from _calls(part)
