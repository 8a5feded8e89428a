"""Which project classes a local's objects are, read from the flow IR, for field facts (:mod:`.fieldkinds`).

``r = rows[0]`` where ``rows`` is what a ``for`` over ``engine.complete(...)`` binds, ``complete``
yields what it iterates from ``self.generate(...)``, and ``generate`` yields a list it appended
``Rec(...)`` to: ``r`` is a ``Rec``. The points-to analysis knows that at link time; the value
rounds run before it, so this follows the same statements (:mod:`.flows`) on demand, with an element
depth ``k`` (``k`` = 1: the elements of the value; iterating a generator gives what it yields):

- a name: every binding of it in its scope, and (for elements) what ``.append``/``.insert`` put in it;
  a parameter only through its annotation, and an annotated local (``child: Node = d[k]``) by it too; a module global (one the function neither binds nor
  takes, or declares ``global``): every binding of it at module level and in the functions that
  declare it ``global``, through an import to the module that binds it (``g_ctx = Ctx()`` in one
  file, ``g_ctx.cache.lookup(...)`` in another);
- a field ``obj.f`` (``self.backend.cache``): for each class ``obj`` may be, every ``self.f = v`` in
  the class, its bases and its subclasses (an annotated receiver may be a subclass), each ``v`` known
  (``Cls(...) if c else None``, an annotated parameter, a local of that method); a field no method
  stores (a class attribute, one set only from outside) is unknown;
- a call: a class's instance; a generator's yields (as elements); a function's returns;
- a list display's elements; ``a if c else b``; ``x[i]`` / ``for v in x`` (one level deeper).

Anything else (a parameter nothing annotates, a closure's name, a library call, a generator whose yields sit
outside any loop, which the summaries do not mark) is unknown, and unknown anywhere is unknown in
all: a field fact needs every object the name may hold.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.fieldclasses import FieldClasses
from graphlint.static.flowir import EXTERNAL_ROOTS
from graphlint.static.index import Index
from graphlint.static.paramkinds import resolve_function

ClassRef = tuple[ModuleInfo, str]
Found = dict | None  # (path, class qualname) -> ClassRef; None: unknown
MAX_DEPTH = 10
APPENDS = ("append", "insert")


class Receivers:
    def __init__(self, index: Index, fields: FieldClasses):
        self.index, self.fields = index, fields
        self.memo: dict[tuple, Found] = {}

    def of_name(self, info: ModuleInfo, qualname: str, name: str) -> list[ClassRef]:
        """``name`` in scope ``qualname``; ``rows[]``: an element of ``rows`` (a comprehension's target)."""
        base = name.rstrip("[]")
        found = self.values(info, qualname, ("n", base), (len(name) - len(base)) // 2, 0)
        return list(found.values()) if found else []

    def values(self, info: ModuleInfo, qualname: str, ir, k: int, depth: int) -> Found:
        """The classes of the objects ``k`` element levels inside what ``ir`` (in scope ``qualname``) holds."""
        if ir is None:
            return {}  # a literal or arithmetic: no object of a class
        if depth > MAX_DEPTH or type(ir) is not tuple or not ir:
            return None
        key = (info.path, qualname, ir, k)
        try:
            if key in self.memo:
                return self.memo[key]
        except TypeError:  # an IR holding a list: not memoized
            return self._values(info, qualname, ir, k, depth)
        self.memo[key] = None  # while computed: a cycle (``node = node.next``) is unknown
        found = self.memo[key] = self._values(info, qualname, ir, k, depth)
        return found

    def _values(self, info: ModuleInfo, qualname: str, ir, k: int, depth: int) -> Found:
        tag = ir[0]
        if tag == "s":
            return self.values(info, qualname, ir[1], k + 1, depth + 1)
        if tag == "o":
            return _union(self.values(info, qualname, alt, k, depth + 1) for alt in ir[1])
        if tag == "l":
            if k == 0 or any(type(e) is not tuple or e[:1] == ("*",) for e in ir[2]):
                return None
            return _union(self.values(info, qualname, e, k - 1, depth + 1) for e in ir[2])
        if tag == "t":
            ref = self.fields.class_of(info, ir[1]) if k == 0 else None
            return {(ref[0].path, ref[1]): ref} if ref is not None else None
        if tag == "n":
            return self._name(info, qualname, ir[1], k, depth)
        if tag == "c":
            return self._call(info, qualname, ir[1], k, depth)
        if tag in ("la", "da"):  # ``list[Node]`` / ``Dict[int, Node]``: its elements are what it says
            return self.values(info, qualname, ir[1], k - 1, depth + 1) if k else None
        if tag == "a":
            owners = self.values(info, qualname, ir[1], 0, depth + 1)
            if not owners:
                return None  # unknown, or only literals (``None.f`` holds nothing)
            return _union(self._field(ref, ir[2], k, depth) for ref in owners.values())
        if tag == "i":  # ``from .ctx import g_ctx`` at module level: the global of that module
            module, _, attr = self.index.absolute(info, ir[1]).rpartition(".")
            source = self.index.find_module(module) if module else None
            return self._global(source, attr, k, depth) if source is not None else None
        return None

    def _field(self, ref: ClassRef, field: str, k: int, depth: int) -> Found:
        """The classes ``self.<field>`` (``k`` element levels inside it) may hold in instances of
        ``ref`` (see the module docstring)."""
        owners = {(i.path, c): (i, c) for i, c in (*self.index.mro(ref), *self.index.subclasses(ref))}
        stores = []
        for owner, cls in owners.values():
            if self.index.find_method((owner, cls), field) is not None:
                return None  # a method or property of that name: not a stored object
            stores.extend((owner, name, value) for name, value in self.fields.stores_of(owner, cls, field))
        if k:  # its elements: only as its annotation says (``self.kids: Dict[int, Node] = {}``), as a
            # parameter's; the stores into it (``node.kids[t] = child``, appends) are not gathered
            stores = [s for s in stores if type(s[2]) is tuple and s[2][0] in ("la", "da")]
        parts = [self.values(owner, name, value, k, depth + 1) for owner, name, value in stores]
        return _union(parts) if parts else None

    def _global(self, module: ModuleInfo, name: str, k: int, depth: int) -> Found:
        """Every binding of the module global ``name``: at module level and in the functions that
        declare it ``global`` (None: none, a name the module does not bind); memoized per module."""
        key = (module.path, "<global>", name, k)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None  # while computed
        if module.imports.get(name, ".").split(".", 1)[0] in EXTERNAL_ROOTS:
            return None  # a library's module or name (``torch``): no project object
        parts = []
        for qualname, flow in module.flows.items():
            if qualname == "<module>" or flow.kind == "function" and name in flow.outer and name not in flow.enclosing:
                parts.extend(self.values(module, qualname, st[2], k, depth + 1)
                             for st in flow.stmts if st[0] == "=" and st[1] == ("n", name))
        found = self.memo[key] = _union(parts) if parts else None
        return found

    def _name(self, info: ModuleInfo, qualname: str, name: str, k: int, depth: int) -> Found:
        flow = info.flows.get(qualname)
        if flow is None:
            return None
        if name == "self" and flow.cls and k == 0:
            return {(info.path, flow.cls): (info, flow.cls)}
        if qualname != "<module>" and not flow.parent and (name in flow.outer or name not in flow.locals and name not in (
                *flow.params, *flow.kwonly, flow.vararg, flow.kwarg)):
            return self._global(info, name, k, depth)
        bound = [st[2] for st in flow.stmts if st[0] == "=" and st[1] == ("n", name)]
        if not bound:
            return None  # a parameter nothing annotates, a global, a closure's
        declared = [v for v in bound if type(v) is tuple and v[:1] == ("t",)]
        if declared and k == 0:
            bound = declared  # ``child: Node = node.children[i]``: the annotation says, as a parameter's does
        parts = [self.values(info, qualname, value, k, depth + 1) for value in bound]
        if k:
            target = ("a", ("n", name))
            for st in flow.stmts:
                call = st[1] if st[0] == "e" else None
                if call is not None and call[0] == "c" and call[1][:2] == target and call[1][2] in APPENDS and call[2]:
                    parts.append(self.values(info, qualname, call[2][-1], k - 1, depth + 1))
        return _union(parts)

    def _call(self, info: ModuleInfo, qualname: str, callee, k: int, depth: int) -> Found:
        ref = self.fields.class_of(info, callee)
        if ref is not None:
            return {(ref[0].path, ref[1]): ref} if k == 0 else None
        targets = self._callees(info, qualname, callee, depth)
        if not targets:
            return None
        parts = []
        for module, name in targets:
            fn, flow = module.functions.get(name), module.flows.get(name)
            if fn is None or flow is None:
                return None
            results = [st[1] for st in flow.stmts if st[0] == "r"]
            if not results:
                return None
            generator = bool(fn.yield_loops)
            if generator and k == 0:
                return None  # the generator object itself
            level = k - 1 if generator else k
            parts.extend(self.values(module, name, r, level, depth + 1) for r in results)
        return _union(parts)

    def _callees(self, info: ModuleInfo, qualname: str, callee, depth: int) -> list[tuple[ModuleInfo, str]]:
        """The functions a call's callee IR may name: a function, ``self.m``, ``obj.m`` with ``obj``'s
        classes known, ``Cls.m``."""
        if callee[0] == "a":
            base, method = callee[1], callee[2]
            owner = self.fields.class_of(info, base)
            if owner is not None:
                hit = self.index.find_method(owner, method)
                return [hit] if hit is not None else []
            classes = self.values(info, qualname, base, 0, depth + 1)
            if not classes:
                return []
            hits = [self.index.find_method(ref, method) for ref in classes.values()]
            return hits if all(h is not None for h in hits) else []
        fn = info.functions.get(qualname)
        hit = resolve_function(info, fn, callee, self.index) if fn is not None else None
        return [hit] if hit is not None else []


def _union(parts) -> Found:
    out: dict = {}
    for part in parts:
        if part is None:
            return None
        out.update(part)
    return out
