"""Which subclasses the program may build: a call on a receiver known only by its class's cone
(``self`` in a base's method, a parameter annotated ``cache: Cache``) runs the override of a
subclass only if some instance of that subclass can exist -- rapid type analysis's refinement of
the class-hierarchy call graph. A vendored ``cache_utils.py`` carries every cache variant
(``SinkCache``, ``OffloadedCache``); the engine builds one, and ``cache.update(...)`` runs that
one's ``update``, not every variant's.

"May be built" is decided from the program text, by name, before the solve: a class is built
where its name is read as a value anywhere outside its own body and methods (a call, a registry
entry, an argument, a classmethod call ``Cls.from_x()``, an import alias's attribute), spelled in a
string the analysis keeps (a dotted path, a registry key an import or ``getattr`` may resolve),
decorated (a registering decorator keeps it), imported by a package's ``__init__`` (public: the package's
users may build it), or a class a framework other than torch can build by
configuration (a base imported from outside torch and the standard library: ``PreTrainedModel``'s
``auto_map``); a class whose subclass is built has its methods run too. Reads that build nothing do
not count: base lists, imports, ``isinstance`` tests (opaque to the flow IR). An annotation does (the
class itself, not its subclasses): ``serve(decoder: Decoder)`` is handed a ``Decoder`` built elsewhere.

Kept as before (every subclass) where instantiation is invisible: no class of the cone is named at
all (the classes are built outside the checked paths), the hierarchy registers subclasses itself
(``__init_subclass__``, a metaclass), or the program lists subclasses (``__subclasses__``).
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.flowir import EXTERNAL_ROOTS
from graphlint.static.index import ClassRef, Index

#: IR tags whose subtrees name a class without building it: imports, defs
_SKIP = frozenset(("i", "d", "k"))
#: annotations: ``decoder: Decoder`` says an instance comes in, perhaps built outside the checked code
_ANNOTATIONS = frozenset(("t", "la", "da"))
#: attribute names that enumerate or register subclasses behind the program's back
_HIDDEN = frozenset(("__subclasses__", "__init_subclass__"))


def _walk(ir, out: set[str], notes: set[str]) -> None:
    """Every name ``ir`` reads as a value, into ``out``, those of annotations into ``notes``
    (iterative: IR nests deeply)."""
    stack = [ir]
    while stack:
        node = stack.pop()
        if type(node) is not tuple or not node:
            continue
        tag = node[0]
        if type(tag) is not str:
            stack.extend(node)
            continue
        if tag in _SKIP:
            continue
        if tag in _ANNOTATIONS:
            _walk(node[1:], notes, notes)
            continue
        if tag == "n" and len(node) == 2 and type(node[1]) is str:
            out.add(node[1])
        elif tag == "a" and len(node) == 3 and type(node[2]) is str:
            out.add(node[2])
            stack.append(node[1])
        elif tag == "str" and type(node[1]) is str:
            out.update(node[1].replace(":", ".").split("."))
        elif tag == "dec" and len(node) == 3:  # ``@register class C``: the decorator keeps the class
            inner = node[2]
            while type(inner) is tuple and inner and inner[0] == "dec":
                inner = inner[2]
            if type(inner) is tuple and len(inner) == 2 and inner[0] == "k":
                out.add(inner[1].rsplit(".", 1)[-1])
            stack.append(node[1])
        else:
            stack.extend(node[1:])


def named_values(infos: list[ModuleInfo]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """name -> the classes (``path:qualname``, "" for code outside any class) whose code reads it;
    the same for the names annotations spell."""
    found: dict[str, set[str]] = {}
    annotated: dict[str, set[str]] = {}
    for info in infos:
        for qual, flow in info.flows.items():
            names: set[str] = set()
            notes: set[str] = set()
            for stmt in flow.stmts:
                if type(stmt) is not tuple or not stmt:
                    continue
                if stmt[0] in ("=", "set"):  # the target is bound, not read (its base is, ``a.b = v``)
                    target = stmt[1]
                    if type(target) is tuple and target and target[0] in ("a", "s"):
                        _walk(target[1], names, notes)
                    _walk(stmt[2:], names, notes)
                else:
                    _walk(stmt[1:], names, notes)
            if qual == "<module>" and info.path.rsplit("/", 1)[-1] == "__init__.py":
                names.update(stmt[1][1] for stmt in flow.stmts if _reexport(stmt))
            owner = f"{info.path}:{flow.cls}" if flow.cls else ""
            for name in names:
                found.setdefault(name, set()).add(owner)
            for name in notes:
                annotated.setdefault(name, set()).add(owner)
    return found, annotated


def _reexport(stmt) -> bool:
    """``from .caches import SinkCache`` in a package's ``__init__``: public, so its users may build it."""
    return (type(stmt) is tuple and len(stmt) == 3 and stmt[0] == "=" and type(stmt[1]) is tuple
            and stmt[1][0] == "n" and type(stmt[2]) is tuple and stmt[2][:1] == ("i",))


