"""The roots of the package's module trees: which of its classes a user builds, not another module.

A decode loop that calls a model it is handed (``logits = model(tokens, positions, mask,
layer_past=past)`` on a parameter no checked caller binds) is resolved by class
(:mod:`.openreceivers`): the package's classes whose ``forward`` every spelling of the call binds.
A transformer package whose layers share the model's calling convention (the attention, the
layer, the stack and the language model all take ``(hidden, mask, layer_past=..., ...)``) matches
more classes than one call can mean, and more than :data:`.openreceivers.MAX_CLASSES` resolve
nothing. Yet most of those classes are *parts*: their constructor runs only inside another module
of the package (``self.attention = SelfAttention(...)`` in ``TransformerLayer.__init__``, a
``build_layer`` closure there). What a user hands the loop is a tree's root -- a class no other
module of the package builds. The roots among the candidates are the answer when there are few of
them; a part is never given, since something else in the package builds it and a user passes the
whole model (a loop handed one layer is no decode loop).

"Builds" is read from the call graph: an edge into the class's own ``__init__`` from a function
of another class that has a ``forward`` (a module), a closure in one included. A subclass's
``super().__init__()`` is no building (the subclass is still the class the user builds); a class
without an ``__init__`` of its own is taken as a root (nothing is known to build it), so an
uncertain answer widens the candidates, and too many still resolve nothing.
"""

from __future__ import annotations

FuncId = tuple[str, str]


def built_by_modules(raw: dict[FuncId, list], index) -> set[tuple[str, str]]:
    """(path, class) of every class whose own ``__init__`` a method of another module class calls."""
    by_path = {info.path: info for info in index.infos}
    out: set[tuple[str, str]] = set()
    for caller, edges in raw.items():
        info = by_path.get(caller[0])
        owner = caller[1].partition(".")[0]
        if info is None or owner not in info.classes or index.find_method((info, owner), "forward") is None:
            continue
        above = {(i.path, n) for i, n in index.mro((info, owner))}
        for callee, _site in edges:
            cls, _, meth = callee[1].rpartition(".")
            if meth == "__init__" and cls and "." not in cls and (callee[0], cls) not in above:
                out.add((callee[0], cls))
    return out


def roots(picked: tuple[FuncId, ...], built: set[tuple[str, str]]) -> tuple[FuncId, ...]:
    """The candidates (``C.forward`` / ``C.__call__``) whose class no other module builds."""
    return tuple(fid for fid in picked if (fid[0], fid[1].rpartition(".")[0]) not in built)
