"""Captures nothing calls: graph code with no evidence that the decode path records it.

A function that captures (``with torch.cuda.graph(g): out = sample(x)``) makes what it records
graph code. When nothing in the checked paths calls or hands over that function while some other
capture of the project is called -- the engine shows where its decode path starts, and this
helper is not on it (a sampling variant written and never used) -- what only it records is at
most a warning. Not silence: a user checking part of an engine may call the helper from a file
outside the checked paths, and a warning says so without failing the gate. A project none of
whose captures is called (a library of capture helpers, its users' to call; one file checked on
its own) keeps every capture at full severity: nothing there ranks one capture above another.
Only functions that capture count: a ``torch.compile``\\ d function, a declared region or a
``make_graphed_callables`` is graph code when called, and its call is its evidence."""

from __future__ import annotations

from graphlint.static.contexts import Chain, FuncId, bfs


def uncalled_graph(roots: list[tuple[FuncId, Chain]], calls, fn, stop: set[FuncId]) -> set[FuncId]:
    """The capturing functions nothing calls, and the graph code only their captures reach (see
    the module docstring); empty when no capture of the project is called."""
    called: set[FuncId] = {callee for edges in calls.values() for callee, _ in edges}
    capturers = {chain[0] for _, chain in roots if len(chain) == 2 and fn(chain[0]).captures}
    idle = {c for c in capturers if c not in called and c[1] != "<module>"
            and not c[1].rpartition(".")[2].startswith("__")}
    if not idle or not capturers - idle:
        return set()
    sure = bfs([r for r in roots if not (len(r[1]) == 2 and r[1][0] in idle)], calls, stop)
    only = bfs([r for r in roots if len(r[1]) == 2 and r[1][0] in idle], calls, stop | set(sure))
    return idle | set(only)
