"""Tensor facts that cross files: ``from ops import fused`` where ``ops.fused`` is ``-> Tensor``.

Summaries are per file (parallel, cached by content), so a file cannot know while it is walked
what another file's functions return. After every file is summarized, this finds, per file, the
imported names that resolve (through the same module index the linker uses, re-exports
included) to a module-level function annotated ``-> Tensor`` in another file and that the file
calls (``import torch`` alone must not send every file round again). Only those files are
summarized again, with the names as extra facts; the cache keys that second summary by the
names too. One round: a function that returns another file's tensor without an annotation
stays unknown ("not a tensor", as everywhere). Names bound to a tensor type travel the same way,
for the spellings a file annotates with (:mod:`.typealiases`).
"""

from __future__ import annotations

from graphlint.static.facts import FileSummary
from graphlint.static.facts import ModuleInfo
from graphlint.static.index import Index
from graphlint.static.typealiases import ALIAS


def imported_tensor_functions(summaries: list[FileSummary], index: Index | None = None) -> dict[str, frozenset[str]]:
    """{path: local names of imported tensor-returning functions}, only for files that have some.

    A name is ``fused`` (``from ops import fused``) or ``ops.fused`` (``import pkg.ops as ops``).
    ``index``: the :class:`Index` of these same summaries, when the caller has one."""
    infos = [s.data for s in summaries if isinstance(s.data, ModuleInfo)]
    if not any(info.tensor_functions or info.tensor_aliases for info in infos):
        return {}
    index = index or Index(infos)
    out: dict[str, frozenset[str]] = {}
    for info in infos:
        names = set()
        called = _called(info, index)  # only names the file calls: a file is summarized again only for them
        for local, dotted in info.imports.items():
            absolute = index.absolute(info, dotted)
            module = index.find_module(absolute)
            if module is not None and module is not info:  # ``import pkg.ops as ops``: ``ops.fused(x)``
                names.update(f"{local}.{name}" for name in module.tensor_functions if f"{absolute}.{name}" in called)
                names.update(f"{ALIAS}{local}.{name}" for name in module.tensor_aliases
                             if f"{local}.{name}" in info.annotated_imports)
                continue
            alias = local in info.annotated_imports
            if absolute not in called and not alias:
                continue
            try:
                target = index.resolve(info, dotted)
            except RecursionError:
                continue
            if target is not None and target[0] == "function" and target[1] is not info:
                if "." not in target[2] and target[2] in target[1].tensor_functions and absolute in called:
                    names.add(local)
            elif alias and _alias_of(index, absolute):  # ``from .types import Activations``
                names.add(ALIAS + local)
        if names:
            out[info.path] = frozenset(names)
    return out


def _alias_of(index: Index, absolute: str) -> bool:
    """``pkg.types.Activations`` names a tensor alias of the module ``pkg.types``."""
    module_name, _, name = absolute.rpartition(".")
    module = index.find_module(module_name) if module_name else None
    return module is not None and name in module.tensor_aliases


def _called(info: ModuleInfo, index: Index) -> set[str]:
    """The absolute dotted names this file calls through its imports (``ops.fused(x)`` with
    ``import pkg.ops as ops``: ``pkg.ops.fused``)."""
    out = set()
    for fn in info.functions.values():
        for call in fn.calls:
            attrs, expr = [], call.expr
            while expr[0] == "a":
                attrs.append(expr[2])
                expr = expr[1]
            if expr[0] == "n" and expr[1] in info.imports and not call.reference:
                out.add(index.absolute(info, ".".join((info.imports[expr[1]], *reversed(attrs)))))
    return out
