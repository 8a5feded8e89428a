"""Name resolution over every summarized module: modules by name, and the class hierarchy.

What a call runs is the points-to analysis's business (:mod:`.callgraph`); it needs, from names,
only two things no value flow gives it: which module a dotted import names (absolute imports
matched by module-name suffix, so ``src/`` layouts work; relative imports against the importing
module), and each class's bases (``ClassInfo.bases``, resolved through imports) -- the MRO along
which attributes are looked up, and the subclasses whose overrides a method call on ``self`` may run.
"""

from __future__ import annotations

from collections import deque

from graphlint.static.facts import Descriptor, ModuleInfo
from graphlint.static.flowir import EXTERNAL_ROOTS
from graphlint.static.names import module_name

FuncId = tuple[str, str]  # (path, qualname)
ClassRef = tuple[ModuleInfo, str]
MAX_DEPTH = 8


class Index:
    """Name resolution over every summarized module."""

    def __init__(self, infos: list[ModuleInfo]):
        self.by_name: dict[str, ModuleInfo] = {}
        self.by_suffix: dict[str, list[ModuleInfo]] = {}
        self.name_of: dict[int, str] = {}
        self._mro: dict[tuple[str, str], list[ClassRef]] = {}
        self.infos = infos
        self._subclasses: dict[tuple[str, str], list[ClassRef]] | None = None
        self._resolved: dict[tuple[int, str], tuple | None] = {}
        self._overrides: dict[tuple[str, str, str], list[tuple[ModuleInfo, str]]] = {}
        self._absolute: dict[tuple[int, str], str] = {}
        self._stars: dict[int, tuple[str, ...]] = {}
        #: (path, qualname) -> what a function that only hands on calls returns through them
        #: (:mod:`.forwardedreturns`, filled by :mod:`.valueflow`)
        self.forwarded: dict[tuple[str, str], object] = {}
        for info in sorted(infos, key=lambda i: i.path):
            name = module_name(info.path)
            self.name_of[id(info)] = name
            self.by_name.setdefault(name, info)
            parts = name.split(".")
            for i in range(len(parts)):
                if i:
                    self.by_suffix.setdefault(".".join(parts[i:]), []).append(info)
                alias = importable(parts[i])
                if alias != parts[i]:
                    self.by_suffix.setdefault(".".join((alias, *parts[i + 1:])), []).append(info)
        #: modules by the name they import as from the top of their package (:func:`rooted_names`),
        #: and the top-level names of every module: :meth:`under_own_name`
        self.rooted = rooted_names(infos)
        self.tops = frozenset(module_name(info.path).split(".", 1)[0] for info in infos)
        for suffix, hits in self.by_suffix.items():  # the shortest path wins a suffix, decided once
            if suffix not in self.by_name:
                self.by_name[suffix] = min(hits, key=lambda i: (len(i.path), i.path))

    def find_module(self, name: str) -> ModuleInfo | None:
        found = self.by_name.get(name)
        if found is None and "." in name:
            found = self.under_own_name(name)
        return found

    def under_own_name(self, name: str) -> ModuleInfo | None:
        """``MagicDec.Engine.backend`` when the checked tree is the package itself, imported under
        the name of its checkout (``sys.path.append("..")``): a first component that names nothing
        of the project, then the full name of one of its modules below the top (``Engine.backend``,
        at least two components from the top of a package: ``lib.core.backend`` is not the
        project's ``Engine/core/backend.py``, a bare ``utils`` after a library's name is the library's)."""
        head, _, rest = name.partition(".")
        if head in self.tops or head in EXTERNAL_ROOTS or rest.count(".") < 1:
            return None
        return self.rooted.get(rest)

    def absolute(self, info: ModuleInfo, dotted: str) -> str:
        if not dotted.startswith("."):
            return dotted
        key = (id(info), dotted)  # memoized: the value rounds ask it of every call site, every round
        found = self._absolute.get(key)
        if found is None:
            found = self._absolute[key] = self._relative(info, dotted)
        return found

    def star_imports(self, info: ModuleInfo) -> tuple[str, ...]:
        """The modules ``from m import *`` names at the top level of ``info``, absolute, in source
        order (read once per module: asked for every call of a name the module does not define)."""
        found = self._stars.get(id(info))
        if found is None:
            flow = info.flows.get("<module>")
            found = self._stars[id(info)] = tuple(
                self.absolute(info, stmt[1]) for stmt in (flow.stmts if flow is not None else ()) if stmt[0] == "*")
        return found

    def _relative(self, info: ModuleInfo, dotted: str) -> str:
        level = len(dotted) - len(dotted.lstrip("."))
        parts = self.name_of[id(info)].split(".")
        if not info.path.endswith("__init__.py"):
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        rest = dotted.lstrip(".")
        return ".".join(p for p in (*parts, rest) if p)

    def resolve(self, info: ModuleInfo, dotted: str, depth: int = 0) -> tuple[str, ModuleInfo, str] | None:
        """A dotted name -> ("function" | "class", module, qualname); memoized (linking asks the same
        names again for every call site, and the answer depends only on the module and the name)."""
        key = (id(info), dotted)
        if key not in self._resolved:
            found = self._resolve(info, dotted, depth)
            if found is None and depth:
                return None  # cut by the depth limit here; a shallower question may still find it
            self._resolved[key] = found
        return self._resolved[key]

    def _resolve(self, info: ModuleInfo, dotted: str, depth: int) -> tuple[str, ModuleInfo, str] | None:
        if depth > MAX_DEPTH:
            return None
        dotted = self.absolute(info, dotted)
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.find_module(".".join(parts[:cut]))
            if module is not None:
                return self.resolve_in(module, parts[cut:], depth)
        return None

    def resolve_in(self, module: ModuleInfo, parts: list[str], depth: int) -> tuple[str, ModuleInfo, str] | None:
        first, rest = parts[0], parts[1:]
        if first in module.classes:
            if not rest:
                return ("class", module, first)
            method = self.find_method((module, first), rest[0])
            return ("function", method[0], method[1]) if method else None
        if first in module.functions and not rest:
            return ("function", module, first)
        if first in module.imports:
            return self.resolve(module, ".".join([module.imports[first], *rest]), depth + 1)
        return None

    def class_ref(self, info: ModuleInfo, desc: Descriptor) -> ClassRef | None:
        kind = desc[0]
        if kind == "name" and desc[1] in info.classes:
            return (info, desc[1])
        if kind == "dotted":
            hit = self.resolve(info, desc[1])
            if hit is not None and hit[0] == "class":
                return (hit[1], hit[2])
        return None

    def mro(self, ref: ClassRef) -> list[ClassRef]:
        """The class and its bases found in the given files, breadth-first (cached)."""
        key = (ref[0].path, ref[1])
        if key not in self._mro:
            self._mro[key] = self._bases(ref)
        return self._mro[key]

    def _bases(self, ref: ClassRef) -> list[ClassRef]:
        order: list[ClassRef] = []
        queue = deque([ref])
        seen: set[tuple[str, str]] = set()
        while queue and len(order) < 50:
            info, name = queue.popleft()
            if (info.path, name) in seen:
                continue
            seen.add((info.path, name))
            order.append((info, name))
            for base in info.classes[name].bases:
                base_ref = self.class_ref(info, base)
                if base_ref is not None:
                    queue.append(base_ref)
        return order

    def find_method(self, ref: ClassRef, method: str, skip_first: bool = False) -> tuple[ModuleInfo, str] | None:
        for info, name in self.mro(ref)[1 if skip_first else 0 :]:
            if method in info.classes[name].methods:
                return info, f"{name}.{method}"
        return None

    def subclasses(self, ref: ClassRef) -> list[ClassRef]:
        """Every class of the given files that has ``ref`` among its bases, at any depth."""
        if self._subclasses is None:
            self._subclasses = {}
            for info in self.infos:
                for name in info.classes:
                    for base_info, base in self.mro((info, name))[1:]:
                        self._subclasses.setdefault((base_info.path, base), []).append((info, name))
        return self._subclasses.get((ref[0].path, ref[1]), [])

    def overrides(self, ref: ClassRef, method: str) -> list[tuple[ModuleInfo, str]]:
        """``self.m()`` in a base class may run a subclass's ``m`` (``Base.forward`` calling
        ``self.inner()`` on a ``Sub``): every override in the given files is a possible target."""
        self.subclasses(ref)
        key = (ref[0].path, ref[1], method)
        if key not in self._overrides:  # ``nn.Module`` has thousands of subclasses: ask once per method
            self._overrides[key] = [(info, f"{name}.{method}") for info, name in self._subclasses.get(key[:2], ())
                                    if method in info.classes[name].methods]
        return list(self._overrides[key])

    def call_forward(self, ref: ClassRef) -> tuple[ModuleInfo, str] | None:
        return self.find_method(ref, "forward") or self.find_method(ref, "__call__")


def importable(directory: str) -> str:
    """The name a package directory no import can spell is installed under: ``nano-x`` as
    ``nano_x`` (setuptools' ``package-dir`` map, pip's normalised names); any other name as it is."""
    alias = directory.replace("-", "_")
    return alias if alias != directory and alias.isidentifier() else directory


def rooted_names(infos: list[ModuleInfo]) -> dict[str, ModuleInfo]:
    """Modules by their name from the outermost package directory up (``a/b/Engine/core/x.py``
    with ``__init__.py`` in ``Engine`` and ``core`` -> ``Engine.core.x``): what ``import`` names them
    by when that package's parent is on the path."""
    paths = {module_name(info.path): info for info in sorted(infos, key=lambda i: i.path)}
    packages = {name for name, info in paths.items() if info.path.endswith("__init__.py")}
    out: dict[str, ModuleInfo] = {}
    for name, info in paths.items():
        parts = name.split(".")
        k = len(parts) - 1  # ``parts[:k]``: the directory that holds it
        while k >= 1 and ".".join(parts[:k]) in packages:
            k -= 1
        out.setdefault(".".join(parts[k:]), info)
    return out
