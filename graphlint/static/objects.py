"""What Python does with the points-to analysis's abstract values: attribute loads and stores,
elements of containers, and calls (those in :mod:`.valuecalls`, which :class:`Objects` inherits).

Values (tuples, see :mod:`.pointsto`):

- ``("F", path, qual)`` a function (or a method reached through its class: ``Cls.m``);
- ``("M", path, qual)`` a bound method (``self.m``, ``model.forward``): called with ``self`` filled;
- ``("C", path, cls)`` a class; ``("I", path, cls)`` an instance of exactly that class (``Cls()``);
- ``("S", path, cls)`` an instance of the class *or a subclass*: ``self`` in its methods, a
  parameter annotated with it. A method called on it runs the class's (inherited) method or any
  override; its fields are those of the class, its bases and its subclasses;
- ``("Mod", path)`` a module of the project, ``("Ns", name)`` a package without ``__init__``;
- ``("L", path, site, callable)`` a container made at ``site`` (list, tuple, dict, set,
  ``ModuleList``; ``callable`` for ``nn.Sequential``, which calls every element);
- ``("W", path, wrapper, value)`` a decorated function (``@deco def f``): the closure ``deco``
  returned (``wrapper``), which runs ``value`` (a function, a bound method, another ``W``);
- ``("Pa", value, n)`` ``functools.partial(value, <n positional arguments>)``, and
  ``types.MethodType(value, obj)`` (n = 1);
- ``("Sup", path, cls)`` ``super()`` in a method of ``cls``;
- ``("Gi", path, cls)`` the ``__init__`` ``@dataclass`` generated for ``cls`` (:mod:`.generated`);
- ``("Ct", path, cls)`` an alternate constructor ``cls`` inherits from a library base
  (``Llama.from_pretrained``, :mod:`.libctors`): calling it builds an instance of ``cls``;
- ``("X",)`` something from outside the project (what a library call returns, an instance of a
  library class, an attribute or element of one): calling it runs no project code, and a call
  site whose callee holds only it is *resolved* to the library, not a blind spot.

Calling an instance runs its ``forward`` (``nn.Module.__call__``) or else its ``__call__``;
calling a class makes an instance and runs its ``__init__``. An instance of a ``list``/``dict``
subclass keeps its elements in the field ``[]``.
"""

from __future__ import annotations

from typing import Callable

from graphlint.static.argbinding import Keywords
from graphlint.static.builtclasses import BuiltClasses
from graphlint.static.facts import ModuleInfo, ScopeFlow
from graphlint.static.generated import Generated
from graphlint.static.index import Index
from graphlint.static.libctors import LibraryCtors
from graphlint.static.libflows import DICT_METHODS, KEYED
from graphlint.static.patched import PATCHED, field_key
from graphlint.static.pointsto import Solver, Value
from graphlint.static.valuecalls import FOREIGN, ValueCalls

ELEMENTS = "[]"


