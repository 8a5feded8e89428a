"""Registries filled by scanning a package: every module ``pkgutil`` lists, imported by name.

A serving engine that supports many architectures often builds its model registry at import
time from whatever modules its ``models`` package holds::

    for _, name, ispkg in pkgutil.iter_modules(package.__path__, package_name + "."):
        module = importlib.import_module(name)
        for cls in getattr(module, "EntryClass", []): REGISTRY[cls.__name__] = cls

No string in the code names a model module, so the import by string (:mod:`.classpaths`) had no
path to load. Modelled as:

- ``pkg.__path__`` of a project package (a module value of an ``__init__.py``, or a namespace
  package), and ``__path__`` itself in a package's ``__init__.py``, is ``("Pkg", dotted)``: the
  package's search path;
- ``pkgutil.iter_modules(p[, prefix])`` / ``pkgutil.walk_packages(p[, prefix])`` over such a path
  is a container of tuples whose elements are the names of the package's analysed modules:
  direct ones (``iter_modules``) or every one below it (``walk_packages``), spelled
  ``pkg.sub`` when a prefix is passed (the idiom passes the package's own name and a dot; the
  prefix's value is not read) and ``sub`` when none is (``f"{__name__}.{name}"`` then spells the
  path). Only the names reach the tuples: the finder and the ``ispkg`` flag hold nothing tracked.

The names are strings like any other, so ``importlib.import_module(name)`` loads those modules
when they are few (:data:`.classpaths.NARROW`), and ``module.EntryClass`` reads each one's global.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

#: the ``pkgutil`` functions that list a package's modules; True for a recursive walk
SCANS = {"pkgutil.iter_modules": False, "pkgutil.walk_packages": True}
#: the IR of ``__path__`` read as a global (:mod:`.flowir`): the package's own search path
OWN_PATH = ("pkgpath",)


def scan_ir(node: cst.Call, recursive: bool, expr) -> tuple | None:
    """``pkgutil.iter_modules(path, prefix)`` -> ``("scan", path_ir, prefixed, recursive)``; ``expr``
    is the IR builder's. None when the path holds nothing tracked."""
    args = [a for a in node.args if a.keyword is None and not a.star]
    named = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    path = args[0].value if args else named.get("path")
    prefix = args[1].value if len(args) > 1 else named.get("prefix")
    path_ir = expr(path) if path is not None else None
    if path_ir is None:
        return None
    empty = type(prefix) is cst.SimpleString and not prefix.raw_value
    return ("scan", path_ir, prefix is not None and not empty, recursive)


class PackageScans:
    """A mixin of :class:`graphlint.static.flowlink.Linker` (its solver ``s``, objects ``o``, module
    names ``names``, packages ``packages`` and :meth:`string`)."""

    s: Any
    o: Any
    names: dict[str, str]
    packages: set[str]

    def package_path(self, v: tuple, dst: int) -> None:
        """``module.__path__`` of the module value ``v``: the package's search path, if it is one."""
        if v[0] == "Mod":
            self.own_path(v[1], dst)
        elif v[0] == "Ns":
            self.s.add_values(dst, (("Pkg", v[1]),))

    def own_path(self, path: str, dst: int) -> None:
        """``__path__`` as a global of ``path``: its package's search path, in an ``__init__.py``."""
        if path.rpartition("/")[2] == "__init__.py":
            self.s.add_values(dst, (("Pkg", self.names.get(path, "")),))

    def package_scan(self, paths: int, prefixed: bool, recursive: bool, dst: int) -> None:
        """The tuples ``pkgutil`` yields for each package path reaching ``paths`` (module docstring)."""
        outer = ("L", "", ("call", dst), 0)
        row = ("L", "", ("pair", dst), 0)
        self.s.add_values(dst, (outer,))
        self.s.add_values(self.o.elems(outer), (row,))
        names = self.o.elems(row)

        def on(values):
            for v in values:
                if v[0] == "Pkg" and v[1]:
                    for text in self.submodules_of(v[1], recursive):
                        self.string(names, f"{v[1]}.{text}" if prefixed else text)
        self.s.watch(paths, on)

    def submodules_of(self, package: str, recursive: bool) -> list[str]:
        """The analysed modules and packages below ``package``, relative (``sub``, ``sub.inner``)."""
        head = package + "."
        found = {n[len(head):] for n in (*self.names.values(), *self.packages) if n.startswith(head)}
        return sorted(n for n in found if recursive or "." not in n)
