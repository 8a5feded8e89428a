"""Modules as values, for :mod:`.flowlink`: a module's globals, its imports, its attributes.

Its own unit (a mixin of the :class:`.flowlink.Linker`, as :class:`.libflows.LibraryFlows` is)
because it answers one question apart from compiling scopes: which project module (or package
namespace) a dotted name or ``import`` reaches, and what a module attribute holds -- its global,
a submodule, or, for a library's module, nothing the project made.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.objects import FOREIGN
from graphlint.static.pointsto import Value


class ModuleFlows:
    """Needs the linker's ``by_path``, ``index``, ``names``, ``packages``, ``module_locals``, ``o``
    (the objects) and ``s`` (the solver)."""

    def globals_of(self, path: str, seen: set[str]) -> set[str]:
        """A module's global names, ``from x import *`` included (public names, transitively)."""
        known = self.module_locals.get(path)
        if known is not None:
            return known
        flow = self.by_path[path].flows.get("<module>")
        names = set(flow.locals) if flow is not None else set()
        self.module_locals[path] = names
        seen.add(path)
        for stmt in flow.stmts if flow is not None else ():
            if stmt[0] != "*":
                continue
            source = self.module_of(path, stmt[1])
            if source is None or source.path in seen:
                continue
            for name in sorted(self.globals_of(source.path, seen)):
                if not name.startswith("_"):
                    names.add(name)
                    self.s.edge(self.s.node(("v", source.path, "<module>", name)),
                                self.s.node(("v", path, "<module>", name)))
        return names

    def module_of(self, path: str, dotted: str) -> ModuleInfo | None:
        return self.index.find_module(self.index.absolute(self.by_path[path], dotted))

    def imported(self, path: str, dotted: str, dst: int) -> None:
        absolute = self.index.absolute(self.by_path[path], dotted)
        parts = absolute.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            module = self.index.find_module(head)
            if module is None and head not in self.packages:
                continue
            node = self.s.fresh()
            self.s.add_values(node, (("Mod", module.path) if module is not None else ("Ns", head),))
            for attr in parts[cut:]:
                nxt = self.s.fresh()
                self.o.load(node, attr, nxt)
                node = nxt
            self.s.edge(node, dst)
            return
        if not dotted.startswith("."):  # ``from flashinfer import rmsnorm`` (in a function too): a library's
            self.s.add_values(dst, (FOREIGN,))

    def module_attr(self, v: Value, attr: str, dst: int) -> None:
        if attr == "__path__":  # a package's search path (:mod:`.pkgscan`)
            self.package_path(v, dst)
            return
        if v[0] == "Mod":
            if attr in self.module_locals.get(v[1], ()):
                self.s.edge(self.s.node(("v", v[1], "<module>", attr)), dst)
                return
            name = self.names.get(v[1], "")
        else:
            name = v[1]
        sub = f"{name}.{attr}"
        module = self.index.by_name.get(sub)
        if module is not None:
            self.s.add_values(dst, (("Mod", module.path),))
        elif sub in self.packages:
            self.s.add_values(dst, (("Ns", sub),))
