"""Class facts a subclass inherits: ``self.gate`` is a parameter, ``self.scores()`` a tensor.

A file is summarized alone (in parallel, cached by content), so a class does not know what its
bases, perhaps in another file, made of their attributes. After every file is summarized once,
this finds, per class with bases among the analysed files, the facts of its bases (their whole
MRO) that it *uses* -- an attribute it calls a method on (``self.gate.float()``), a method it
calls on itself (``self.scores(h)``) -- and does not settle itself; only files with such classes
are summarized again, with the facts as names ``Cls.weight:gate``, ``Cls.tensor:buf``,
``Cls.method:scores`` (the same second round, and cache variant, as :mod:`.crossfile`).
Filtering by use keeps the round cheap: every ``nn.Module`` subclass in torch would otherwise
inherit ``Module.get_buffer``. A subclass's own definition of a method wins.
"""

from __future__ import annotations

from collections import defaultdict

from graphlint.static.facts import FileSummary
from graphlint.static.facts import ModuleInfo
from graphlint.static.index import Index
from graphlint.static.tensors import ClassFacts

KINDS = ("weight", "tensor", "method")


def _used(info: ModuleInfo, qualname: str) -> tuple[set[str], set[str]]:
    """(attributes the class calls a method on, methods it calls on itself)."""
    attrs, methods = set(), set()
    for fn in info.functions.values():
        if fn.cls != qualname:
            continue
        for call in fn.calls:  # ``self.m(...)``: a method; ``self.a.m(...)``, ``self.a[i](...)``: an attribute
            path, expr = [], call.expr
            while expr[0] in ("a", "s"):
                if expr[0] == "a":
                    path.append(expr[2])
                expr = expr[1]
            if call.reference or expr != ("n", "self") or not path:
                continue
            if len(path) == 1 and call.expr[0] == "a":
                methods.add(path[0])
            else:
                attrs.add(path[-1])
    return attrs, methods


def inherited_class_facts(summaries: list[FileSummary], index: Index | None = None) -> dict[str, frozenset[str]]:
    """{path: facts its classes inherit, as ``Cls.kind:name``}, only for files that have some.
    ``index``: the :class:`Index` of these same summaries, when the caller has one."""
    infos = [s.data for s in summaries if isinstance(s.data, ModuleInfo)]
    if not any(cls.bases for info in infos for cls in info.classes.values()):
        return {}
    index = index or Index(infos)
    out: dict[str, frozenset[str]] = {}
    for info in infos:
        names: set[str] = set()
        for qualname, cls in info.classes.items():
            if not cls.bases:
                continue
            attrs, methods = _used(info, qualname)
            if not attrs and not methods:
                continue
            for base_info, base in index.mro((info, qualname))[1:]:
                facts = base_info.classes[base]
                names |= {f"{qualname}.weight:{a}" for a in facts.weight_attrs & attrs - cls.weight_attrs}
                names |= {f"{qualname}.tensor:{a}" for a in (facts.tensor_attrs - facts.weight_attrs) & attrs
                          - cls.tensor_attrs}
                names |= {f"{qualname}.method:{m}" for m in facts.tensor_methods & methods - cls.methods}
        if names:
            out[info.path] = frozenset(names)
    return out


def inherited_by_class(names: frozenset[str]) -> dict[str, list[tuple[str, str]]]:
    """``Cls.kind:name`` names -> {class qualname: [(kind, name)]} (other names are ignored)."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name in names:
        if name.startswith(("ret:", "param:")):  # the value facts of static.valueflow
            continue
        owner, sep, attr = name.rpartition(":")
        qualname, _, kind = owner.rpartition(".")
        if sep and kind in KINDS:
            out[qualname].append((kind, attr))
    return dict(out)


def seed_inherited(facts: ClassFacts, inherited) -> None:
    """Start a class's facts with what its bases give it."""
    for kind, name in inherited:
        if kind == "method":
            facts.tensor_methods.add(name)
        else:
            facts.tensor_attrs.add(name)
            if kind == "weight":
                facts.weight_attrs.add(name)
