"""The functions and bound methods code hands over as values (``Graphed(self.step)``,
``runner.capture(self._forward)``): what their receiver runs by intent. A capture whose callee
reaches the capturing function again is taken for the wrapper that runs the capture
(:meth:`.entries.Discovery.runs_capture`) only when no code hands that callee over so: a generic
graphing class whose captured step calls a second graphed callable reaches the capturer through
that other instance, and the step stays captured."""

from __future__ import annotations

from graphlint.static.contexts import FuncId

#: the values that are a function to run (a plain or decorated function, a bound method), not an
#: object whose ``__call__`` runs implicitly (an imprecise field may hold the runner itself)
FUNCTIONS = ("F", "M", "W")


def handed_functions(discovery) -> set[FuncId]:
    """Every function or bound method some call passes as an argument, whoever receives it."""
    graph, found = discovery.graph, set()
    for info in discovery.infos:
        for qual, fn in info.functions.items():
            for site in fn.calls:
                node = graph.node(info.path, qual, site.expr) if site.reference else None
                for value in graph.solver.values(node) if node is not None else ():
                    if value[0] in FUNCTIONS:
                        found.update(fid for fid, _, _ in graph.objects.callees(value) if fid is not None)
    return found
