"""What classes a ``self`` field holds, for the value rounds (:mod:`.valueflow`).

``self.decoder.update(tokens, logits)`` runs the ``update`` of whatever ``__init__`` stored in
``self.decoder`` (``self.decoder = GreedyDecoder(...)`` on one branch, ``BeamSearchDecoder(...)`` on
the other; ``self.inference = inference`` with ``inference: Inference``). The points-to analysis
knows that at link time, but the value facts must reach the files' walks before it runs, so the
value rounds read the same stores from the summaries' flows directly: per class (and its bases),
every ``self.<field> = v`` whose ``v`` instantiates a class of the project (``Cls(...)``, either
arm of ``a if c else b``), is annotated with one (``self.x: Cls = ...``) or is a parameter
annotated with one. A store of anything else adds nothing (a field is then known only partly:
:mod:`.valueflow` joins what the classes found return, and a parameter learns nothing from a call
it cannot count). A field that keeps a module function (``self.run = kernel_fwd``; ``self.run(...)``
calls it with no receiver) is :meth:`FieldClasses.functions_of`'s: only where every store agrees.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.index import Index

ClassRef = tuple[ModuleInfo, str]


class FieldClasses:
    def __init__(self, index: Index):
        self.index = index
        self._memo: dict[tuple[str, str, str], list[tuple[ClassRef, bool]]] = {}
        #: path -> class -> [(its method's qualname, flow, field -> the values ``self.<field> = v`` stores)]
        self._stores: dict[str, dict[str, list[tuple[str, object, dict[str, list]]]]] = {}
        self._written: set[str] | None = None  # fields some code stores into on an object not ``self``
        self._kept: dict[tuple[str, str], set[str]] | None = None  # :meth:`kept_as`

    def of(self, info: ModuleInfo, cls: str, field: str) -> list[tuple[ClassRef, bool]]:
        """[(class, cone)] the field of ``cls`` may hold; ``cone``: an annotation (a subclass may be
        stored), else the class itself (``Cls(...)``)."""
        return self._memoized((info.path, cls, field), self._find, info, cls, field)

    def _memoized(self, key: tuple[str, str, str], find, info: ModuleInfo, cls: str, field: str):
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = find(info, cls, field)
        return found

    def methods(self, info: ModuleInfo, cls: str):
        """(module, method flow, its ``self.<field>`` stores) of ``cls`` and its bases, in MRO order."""
        for owner_info, owner in self.index.mro((info, cls)):
            for _, flow, by_field in self._class_stores(owner_info).get(owner, ()):
                yield owner_info, flow, by_field

    def _find(self, info: ModuleInfo, cls: str, field: str) -> list[tuple[ClassRef, bool]]:
        out: dict[tuple[str, str], tuple[ClassRef, bool]] = {}
        for owner_info, flow, by_field in self.methods(info, cls):
            stores = by_field.get(field)
            if not stores:
                continue
            annotated = {st[1][1]: st[2] for st in flow.stmts if st[0] == "=" and st[1][0] == "n"
                         and st[2] is not None and st[2][0] == "t"}
            for value in stores:
                self.classes_in(value, owner_info, annotated, out, 0)
        return list(out.values())

    def functions_of(self, info: ModuleInfo, cls: str, field: str) -> list[ClassRef]:
        """The module functions ``self.<field>`` holds, where every store of the field is one
        (``self.decode_fwd = decode_fwd``): in ``cls``, its bases and its subclasses, a module-level
        name of the storing file that is no local or parameter of the storing method and names a
        function of the project. Nothing -- the call stays unresolved, and what it passes unknown --
        where any store is something else, the class body binds the name (a method then), ``obj.<field> = v``
        or a ``setattr`` stores it anywhere, or a ``setattr(self, name, v)`` in one of those classes."""
        return self._memoized((info.path, cls, "()" + field), self._find_functions, info, cls, field)

    def _find_functions(self, info: ModuleInfo, cls: str, field: str) -> list[ClassRef]:
        if self._stored_elsewhere(field):
            return []
        out: dict[tuple[str, str], ClassRef] = {}
        family = [*self.index.mro((info, cls)), *self.index.subclasses((info, cls))]
        for owner_info, owner in family:
            body = owner_info.flows.get(owner)
            if f"{owner}:*" in owner_info.attr_writes or body is not None and field in body.locals:
                return []
            for _, flow, by_field in self._class_stores(owner_info).get(owner, ()):
                for value in by_field.get(field, ()):
                    hit = self._function(owner_info, flow, value)
                    if hit is None:
                        return []
                    out[(hit[0].path, hit[1])] = hit
        return [out[k] for k in sorted(out)]

    def _stored_elsewhere(self, field: str) -> bool:
        """Some code stores ``field`` on an object not ``self`` (``obj.<field> = v``): its stores in the class say not all."""
        if self._written is None:
            self._written = {w for i in self.index.infos for w in i.attr_writes if ":" not in w}
        return field in self._written

    def library_only(self, info: ModuleInfo, cls: str, field: str) -> bool:
        """Every store of ``self.<field>`` in ``cls``, its bases and its subclasses builds an object
        of an imported library (``self.attn = flashinfer.Wrapper(...)``), and no code stores the field
        on another object: a call of its method runs library code, never a project function of the name."""
        if self._stored_elsewhere(field):
            return False
        stores = [(owner_info, value) for owner_info, owner in [*self.index.mro((info, cls)),
                                                                *self.index.subclasses((info, cls))]
                  for _, _, by_field in self._class_stores(owner_info).get(owner, ())
                  for value in by_field.get(field, ())]
        return bool(stores) and all(self._library_call(owner_info, value) for owner_info, value in stores)

    def _library_call(self, info: ModuleInfo, ir) -> bool:
        """``mod.Cls(...)`` with ``mod`` an import no project module answers."""
        if type(ir) is not tuple or ir[0] != "c" or ir[1][0] != "a":
            return False
        root = ir[1]
        while root[0] == "a":
            root = root[1]
        if root[0] != "n" or root[1] not in info.imports or root[1] in info.classes:
            return False
        dotted = info.imports[root[1]]
        return not dotted.startswith(".") and dotted.partition(".")[0] not in self.index.tops \
            and self.index.find_module(dotted) is None and self.index.resolve(info, dotted) is None

    def kept_as(self) -> dict[tuple[str, str], set[str]]:
        """(path, function) -> the field names some code stores the module function into
        (``self.run = kernel_fwd``, ``obj.run = kernel_fwd``): it is called under those names too, so
        what its calls pass is known only where every call spelled so is resolved (:mod:`.paramkinds`)."""
        if self._kept is None:
            self._kept = {}
            for info in self.index.infos:
                for flow in info.flows.values():
                    for st in flow.stmts:
                        target = st[1] if st[0] == "=" else None
                        if type(target) is tuple and len(target) == 3 and target[0] == "a" \
                                and (hit := self._function(info, flow, st[2])) is not None:
                            self._kept.setdefault((hit[0].path, hit[1]), set()).add(target[2])
        return self._kept

    def _function(self, info: ModuleInfo, flow, value) -> ClassRef | None:
        """The project function a stored ``("n", name)`` names at module level, else None."""
        if value is None or value[0] != "n" or value[1] in flow.locals or value[1] in flow.params:
            return None
        name = value[1]
        if name in info.functions and not info.functions[name].cls:
            return info, name
        if name not in info.imports:
            return None
        hit = self.index.resolve(info, info.imports[name])
        return (hit[1], hit[2]) if hit is not None and hit[0] == "function" else None

    def elements_of(self, info: ModuleInfo, cls: str, field: str) -> list[tuple[ClassRef, bool]]:
        """[(class, False)] the elements of a list or dict field may be: what ``append``/``insert`` put in
        it, directly (``self.layers.append(Block())``) or into the local it is then given
        (``layers = []; layers.append(Embed()); ...; self.layers = layers``) -- a layer list an
        offloading engine indexes per layer (``self.layers[j].forward(...)``) -- and what a keyed store
        puts in it (``self.wrappers[bs] = Wrapper(...)``, one object per captured batch size)."""
        return self._memoized((info.path, cls, "[]" + field), self._find_elements, info, cls, field)

    def _find_elements(self, info: ModuleInfo, cls: str, field: str) -> list[tuple[ClassRef, bool]]:
        out: dict[tuple[str, str], tuple[ClassRef, bool]] = {}
        target = ("a", ("n", "self"), field)
        for owner_info, flow, by_field in self.methods(info, cls):
            # the field, and the locals a method stores into it (``self.layers = layers``)
            holders = {target} | {v for v in by_field.get(field, ()) if v is not None and v[0] == "n"}
            for st in flow.stmts:
                if st[0] == "=" and type(st[1]) is tuple and st[1][0] == "s" and st[1][1] in holders:
                    self.classes_in(st[2], owner_info, {}, out, 0)  # ``self.wrappers[bs] = Wrapper(...)``
                    continue
                call = st[1] if st[0] == "e" else None
                if call is None or call[0] != "c" or call[1][0] != "a" or call[1][1] not in holders \
                        or call[1][2] not in ("append", "insert") or not call[2]:
                    continue
                self.classes_in(call[2][-1], owner_info, {}, out, 0)
        return [(ref, False) for ref, _ in out.values()]

    def stores_of(self, info: ModuleInfo, cls: str, field: str) -> list[tuple[str, object]]:
        """[(method qualname, v)] of every ``self.<field> = v`` in the methods ``cls`` itself defines in
        ``info`` (not its bases), in the order of the flows and their statements (:mod:`.receivers`)."""
        return [(name, value) for name, _, by_field in self._class_stores(info).get(cls, ())
                for value in by_field.get(field, ())]

    def _class_stores(self, info: ModuleInfo) -> dict[str, list[tuple[str, object, dict[str, list]]]]:
        """A module's methods by class, each (qualname, flow, its ``self.<field> = v`` stores by field),
        read once per module (asked per field, the module's flows were scanned again for every field of
        every class); a method that stores no field is listed too (its ``self.layers.append(...)``:
        :meth:`elements_of`)."""
        table = self._stores.get(info.path)
        if table is None:
            table = self._stores[info.path] = {}
            for name, flow in info.flows.items():
                if flow.kind != "function" or not flow.cls:
                    continue
                by_field: dict[str, list] = {}
                for st in flow.stmts:
                    target = st[1] if st[0] == "=" else None
                    if type(target) is tuple and len(target) == 3 and target[0] == "a" and target[1] == ("n", "self"):
                        by_field.setdefault(target[2], []).append(st[2])
                table.setdefault(flow.cls, []).append((name, flow, by_field))
        return table

    def classes_in(self, ir, info: ModuleInfo, annotated: dict, out: dict, depth: int) -> None:
        if ir is None or depth > 3:
            return
        tag = ir[0]
        if tag == "o":
            for alt in ir[1]:
                self.classes_in(alt, info, annotated, out, depth + 1)
        elif tag == "n" and ir[1] in annotated:
            self.classes_in(annotated[ir[1]], info, annotated, out, depth + 1)
        elif tag in ("c", "t"):
            ref = self._class(info, ir[1])
            if ref is not None:
                out.setdefault((ref[0].path, ref[1]), (ref, tag == "t"))

    def class_of(self, info: ModuleInfo, ir) -> ClassRef | None:
        """The project class a flow IR class expression names (a parameter's annotation too)."""
        return self._class(info, ir)

    def _class(self, info: ModuleInfo, ir) -> ClassRef | None:
        """``("n", "Cls")`` / ``("a", ("n", "mod"), "Cls")`` -> the project class it names."""
        parts = []
        while ir[0] == "a":
            parts.append(ir[2])
            ir = ir[1]
        if ir[0] == "k":  # a class of this file
            return (info, ir[1]) if not parts and ir[1] in info.classes else None
        if ir[0] != "n":
            return None
        dotted = ".".join((ir[1], *reversed(parts)))
        if dotted in info.classes:
            return info, dotted
        root, _, rest = dotted.partition(".")
        if root not in info.imports:
            return None
        try:
            return self.index.class_ref(info, ("dotted", f"{info.imports[root]}.{rest}" if rest else info.imports[root]))
        except RecursionError:
            return None