class BuiltClasses:
    """Answers, per class of a cone: may an instance of it (or of a subclass) exist?"""

    def __init__(self, infos: list[ModuleInfo], index: Index):
        self.index = index
        self.named, self.annotated = named_values(infos)
        self.hidden = any(name in self.named for name in _HIDDEN)
        self._live: dict[tuple[str, str, bool], bool] = {}  # (path, qualname, handed)
        self._open: dict[tuple[str, str], bool] = {}

    def _built(self, ref: ClassRef, handed: bool) -> bool:
        """Named as a value outside its own class; or, ``handed``, in an annotation there."""
        info, name = ref
        short, own = name.rsplit(".", 1)[-1], f"{info.path}:{name}"
        if any(r != own for r in self.named.get(short, ())):
            return True
        if handed and any(r != own for r in self.annotated.get(short, ())):
            return True
        return self._framework_base(ref)

    def _framework_base(self, ref: ClassRef) -> bool:
        """A base imported from a framework other than torch or the standard library: one that may
        build the class from configuration (``transformers``' ``auto_map``)."""
        for info, name in self.index.mro(ref):
            for base in info.classes[name].bases:
                if base[0] == "dotted" and self.index.class_ref(info, base) is None:
                    head = base[1].split(".", 1)[0]
                    root = info.imports.get(head, head).split(".", 1)[0]
                    if root not in EXTERNAL_ROOTS:
                        return True
        return False

    def live(self, ref: ClassRef, handed: bool = True) -> bool:
        """Whether the class or one of its subclasses may be built (``handed``: or is annotated, an
        instance handed in from code that may be outside the checked paths)."""
        key = (ref[0].path, ref[1], handed)
        found = self._live.get(key)
        if found is None:
            found = self._live[key] = self._built(ref, handed) or any(
                self._built(sub, handed) for sub in self.index.subclasses(ref))
        return found

    def open(self, root: ClassRef) -> bool:
        """Whether a cone of ``root`` keeps every subclass: nothing of it is built visibly (annotations
        aside: the instances come from outside), or the
        program may list or register subclasses where the analysis cannot see."""
        key = (root[0].path, root[1])
        found = self._open.get(key)
        if found is None:
            found = self._open[key] = self.hidden or not self.live(root, False) or any(
                info.classes[name].metaclass is not None or "__init_subclass__" in info.classes[name].methods
                for info, name in self.index.mro(root))
        return found

    def cone(self, root: ClassRef) -> list[ClassRef]:
        """The subclasses of ``root`` an instance in its cone may be."""
        subs = self.index.subclasses(root)
        if self.open(root):
            return subs
        return [sub for sub in subs if self.live(sub)]

    def overrides(self, root: ClassRef, method: str) -> list[tuple[ModuleInfo, str]]:
        """:meth:`.Index.overrides`, less those of subclasses nothing builds."""
        found = self.index.overrides(root, method)
        if not found or self.open(root):
            return found
        return [(info, qual) for info, qual in found if self.live((info, qual[: -len(method) - 1]))]
