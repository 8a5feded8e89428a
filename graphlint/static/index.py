"""Name resolution over every summarized module: the call graph's edges.

Resolution is by name, within the files given: module functions, ``self.m()`` through the
class's bases (MRO order, bases resolved through imports) and to subclasses' overrides, sub-modules
assigned in any method (``self.attn = Attention()``, ``nn.ModuleList([Block() ...])``, either side
of ``MLP() if dense else MoE()``) whose call reaches ``forward``, callables kept on ``self``
(``self.ops = (self._attn, self._mlp)``, ``self._fwd = torch.compile(self._forward)``),
``getattr(self, name)(x)`` (every sub-module: the name is data), absolute imports matched by
module-name suffix (so ``src/`` layouts work) and relative imports resolved against the
importing module. Calls we cannot resolve (other libraries, dynamic dispatch) end the chain
there, which errs on the side of silence.
"""

from __future__ import annotations

from collections import deque

from graphlint.static.facts import Descriptor, ModuleInfo
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
        self._infos = infos
        self._subclasses: dict[tuple[str, str], list[ClassRef]] | None = None
        self._resolved: dict[tuple[int, str], tuple | None] = {}
        self._overrides: dict[tuple[str, str, str], list[tuple[ModuleInfo, str]]] = {}
        for info in sorted(infos, key=lambda i: i.path):
            name = module_name(info.path)
            self.name_of[id(info)] = name
            self.by_name.setdefault(name, info)
            parts = name.split(".")
            for i in range(1, len(parts)):
                self.by_suffix.setdefault(".".join(parts[i:]), []).append(info)
        for suffix, hits in self.by_suffix.items():  # the shortest path wins a suffix, decided once
            if suffix not in self.by_name:
                self.by_name[suffix] = min(hits, key=lambda i: (len(i.path), i.path))

    def find_module(self, name: str) -> ModuleInfo | None:
        return self.by_name.get(name)

    def absolute(self, info: ModuleInfo, dotted: str) -> str:
        if not dotted.startswith("."):
            return dotted
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

    def class_ref(self, info: ModuleInfo, desc: Descriptor, cls: str = "", depth: int = 0) -> ClassRef | None:
        kind = desc[0]
        if kind == "name" and desc[1] in info.classes:
            return (info, desc[1])
        if kind == "dotted":
            hit = self.resolve(info, desc[1])
            if hit is not None and hit[0] == "class":
                return (hit[1], hit[2])
        if kind == "returns" and depth < MAX_DEPTH:  # ``self.b = make_backend(...)`` with ``-> Backend``
            for target_info, qual in self.targets(info, cls, desc[1], depth + 1):
                returns = target_info.functions[qual].returns
                if returns is not None:
                    return self.class_ref(target_info, returns, target_info.functions[qual].cls, depth + 1)
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
            for info in self._infos:
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

    def submodule_types(self, ref: ClassRef, attr: str) -> list[ClassRef]:
        types: list[ClassRef] = []
        for info, name in self.mro(ref):
            cls = info.classes[name]
            for desc in (*cls.submodules.get(attr, ()), *cls.made.get(attr, ())):
                sub = self.class_ref(info, desc, name)
                if sub is not None and sub not in types:
                    types.append(sub)
        return types

    def call_forward(self, ref: ClassRef) -> tuple[ModuleInfo, str] | None:
        return self.find_method(ref, "forward") or self.find_method(ref, "__call__")

    def callables(self, ref: ClassRef, attr: str) -> list[tuple[ModuleInfo, str, Descriptor]]:
        """What ``self.<attr>`` may hold besides modules: (module, class, descriptor) per callable."""
        return [(info, name, desc) for info, name in self.mro(ref) for desc in info.classes[name].callables.get(attr, ())]

    def attr_targets(self, t: ClassRef, attr: str, depth: int) -> list[tuple[ModuleInfo, str]]:
        """Calling ``self.<attr>(...)`` on an instance of ``t``: sub-modules' forward, kept callables."""
        found = [self.call_forward(sub) for sub in self.submodule_types(t, attr)]
        if depth < MAX_DEPTH:
            for info, cls, desc in self.callables(t, attr):
                found.extend(self.targets(info, cls, desc, depth + 1))
        return found

    def member_targets(self, info: ModuleInfo, own: ClassRef | None, path: tuple, method: str | None, depth: int = 0):
        """``self.model.blocks[i].forward_eager(...)``: follow sub-module types attribute by attribute."""
        root, attrs = path
        start = own if root == "self" else self.class_ref(info, root, own[1] if own else "", depth)
        if start is None:
            return []
        types = [start]
        for attr in attrs[:-1] if method is None else attrs:
            types = [sub for t in types for sub in self.submodule_types(t, attr)]
        if method is None:
            if not attrs:
                return [self.call_forward(start), *(self.overrides(start, "forward") if root != "self" else ())]
            return [hit for t in types for hit in self.attr_targets(t, attrs[-1], depth)]
        # ``self.m()`` in a base, or ``model.forward()`` on a parameter typed with an (abstract) base
        # class: every override in the given files may be what runs
        found = self.overrides(start, method) if not attrs else []
        for t in types:
            hit = self.find_method(t, method)
            if hit is not None:
                found.append(hit)
                if attrs and hit[0].functions[hit[1]].abstract:  # ``self.backend.prepare(...)`` on an interface
                    found.extend(self.overrides(t, method))
            else:  # ``self.attn(x)`` written as a member call of a sub-module attribute
                found.extend(self.attr_targets(t, method, depth))
        return found

    def getattr_targets(self, own: ClassRef | None, prefix: str) -> list[tuple[ModuleInfo, str]]:
        """``getattr(self, name)(x)``: the forward of every sub-module whose attribute starts with ``prefix``."""
        if own is None:
            return []
        attrs = {a for info, name in self.mro(own) for a in info.classes[name].submodules if a.startswith(prefix)}
        return [self.call_forward(sub) for a in sorted(attrs) for sub in self.submodule_types(own, a)]

    def region_functions(self, info: ModuleInfo, region) -> list[tuple[ModuleInfo, str]]:
        """The functions a declared region runs; for a factory (``self._graph_a_fn(i)``), the
        closures it defines and hands out, or the factory itself if it defines none."""
        desc = region.target
        if desc[0] != "returns":
            return self.targets(info, region.cls, desc)
        found = []
        for factory_info, factory in self.targets(info, region.cls, desc[1]):
            fn = factory_info.functions[factory]
            descs = [c.target[1] if c.target[0] == "ref" else c.target for c in fn.calls]
            names = dict.fromkeys(d[1] for d in descs if d[0] == "local" and d[1] in factory_info.functions)
            closures = [(factory_info, name) for name in names]
            found.extend(closures or [(factory_info, factory)])
        return found

    def targets(self, info: ModuleInfo, cls: str, desc: Descriptor, depth: int = 0) -> list[tuple[ModuleInfo, str]]:
        kind = desc[0]
        if kind == "ref":  # a callback: only functions and methods, never a class (that is no call)
            inner = desc[1]
            if inner[0] == "name" and inner[1] not in info.functions:
                return []
            return self.targets(info, cls, inner, depth)
        own = (info, cls) if cls in info.classes else None
        found: list[tuple[ModuleInfo, str] | None] = []
        if kind == "local":
            found.append((info, desc[1]) if desc[1] in info.functions else None)
        elif kind == "name":
            if desc[1] in info.functions:
                found.append((info, desc[1]))
            elif desc[1] in info.classes:
                found.append(self.find_method((info, desc[1]), "__init__"))
        elif kind == "dotted":
            hit = self.resolve(info, desc[1])
            if hit is not None:
                ref = (hit[1], hit[2])
                found.append(ref if hit[0] == "function" else self.find_method(ref, "__init__"))
        elif kind == "member":
            found.extend(self.member_targets(info, own, desc[1], desc[2], depth))
        elif kind == "getattr":
            found.extend(self.getattr_targets(own, desc[1]))
        elif own is not None and kind == "super":
            found.append(self.find_method(own, desc[1], skip_first=True))
        return [f for f in found if f is not None]
