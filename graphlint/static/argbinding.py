"""How a call's arguments reach the callee's parameters in the points-to problem.

Its own module because it is Python's argument-binding rule and nothing else, beside
:mod:`.objects` (which decides *what* a call runs): positional arguments fill parameters in
order, the rest go to ``*args``; a ``*spread`` may fill any later parameter (its elements, not
itself) and ``**spread`` any parameter not yet filled by position or any keyword-only one;
keywords fill their parameter, else ``**kwargs``. ``first`` is the parameter the first argument
fills (1 for a bound method: ``self`` is filled already).
"""

from __future__ import annotations

from typing import Callable

from graphlint.static.facts import ScopeFlow
from graphlint.static.pointsto import Solver


def bind_arguments(solver: Solver, flow: ScopeFlow | None, fid: tuple[str, str], first: int, args: tuple,
                   kws: tuple, elements: Callable[[int, int], None]) -> None:
    """``args`` are nodes or ("*", node), ``kws`` (name, node) or ("**", node); ``elements(src,
    dst)`` makes ``dst`` hold what ``src`` holds as elements (``Objects.elements``)."""
    if flow is None:
        return
    path, qual = fid
    var = solver.node
    params = flow.params
    position = first
    for arg in args:
        if type(arg) is tuple:  # ("*", node): its elements may fill any later parameter
            spread = solver.fresh()
            elements(arg[1], spread)
            for name in params[position:]:
                solver.edge(spread, var(("v", path, qual, name)))
            if flow.vararg:
                solver.edge(spread, var(("el", path, ("*", qual))))
            break
        if position < len(params):
            solver.edge(arg, var(("v", path, qual, params[position])))
        elif flow.vararg:
            solver.edge(arg, var(("el", path, ("*", qual))))
        position += 1
    for name, node in kws:
        if name == "**":
            spread = solver.fresh()
            elements(node, spread)
            for other in (*params[position:], *flow.kwonly):
                solver.edge(spread, var(("v", path, qual, other)))
            if flow.kwarg:
                solver.edge(spread, var(("el", path, ("**", qual))))
        elif name in params or name in flow.kwonly:
            solver.edge(node, var(("v", path, qual, name)))
        elif flow.kwarg:
            solver.edge(node, var(("el", path, ("**", qual))))
