"""Self-wrapping stores: ``self.model = Runner(self.model)``, ``x = wrap(x, ...)`` -- a field or
name assigned the result of a call that was given that same field or name. Read flow-insensitively
the field then holds both the wrapped value and the wrapper, so a call of it under the wrapper's own
capture resolves to the wrapper too (:meth:`.entries.Discovery.runs_capture`). Only such a store
makes the wrapper a value of what it wraps: a generic graphing class whose captured function
merely *reaches* another instance of the class (a second graphed callable it calls) is no wrapper
of itself, and its captured function stays captured."""

from __future__ import annotations

from graphlint.static.contexts import FuncId

#: how many calls deep a self-wrapping store's call may go to construct the wrapper (a factory:
#: ``backend.build_graph_runner(model)`` -> ``Runner(model)`` -> ``super().__init__``)
DEPTH = 3


def _given(target: tuple, call: tuple) -> bool:
    """Whether ``call`` (``("c", func, args, kwargs)``) is given ``target`` as an argument."""
    _, _, args, kwargs = call
    for arg in args or ():
        if arg == target or (isinstance(arg, tuple) and len(arg) == 2 and arg[0] == "*" and arg[1] == target):
            return True
    return any(isinstance(kw, tuple) and len(kw) == 2 and kw[1] == target for kw in kwargs or ())


def wrapper_classes(discovery) -> set[tuple[str, str]]:
    """The classes (path, qualname) an instance of which a self-wrapping store may store: those
    whose ``__init__`` its call runs, directly or through a factory (:data:`DEPTH` calls deep)."""
    found: set[tuple[str, str]] = set()
    for info in discovery.infos:
        for qual, flow in info.flows.items():
            for stmt in flow.stmts:
                if len(stmt) != 3 or stmt[0] != "=" or not isinstance(stmt[2], tuple) or not stmt[2] \
                        or stmt[2][0] != "c" or stmt[1][0] not in ("a", "n") or not _given(stmt[1], stmt[2]):
                    continue
                node = discovery.graph.node(info.path, qual, stmt[2][1]) if discovery.graph is not None else None
                if node is None:
                    continue
                found |= _constructed(discovery, discovery.graph.callees(node))
    return found


def _constructed(discovery, start: list[FuncId]) -> set[tuple[str, str]]:
    """The classes whose ``__init__`` the functions ``start`` are or call, up to :data:`DEPTH` deep."""
    found: set[tuple[str, str]] = set()
    seen, frontier = set(start), list(start)
    for _ in range(DEPTH):
        for fid in frontier:
            if fid[1].endswith(".__init__"):
                found.add((fid[0], fid[1].rpartition(".")[0]))
        frontier = [c for f in frontier for c, _ in discovery.calls.get(f, ()) if c not in seen]
        seen.update(frontier)
    return found


def is_wrapper(discovery, callee: FuncId, wrappers: set[tuple[str, str]]) -> bool:
    """Whether ``callee`` is a method of a class a self-wrapping store stores, or of a base of one."""
    fn = discovery.by_path[callee[0]].functions.get(callee[1])
    if fn is None or not fn.cls:
        return False
    cls = (callee[0], fn.cls)
    if cls in wrappers:
        return True
    for path, qual in wrappers:
        info = discovery.by_path.get(path)
        if info is not None and any((ref[0].path, ref[1]) == cls for ref in discovery.index.mro((info, qual))):
            return True
    return False


def handed_functions(discovery) -> set[FuncId]:
    """The functions and bound methods some code passes as an argument (``Graphed(self.step)``):
    what a receiver runs by intent. Not an instance passed so (its ``__call__`` runs implicitly,
    and an imprecise field may hold the object that runs the capture)."""
    graph, found = discovery.graph, set()
    for info in discovery.infos:
        for qual, fn in info.functions.items():
            for site in fn.calls:
                node = graph.node(info.path, qual, site.expr) if site.reference else None
                for value in graph.solver.values(node) if node is not None else ():
                    if value[0] in ("F", "M", "W"):
                        found.update(fid for fid, _, _ in graph.objects.callees(value) if fid is not None)
    return found