class Objects(ValueCalls):
    def __init__(self, solver: Solver, index: Index, by_path: dict[str, ModuleInfo],
                 fields: dict[tuple[str, str], set[str]]):
        self.s, self.index, self.by_path = solver, index, by_path
        self.fields = fields  # (path, class) -> attributes its methods store on ``self``
        self.installed: set[tuple] = set()
        self._sources: dict[tuple, list[int]] = {}
        self._views: dict[tuple, int] = {}
        #: (path, class) -> its cone; ("sib", ...) its siblings; ("family", ...) a cone's MRO and subclasses
        self._subclasses: dict[tuple, set | list] = {}
        self.from_library: dict[tuple, bool] = {}  # (value, attribute) -> :meth:`inherited_from_library`
        #: attribute -> classes whose methods store it on ``self`` / whose body binds it
        self.stored: dict[str, list[tuple[str, str]]] = {}
        self.in_body: dict[str, list[tuple[str, str]]] = {}
        for cls, attrs in fields.items():
            for attr in attrs:
                self.stored.setdefault(attr, []).append(cls)
        for path, info in by_path.items():
            for qual, flow in info.flows.items():
                if flow.kind == "class":
                    for attr in flow.locals:
                        self.in_body.setdefault(attr, []).append((path, qual))
        self.made: set[tuple[str, str]] = set()  # (path, class) of every class called
        self.generated = Generated(index, self)  # dataclasses' __init__, metaclasses' __setattr__
        self.ctors = LibraryCtors(index)
        self.built = BuiltClasses(list(by_path.values()), index)  # the subclasses a cone may be
        self.keywords = Keywords(solver, self._elements_of)  # ``**kwargs`` by key (:mod:`.argbinding`)

    # -- nodes -------------------------------------------------------------------------------
    def flow(self, path: str, qual: str) -> ScopeFlow | None:
        info = self.by_path.get(path)
        return info.flows.get(qual) if info is not None else None

    def ret(self, path: str, qual: str) -> int:
        return self.s.node(("r", path, qual))

    def field(self, path: str, cls: str, attr: str) -> int:
        return self.s.node(("fd", path, cls, attr))

    def cattr(self, path: str, cls: str, attr: str) -> int:
        return self.s.node(("ca", path, cls, attr))

    def elems(self, container: Value) -> int:
        return self.s.node(("el", container[1], container[2]))

    def position(self, container: Value, index: int) -> int:
        """Element ``index`` of a tuple whose positions are known apart (``zip``'s, :meth:`.LibraryFlows.pairs`)."""
        return self.s.node(("at", container[2], index))

    def item(self, src: int, index: int, dst: int) -> None:
        """``a, b = src`` / ``for a, b in ...``: what position ``index`` holds -- its own node for a
        tuple that keeps positions apart, else any element (:meth:`elements`)."""
        self.s.watch(src, (Objects._item_of, self, index, dst))

    def _item_of(self, index: int, dst: int, values) -> None:
        rest = []
        for v in values:
            if v[0] == "L" and type(v[2]) is tuple and v[2][0] == "zip":
                self.s.edge(self.position(v, index), dst)
            else:
                rest.append(v)
        if rest:
            self._elements_of(dst, rest)

    def once(self, key: tuple) -> bool:
        """True the first time ``key`` is asked: each derived constraint is installed once."""
        if key in self.installed:
            return False
        self.installed.add(key)
        return True

    # -- the class hierarchy -------------------------------------------------------------------
    def ref(self, value: Value):
        return (self.by_path[value[1]], value[2])

    def family(self, value: Value) -> list:
        """The classes whose members an instance may use: its MRO, and for a cone its subclasses.
        Shared lists (the index's MRO, a cone's list made once): callers only read them."""
        ref = self.ref(value)
        if value[0] != "S":
            return self.index.mro(ref)
        key = ("family", value[1], value[2])
        found = self._subclasses.get(key)
        if found is None:
            found = self._subclasses[key] = [*self.index.mro(ref), *self.built.cone(ref)]
        return found

    def class_attr(self, classes: list, attr: str) -> list[tuple[str, str]]:
        """(path, class) of the first class in ``classes`` whose body binds ``attr``."""
        for info, name in classes:
            flow = info.flows.get(name)
            if flow is not None and attr in flow.locals:
                return [(info.path, name)]
        return []

    # -- loads and stores ----------------------------------------------------------------------
    def load(self, obj: int, attr: str, dst: int) -> None:
        self.s.watch(obj, (Objects._load_values, self, attr, dst))

    def _load_values(self, attr: str, dst: int, values) -> None:
        for v in values:
            self.load_value(v, attr, dst)

    def load_value(self, v: Value, attr: str, dst: int) -> None:
        tag = v[0]
        if tag in ("I", "S", "C", "Sup"):
            for src in self.sources(v, attr):
                self.s.edge(src, dst)
            if tag in ("I", "S") and self.inherited_from_library(v, attr):
                self.s.add_values(dst, (FOREIGN,))
            if tag == "C":
                bound = bool(self.class_attr(self.index.mro(self.ref(v)), attr))
                if attr == "remote" and not bound:  # an actor class: ``Worker.remote(...)`` makes one
                    self.s.add_values(dst, (v,))
                if self.ctors.is_ctor(self.ref(v), attr, bound):
                    self.s.add_values(dst, (("Ct", v[1], v[2]),))
                elif self.ctors.is_apply(self.ref(v), attr, bound):  # ``Fn.apply``: ``forward`` with ``ctx`` filled
                    hit = self.index.find_method(self.ref(v), "forward")
                    if hit is not None:
                        self.s.add_values(dst, (("M", hit[0].path, hit[1]),))
                        flow = self.flow(hit[0].path, hit[1])  # ``ctx``: the library's context object
                        if flow is not None and flow.params:
                            self.s.add_values(self.s.node(("v", hit[0].path, hit[1], flow.params[0])), (FOREIGN,))
        elif tag in ("Mod", "Ns"):
            self.module_attr(v, attr, dst)
        elif tag in ("F", "M", "W") and attr == "remote":  # an actor's ``handle.step.remote``: ``step``
            self.s.add_values(dst, (v,))
        elif tag == "X":  # an attribute of a library object is the library's too
            self.s.add_values(dst, (FOREIGN,))
        elif tag == PATCHED:  # what the project stored on an outside object (:mod:`.patched`)
            self.s.edge(self.s.node(field_key(v, attr)), dst)
        elif tag == "L" and type(v[2]) is tuple and v[2][0] == KEYED and attr not in DICT_METHODS:
            self.s.edge(self.elems(v), dst)  # ``self.transformer.h`` of an ``nn.ModuleDict``: an entry

    module_attr: Callable[[Value, str, int], None]  # set by the linker (it knows the modules)

    def inherited_from_library(self, v: Value, attr: str) -> bool:
        """Whether ``obj.attr`` of an instance can only be what a library base gives it: its class
        derives from a class imported from outside the project, and no class of its family binds or
        stores ``attr`` (``ctx.save_for_backward`` in a ``torch.autograd.Function``, a model's
        ``self.loss_function`` from ``PreTrainedModel``) -- the library's code, not a blind spot."""
        if attr.startswith("__") or not self.ctors.library_base(self.ref(v)):
            return False
        key = (v, attr)  # asked for every load of every instance reaching it: the facts it reads are fixed
        found = self.from_library.get(key)
        if found is None:
            family = self.family(v)
            stored = self.stored.get(attr, ())
            found = self.from_library[key] = not self.class_attr(family, attr) and not any(
                (info.path, name) in stored for info, name in family)
        return found

    def sources(self, v: Value, attr: str) -> list[int]:
        """The nodes ``v.attr`` reads (cached per value and attribute): instance fields along the
        MRO (and, for a cone, the subclasses that store it), and the first class attribute found,
        seen through the instance (functions bound)."""
        key = (v, attr)
        found = self._sources.get(key)
        if found is not None:
            return found
        found = []
        tag = v[0]
        mro = self.index.mro(self.ref(v))
        if tag in ("I", "S"):
            found.extend(self.field(info.path, name, attr) for info, name in mro)
            owners = self.class_attr(mro, attr)
            if tag == "S":
                family = self.subclass_set(v) | self.siblings(v)
                found.extend(self.field(*c, attr) for c in self.stored.get(attr, ()) if c in family)
                owners.extend(c for c in self.in_body.get(attr, ()) if c in family)
            found.extend(self.bound_view(self.cattr(path, name, attr), True) for path, name in owners)
        elif tag == "C":
            # a class attribute no class body binds is one stored from outside (``Backend.executor =
            # Executor.build(args)`` at start-up, read as ``Backend.executor.step()``): any class of the MRO
            owners = self.class_attr(mro, attr) or [(info.path, name) for info, name in mro]
            found.extend(self.bound_view(self.cattr(p, n, attr), False) for p, n in owners)
        else:  # super(): the bases' members, bound to the same instance
            found.extend(self.bound_view(self.cattr(p, n, attr), True) for p, n in self.class_attr(mro[1:], attr))
        self._sources[key] = found
        return found

    def subclass_set(self, v: Value) -> set[tuple[str, str]]:
        key = (v[1], v[2])
        found = self._subclasses.get(key)
        if found is None:
            found = self._subclasses[key] = {(i.path, n) for i, n in self.built.cone(self.ref(v))}
        return found

    def siblings(self, v: Value) -> set[tuple[str, str]]:
        """The other bases of the class's subclasses: ``self`` in a mixin's method (``GenerationMixin``)
        is an instance of a class that also derives from a sibling base (``PreTrainedModel``), whose
        members ``self.is_remote_code()`` and ``self.config`` then are. Only classes outside the
        class's own MRO and cone: those are looked up already (cached per class)."""
        key = ("sib", v[1], v[2])
        found = self._subclasses.get(key)
        if found is None:
            own = {(i.path, n) for i, n in self.index.mro(self.ref(v))}
            cone = self.subclass_set(v)
            found = self._subclasses[key] = {(i.path, n) for sub in self.built.cone(self.ref(v))
                                             for i, n in self.index.mro(sub)} - own - cone
        return found

    def bound_view(self, src: int, via_instance: bool) -> int:
        """A class attribute read through an instance (``via_instance``) or its class: functions
        become bound methods, a property gives what its getter returns. One node per attribute
        and way of reading it, shared by every load."""
        key = (src, via_instance)
        view = self._views.get(key)
        if view is not None:
            return view
        view = self._views[key] = self.s.fresh()

        def on(values):
            out = []
            for v in values:
                if v[0] == "F":
                    flow = self.flow(v[1], v[2])
                    if flow is not None and flow.fkind == "p" and via_instance:
                        self.s.edge(self.ret(v[1], v[2]), view)
                        continue
                out.append(self.bound(v, via_instance))
            self.s.add_values(view, out)

        self.s.watch(src, on)
        return view

    def bound(self, v: Value, via_instance: bool) -> Value:
        """A function read from a class: a method bound to the instance, a classmethod to the class;
        a decorated one keeps its wrapper and binds what it wraps."""
        if v[0] == "W":
            return ("W", v[1], v[2], self.bound(v[3], via_instance))
        if v[0] == "F":
            flow = self.flow(v[1], v[2])
            kind = flow.fkind if flow is not None else ""
            if (kind == "m" and via_instance) or kind == "c":
                return ("M", v[1], v[2])
        return v

    def store(self, obj: int, attr: str, src: int) -> None:
        def on(values):
            for v in values:
                if v[0] in ("I", "S"):
                    self.s.edge(src, self.field(v[1], v[2], attr))
                elif v[0] == "C":
                    self.s.edge(src, self.cattr(v[1], v[2], attr))
                elif v[0] == "Mod":
                    self.s.edge(src, self.s.node(("v", v[1], "<module>", attr)))
                elif v[0] == PATCHED:
                    self.s.edge(src, self.s.node(field_key(v, attr)))
        self.s.watch(obj, on)

    def elements(self, src: int, dst: int) -> None:
        """``src[k]``, ``for x in src``: a container's elements; an instance's stored elements (a
        ``list``/``dict`` subclass) and what its class's ``__getitem__`` returns (a registry object), or its
        ``__next__`` (an iterator: ``next(it)``, ``for x in it``)."""
        self.s.watch(src, (Objects._elements_of, self, dst))

    def _elements_of(self, dst: int, values) -> None:
        for v in values:
            if v[0] == "L":
                self.s.edge(self.elems(v), dst)
            elif v[0] == "X":
                self.s.add_values(dst, (FOREIGN,))
            elif v[0] == "Sup":  # ``super().__getitem__(k)`` in a container subclass: what it holds
                for info, name in self.family(("S", v[1], v[2])):
                    self.s.edge(self.field(info.path, name, ELEMENTS), dst)
            elif v[0] in ("I", "S"):
                for info, name in self.index.mro(self.ref(v)):
                    self.s.edge(self.field(info.path, name, ELEMENTS), dst)
                getitem = self.index.find_method(self.ref(v), "__getitem__")
                if getitem is not None:
                    self.s.edge(self.ret(getitem[0].path, getitem[1]), dst)
                step = self.index.find_method(self.ref(v), "__next__")  # an iterator: ``next(it)``
                if step is not None:
                    self.s.edge(self.ret(step[0].path, step[1]), dst)

    def store_elements(self, obj: int, src: int) -> None:
        def on(values):
            for v in values:
                if v[0] == "L":
                    self.s.edge(src, self.elems(v))
                    if Keywords.owns(v):  # ``kwargs["x"] = v``: no key it is known by
                        self.s.edge(src, self.keywords.rest(v))
                elif v[0] in ("I", "S"):
                    self.s.edge(src, self.field(v[1], v[2], ELEMENTS))
        self.s.watch(obj, on)
