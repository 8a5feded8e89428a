"""``self.m()`` inside ``C.f`` runs only overrides of ``m`` in classes that run ``C.f``.

The points-to gives ``self`` in a method every subclass of its class (a cone), so ``self.m()``
may run any subclass's override of ``m``. But ``self`` in ``C.f`` is only ever an instance whose
class inherits ``C.f``: a subclass ``S`` that overrides ``f`` runs its own ``f``, never ``C.f``,
unless an override on the way calls the overridden one (``super().f(...)``, ``C.f(self, ...)``).
A replacement module that subclasses the original and overrides its ``forward`` (an injected
MoE, a rotary variant with its own ``get_cos_sin``) was reported through the original's
``forward`` calling the replacement's helpers -- code that path never runs. Such edges are
dropped here, before anything reads the call graph; a call through another receiver, or a class
whose override calls any ``f`` (its base's, cooperatively), keeps every target.
"""

from __future__ import annotations

from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.index import Index

FuncId = tuple[str, str]


def drop_unrun_overrides(raw: dict[FuncId, list[tuple[FuncId, CallSite]]], infos: list[ModuleInfo],
                         index: Index) -> int:
    """Removes from ``raw`` the ``self.m()`` edges of a method ``C.f`` into an override in a
    subclass that does not run ``C.f``; the number of edges removed."""
    by_path = {info.path: info for info in infos}
    removed = 0
    for caller, edges in raw.items():
        info = by_path.get(caller[0])
        fn = info.functions.get(caller[1]) if info is not None else None
        flow = info.flows.get(caller[1]) if info is not None else None
        if fn is None or not fn.cls or flow is None or flow.fkind != "m" or fn.cls not in info.classes:
            continue
        keep = [(callee, site) for callee, site in edges
                if not _on_self(site) or _runs_caller(callee, (info, fn.cls), fn.name, caller, by_path, index, raw)]
        removed += len(edges) - len(keep)
        if len(keep) != len(edges):
            raw[caller] = keep
    return removed


def _on_self(site: CallSite) -> bool:
    expr = site.expr
    return isinstance(expr, tuple) and len(expr) == 3 and expr[0] == "a" and expr[1] == ("n", "self")


def _runs_caller(callee: FuncId, owner, name: str, caller: FuncId, by_path: dict, index: Index, raw) -> bool:
    """Whether an instance of the callee's class may run ``caller`` (``owner``'s method ``name``)."""
    info = by_path.get(callee[0])
    cls = callee[1].rpartition(".")[0]
    if info is None or cls not in info.classes:
        return True
    mro = index.mro((info, cls))
    keys = [(i.path, n) for i, n in mro]
    here = (owner[0].path, owner[1])
    if here not in keys[1:]:
        return True  # not a strict subclass of the caller's class: the cone's own business
    for i, (k_info, k_name) in enumerate(mro[: keys.index(here)]):
        if name in k_info.classes[k_name].methods:
            other = (k_info.path, f"{k_name}.{name}")
            # an override that calls a base's ``name`` (``super().f()``, ``Base.f(self)``) may run ``caller``
            later = set(keys[i + 1:])
            return other == caller or any(c[1].rpartition(".")[2] == name and (c[0], c[1].rpartition(".")[0]) in later
                                          for c, _ in raw.get(other, ()))
    return True


def instance_runs(ref, method: FuncId, by_path: dict, index: Index, calls) -> bool:
    """Whether an instance of exactly ``ref`` (a class of the index) may run ``method``, a method of
    a class of its MRO: not where a class before that one overrides it without calling it back."""
    owner_path, qual = method
    cls, _, name = qual.rpartition(".")
    info = by_path.get(owner_path)
    if info is None or cls not in info.classes:
        return True
    return _runs_caller((ref[0].path, f"{ref[1]}.{name}"), (info, cls), name, method, by_path, index, calls)
