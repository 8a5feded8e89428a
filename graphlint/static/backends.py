"""Classes built only for another backend than CUDA (``if use_torch_npu: model = NpuModel()``):
code a context reaches only through their methods is at most a warning (:mod:`.backendflags`
says which flags and conditions count, :class:`.contexts.Placement` applies it)."""

from __future__ import annotations

from graphlint.static.backendflags import backend_flag
from graphlint.static.replaced import only_through as reached_only_through

FuncId = tuple[str, str]


def backend_only(infos, index, graph, raw: dict) -> dict[FuncId, tuple[str, str]]:
    """Every method of each backend-only class -> (class, flag)."""
    flagged: dict[tuple, str] = {}  # (path, class) -> the flag of a construction under one
    for info in infos:
        for qual, fn in info.functions.items():
            for site in fn.calls:
                flag = backend_flag(site.cond) if site.cond and not site.reference else None
                if flag is not None:
                    for cls in _built(graph, info.path, qual, site):
                        flagged.setdefault(cls, flag)
    if not flagged:
        return {}
    by_path = {info.path: info for info in infos}
    inits = {}
    for path, cls in flagged:
        init = index.find_method((by_path[path], cls), "__init__") if path in by_path else None
        if init is not None and not index.subclasses((by_path[path], cls)):
            inits[(init[0].path, init[1])] = (path, cls)
    elsewhere = set()
    for (path, qual), edges in raw.items():
        for callee, site in edges:
            if callee in inits and not site.reference and backend_flag(site.cond) is None:
                if inits[callee] in _built(graph, path, qual, site):
                    elsewhere.add(inits[callee])
    out = {}
    for (path, cls) in set(inits.values()) - elsewhere:
        for method in by_path[path].classes[cls].methods:
            out[(path, f"{cls}.{method}")] = (cls, flagged[(path, cls)])
    return out


def _built(graph, path: str, qual: str, site) -> set[tuple[str, str]]:
    node = graph.node(path, qual, site.expr)
    return {(v[1], v[2]) for v in graph.solver.values(node) if v[0] == "C"} if node is not None else set()


def only_through(roots: list, calls: dict, chains: dict, gates: dict[FuncId, tuple[str, str]]) -> dict:
    """The functions of a context its roots reach only through a backend-only class's methods ->
    that class and flag (the first gate on its chain)."""
    fallback = next(iter(gates.values()), None)
    return {fid: next((gates[f] for f in chains[fid] if f in gates), fallback)
            for fid in reached_only_through(roots, calls, chains, set(gates))}
