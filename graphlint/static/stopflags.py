"""A ``while`` loop stopped by a flag: the user's quit, no convergence test (:mod:`.loops`).

A loop whose test reads a local its body rebinds runs until its own work says it is done -- a
retry or convergence loop (``while batch is None: offload(); batch = schedule()``), no serving
loop. An interactive loop reads a local too: ``while not should_stop:`` a game, a viewer or a
REPL polls its events, sets ``should_stop = True`` when the user quits, and otherwise steps its
environment or model every frame with the input that arrived (a key, a prompt). A flag the body
only ever sets to a constant (``True`` / ``False`` / ``None``) says nothing the step computed:
its work arrives from outside each iteration, as a server's does, so the loop is a serving loop
(:meth:`.tokenloops.TokenLoops.serving_loops` decides whether it runs the model). A flag set
from a value (``done = out.finished``, ``should_stop = check(x)``) stays a convergence test."""

from __future__ import annotations

#: what a stop flag is set to: constants, which no step computes
CONSTANTS = frozenset(("True", "False", "None"))


def stop_flags(frame) -> set[str]:
    """The names of ``frame``'s ``while`` test (:class:`.loops.LoopFrame`) that its body binds,
    each time, to a constant alone, and never stores into or updates."""
    return {name for name in frame.tested
            if frame.defs.get(name) and name not in frame.mutated
            and all(sources <= CONSTANTS for _, sources, _ in frame.defs[name])}
