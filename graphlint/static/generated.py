"""Code Python writes itself: a dataclass's ``__init__``, and what a metaclass's ``__setattr__``
puts in its place.

``@dataclass`` gives a class an ``__init__`` no file holds: it stores every field on ``self`` (so
the class's ``__setattr__`` runs, if the class or a base defines one) and then calls
``__post_init__``. The decorator installs it with ``setattr(cls, "__init__", init)``, which runs
the metaclass's ``__setattr__`` when one is defined: a library can wrap every generated
``__init__`` of its output classes that way (to rename deprecated keyword arguments), and that
wrapper then runs on every construction -- per decode step, for a model's output. Modelled as:

- the value ``("Gi", path, cls)``, the generated ``__init__`` of the dataclass ``cls``: calling it
  runs the ``__setattr__`` and ``__post_init__`` found along the class's MRO (with no arguments
  bound: the fields are stored one by one);
- which ``__init__`` calling a class runs is the first found along its MRO: a class's own def, or
  a dataclass's generated one (a dataclass subclass of a class with an ``__init__`` replaces it);
- a dataclass whose metaclass (the first ``metaclass=`` along its MRO) defines ``__setattr__(cls,
  name, value)``: that method is bound once with (the class, ``"__init__"``, the generated init),
  and what it stores -- the value argument of its ``super().__setattr__(name, v)`` (or
  ``type.__setattr__``, ``setattr``), else its ``value`` parameter: the generated init or a
  wrapper closure around it -- is the class's ``__init__`` attribute. Calling the class calls
  those with the new instance and the call's arguments. The method is shared by every dataclass
  of that metaclass (so those nodes take the wide cap); each class's attribute takes the
  wrapper and its own generated ``__init__`` only.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.index import Index
from graphlint.static.pointsto import WIDE_CAP

FuncId = tuple[str, str]


class Generated:
    def __init__(self, index: Index, objects):
        self.index, self.o, self.s = index, objects, objects.s
        #: (path, dataclass) -> the node of its ``__init__`` class attribute, set by a metaclass
        self.hooked: dict[tuple[str, str], int] = {}
        self._init: dict[tuple[str, str], tuple | None] = {}

    def init_of(self, ref) -> tuple | None:
        """What calling the class runs as ``__init__``: (path, qualname) of a def, ``("Gi", path,
        dataclass)`` for a generated one, None when no analysed class has one."""
        key = (ref[0].path, ref[1])
        if key not in self._init:
            found = None
            for info, name in self.index.mro(ref):
                cls = info.classes[name]
                if "__init__" in cls.methods:
                    found = (info.path, f"{name}.__init__")
                    break
                if cls.dataclass:
                    found = ("Gi", info.path, name)
                    break
            self._init[key] = found
        return self._init[key]

    def library_init(self, made: tuple, args: tuple, kws: tuple) -> None:
        """A class with no ``__init__`` of the project is built by a library's: a ``dict``/``list``
        subclass (``Registry({"swish": Swish})``) holds its arguments' elements and keyword values.
        A dataclass's arguments are its fields, not elements (:meth:`store_fields`)."""
        init = self.init_of(self.o.ref(made))
        if init is not None:
            if init[0] == "Gi":
                self.store_fields(made, args, kws)
            return
        target = self.o.field(made[1], made[2], "[]")  # objects.ELEMENTS
        for arg in args:
            self.o.elements(arg[1] if type(arg) is tuple else arg, target)
        for name, node in kws:
            (self.o.elements if name == "**" else self.s.edge)(node, target)

    def store_fields(self, made: tuple, args: tuple, kws: tuple) -> None:
        """``Recipe(modules={...}, fusion=identity)``: the generated ``__init__`` stores each keyword
        argument in the field of its name (``recipe.fusion(...)`` then runs ``identity``), and each
        positional one in the field of its place (``Spec("llama", "pkg.llama:Llama")``): the fields
        of the dataclass bases first (last base first, as ``dataclasses`` orders them), then the
        class's own; nothing after a ``*args``, whose length is unknown."""
        order: list[str] = []
        for info, name in reversed(self.index.mro(self.o.ref(made))):
            order.extend(f for f in info.classes[name].fields if f not in order)
        for name, node in zip(order, args):
            if type(node) is not int:
                break
            self.s.edge(node, self.o.field(made[1], made[2], name))
        for name, node in kws:
            if name != "**":
                self.s.edge(node, self.o.field(made[1], made[2], name))

    def runs(self, value: tuple) -> list[FuncId]:
        """What the generated ``__init__`` ``value`` calls: ``__setattr__`` and ``__post_init__``."""
        ref = self.o.ref(value)
        found = []
        for method in ("__setattr__", "__post_init__"):
            hit = self.index.find_method(ref, method)
            if hit is not None:
                found.append((hit[0].path, hit[1]))
        return found

    def install(self, infos: list[ModuleInfo], evaluate) -> None:
        """Bind each dataclass's metaclass ``__setattr__`` to the generated ``__init__`` it receives;
        ``evaluate(path, scope, ir)`` is the linker's (a node for an expression of a scope)."""
        for info in infos:
            for name, cls in info.classes.items():
                if cls.dataclass:
                    self._hook(info, name, evaluate)

    def _hook(self, info: ModuleInfo, name: str, evaluate) -> None:
        meta = self.metaclass((info, name))
        setter = self.index.find_method(meta, "__setattr__") if meta is not None else None
        flow = self.o.flow(setter[0].path, setter[1]) if setter is not None else None
        if flow is None or len(flow.params) < 3:
            return
        path, qual = setter[0].path, setter[1]
        var = lambda param: self.s.node(("v", path, qual, param))  # noqa: E731
        cls_param, name_param, value_param = flow.params[:3]
        self.s.add_values(var(cls_param), (("C", info.path, name),))
        self.s.add_values(var(name_param), (("Str", "__init__"),))
        value = var(value_param)
        self.s.caps[value] = WIDE_CAP  # one generated __init__ per dataclass
        mine = ("Gi", info.path, name)
        self.s.add_values(value, (mine,))
        node = self.hooked[(info.path, name)] = self.o.cattr(info.path, name, "__init__")
        stored = [evaluate(path, qual, ir) for ir in stored_values(flow)] or [value]
        for src in stored:  # the class's own generated __init__ and what the method makes of it
            self.s.caps[src] = WIDE_CAP
            self.s.watch(src, lambda values: self.s.add_values(
                node, [v for v in values if v[0] != "Gi" or v == mine]))

    def metaclass(self, ref):
        """The class of the first ``metaclass=`` along the MRO that names an analysed class."""
        for info, name in self.index.mro(ref):
            desc = info.classes[name].metaclass
            if desc is not None:
                return self.index.class_ref(info, desc)
        return None

    def hook_of(self, value: tuple) -> int | None:
        """The node of the metaclass-installed ``__init__`` calling the class ``value`` runs, if any."""
        init = self.init_of(self.o.ref(value))
        return self.hooked.get((init[1], init[2])) if init is not None and init[0] == "Gi" else None


def stored_values(flow) -> list[tuple]:
    """What a ``__setattr__`` stores: the value argument of its ``super().__setattr__(name, v)``,
    ``type.__setattr__(cls, name, v)`` or ``setattr(cls, name, v)`` calls."""
    found = []
    for stmt in flow.stmts:
        call = stmt[1] if stmt[0] == "e" else None
        if call is None or call[0] != "c" or not call[2]:
            continue
        func, args = call[1], call[2]
        base = func[1] if func[0] == "a" and func[2] == "__setattr__" else None
        if (base is not None and (base[0] == "sup" or base in (("n", "type"), ("n", "object")))) or (
                func == ("n", "setattr") and len(args) == 3):
            if args[-1] is not None and args[-1][0] != "*":
                found.append(args[-1])
    return found
