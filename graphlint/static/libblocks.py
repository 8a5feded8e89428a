"""What calling a project module whose ``forward`` is a library's runs: the project modules it holds.

``class FastBlock(LibBlock): __init__: super().__init__(cfg); self.attn = FastAttention(cfg)`` --
a layer of the project swapped into a library block by subclassing it. ``block(h)`` runs the
library's ``forward`` (outside the checked paths), and that ``forward`` calls ``self.attn``: the
library block is the project layer's only caller, and no value flow says so (the points-to has no
``forward`` to bind for the instance, so the call resolves to nothing of the project).

**The rule.** Calling an instance of a project class that defines neither ``forward`` nor
``__call__`` along its project MRO but derives from a library class runs, besides nothing the
analysis sees, every project module its fields hold (an instance whose class has a ``forward``,
elements of an ``nn.ModuleList`` field included): what its own methods store on ``self``
(``_self_fields``: the constructor's ``self.attn = FastAttention(...)``), after the solve, so the
fields' values are final. A field holding another such block is followed the same way (a library
model subclass whose ``self.h`` holds library-block subclasses), with a visited set.

Bounded on purpose: only fields the project's own methods store on ``self`` (not those the library
base makes), only module instances (a config or a tensor runs nothing), and only for a class with
no ``forward`` of the project (a class that defines one is resolved to it, as before). A library
forward may leave a submodule it holds uncalled; that is the soundness doubt, small next to a
layer that runs every token and is never checked. Modules stored into a *library object* from
outside (``lib_block.attn = Ours()``) are :mod:`.installed`'s.
"""

from __future__ import annotations

FuncId = tuple[str, str]
#: values a field may hold that are instances of a project class
INSTANCES = ("I", "S")


class LibraryBlocks:
    def __init__(self, objects):
        self.o, self.s = objects, objects.s
        self._runs: dict[tuple, list[FuncId]] = {}

    def runs(self, value: tuple) -> list[FuncId]:
        """The project ``forward``s calling instance ``value`` runs through a library base's forward
        (empty for a class with a forward of its own or no library base; cached, asked after the solve)."""
        if value[0] not in INSTANCES:
            return []
        found = self._runs.get(value)
        if found is None:
            found = self._runs[value] = sorted(self._collect(value, set())) if self.library_forward(value) else []
        return found

    def library_forward(self, value: tuple) -> bool:
        """The class runs a library's ``forward`` when called: none of the project along its MRO (a
        cone's subclasses too) defines one, and it derives from a class from outside the project."""
        o = self.o
        ref = o.ref(value)
        if o.index.call_forward(ref) is not None or not o.ctors.library_base(ref):
            return False
        return value[0] != "S" or not o.index.overrides(ref, "forward")

    def _collect(self, value: tuple, seen: set) -> dict[FuncId, None]:
        found: dict[FuncId, None] = {}
        if value in seen:
            return found
        seen.add(value)
        o, ids = self.o, self.s.ids
        for info, name in o.index.mro(o.ref(value)):
            for attr in sorted(o.fields.get((info.path, name), ())):
                node = ids.get(("fd", info.path, name, attr))
                for held in self._modules(node):
                    if self.library_forward(held):
                        found.update(self._collect(held, seen))
                        continue
                    found.update(dict.fromkeys(fid for fid, _, _ in o.callees(held) if fid is not None))
        return found

    def _modules(self, node: int | None) -> list[tuple]:
        """The project instances a field holds, elements of a container it holds (a ``ModuleList``) too."""
        if node is None:
            return []
        out = []
        for v in self.s.values(node):
            if v[0] in INSTANCES:
                out.append(v)
            elif v[0] == "L":
                out.extend(e for e in self.s.values(self.o.elems(v)) if e[0] in INSTANCES)
        return out
