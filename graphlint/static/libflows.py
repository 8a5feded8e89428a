"""How the project's values flow through library calls and containers, for :mod:`.flowlink`.

Outside the project everything is opaque (its results hold nothing) except the calls values flow
through: ``functools.partial``, ``torch.compile`` and ``make_graphed_callables`` (return their
argument; ``copy.deepcopy`` too: a clone is of its original's class, so the layers of
``nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])`` run the layer's forward), the builtins
that copy or pair a container (``list``, ``tuple``, ``dict``, ``sorted``,
``enumerate``, ``zip``, ``iter``, ``next``), ``type(x)``, ``nn.ModuleList``/``ModuleDict``/
``Sequential``, the container methods (``append``, ``extend``, ``update``, ``setdefault``, ``get``,
``pop``, ``values``, ``items``...), ``getattr`` with a computed name, and the ``nn.Module`` methods
that call a function later (:data:`MODULE_METHODS`: ``apply``, the forward hooks). A mixin of
:class:`graphlint.static.flowlink.Linker`: it uses the linker's solver ``s``, objects ``o`` and
implicit calls ``implicit``.
"""

from __future__ import annotations

from typing import Any

from graphlint.static.bindings import MODULE_SELF_METHODS
from graphlint.static.classpaths import BY_STRING, DYNAMIC_IMPORTS, path_like

#: calls that return (a wrapper of) their first argument
PASS_THROUGH = frozenset(("torch.compile", "torch.jit.script", "torch.cuda.make_graphed_callables",
                          "torch.cuda.graphs.make_graphed_callables", "functools.lru_cache", "functools.cache",
                          "builtins.staticmethod", "builtins.classmethod", "builtins.property",
                          "copy.deepcopy"))
PARTIAL = "functools.partial"


def library_partial(name: str) -> bool:
    """Whether a library's dotted ``name`` is a ``partial`` (``funcy.partial``, ``toolz.partial``): the
    helper libraries re-export or mirror functools.partial, so a loader bound through one
    (``load = funcy.partial(_load_model, kind=k)``) is followed like the standard one."""
    return name != PARTIAL and name.rsplit(".", 1)[-1] == "partial"


#: calls that make a container holding the elements of their arguments
COPIES = frozenset(("builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset", "builtins.sorted",
                    "builtins.reversed", "builtins.iter", "builtins.dict",
                    "collections.OrderedDict", "collections.deque"))
#: the site tag of an ``nn.ModuleDict`` (``("L", "", (KEYED, node), 0)``): its entries are its attributes too
KEYED = "keyed"
#: what an attribute of a ``ModuleDict`` names when it is no entry: its methods (``.items()``, ``.update()``)
DICT_METHODS = frozenset(n for n in dir(dict) if not n.startswith("_")) | {
    "add_module", "register_module", "children", "modules", "named_children", "named_modules", "parameters",
    "named_parameters", "buffers", "named_buffers", "apply", "to", "cuda", "cpu", "eval", "train", "state_dict",
    "load_state_dict", "forward", "training"}
MODULE_CONTAINERS = frozenset(("ModuleList", "ModuleDict", "ParameterList", "ParameterDict"))
#: container methods: "store" puts the last argument in, "extend" its elements, "get" reads an
#: element, "same" returns the container (its view: ``.values()``), "pairs" its (key, value) tuples
CONTAINER_METHODS = {"append": "store", "add": "store", "insert": "store", "appendleft": "store",
                     "extend": "extend", "update": "extend", "setdefault": "store-get", "get": "get", "pop": "get",
                     "popitem": "get", "popleft": "get", "values": "same", "items": "pairs", "keys": "same",
                     "copy": "same", "__getitem__": "get"}

#: ``nn.Module`` methods a project module inherits that take a function and call it: ``m.apply(fn)``
#: calls ``fn`` on ``m`` and every sub-module (now); a forward hook or pre-hook runs on every later
#: call of ``m`` (its ``forward`` runs it: :meth:`.implicit.Implicit.module_hook`)
MODULE_METHODS = frozenset(("apply", "register_forward_hook", "register_forward_pre_hook"))
#: methods that return their receiver: the ``nn.Module`` ones a project module inherits
#: (``return model.eval()`` is the model), and an actor class's ``options(...)`` (Ray's
#: ``Worker.options(num_gpus=1)`` is still the actor class). Only where no class of the receiver's
#: family binds the name (a project's own ``to()`` is an ordinary call).
SELF_RETURNING = MODULE_SELF_METHODS | {"options"}
#: a function handed to a pool or a thread, with the arguments it will be called with:
#: ``executor.submit(fn, *args)`` (receiver a library object), ``loop.run_in_executor(ex, fn, *args)``
#: -- :meth:`LibraryFlows.task_method`; ``threading.Thread(target=fn, args=(...), kwargs={...})`` and
#: the ``Process`` likes -- :data:`THREAD_STARTS`. The arguments reach ``fn``'s parameters (a worker
#: loop started with ``args=(runner, queue)`` resolves ``runner.run(...)``).
TASK_METHODS = frozenset(("submit", "run_in_executor", "apply_async"))
THREAD_STARTS = frozenset(("threading.Thread", "threading.Timer", "multiprocessing.Process",
                           "torch.multiprocessing.Process"))
#: a library's registry (``fms.models.register_model(arch, variant, factory)``, ``AutoModel.register(cfg,
#: Model)``): what the project registers with a library module, that module's loaders build
#: (``fms.models.get_model(arch, ...)`` calls a registered factory) -- :meth:`LibraryFlows.registry`
REGISTERS = ("register",)
LOADERS = ("get_", "load", "build", "create", "make", "from_", "instantiate")
#: a library's layer factory (sglang's and vLLM's ``make_layers(n, lambda idx, prefix: Block(...))``):
#: it calls the builder it is handed, and returns what it built -- a list, or a tuple holding one
#: (``layers, start, end = make_layers(...)``) -- :meth:`LibraryFlows.built_by`
FACTORIES = ("make", "build", "create")
#: what a factory's builder may be: a function, a bound method, a class, a partial, a decorated function
BUILDERS = frozenset(("F", "M", "C", "Pa", "W", "Ct"))
#: an attribute of a project function, bound method or class no class binds: an actor framework's
#: handle (Ray: ``Worker.remote(...)`` makes the actor, ``handle.step.remote(x)`` runs ``step(x)``)
REMOTE = "remote"


class LibraryFlows:
    s: Any  # graphlint.static.pointsto.Solver
    o: Any  # graphlint.static.objects.Objects
    implicit: Any  # graphlint.static.implicit.Implicit

    def library_call(self, name: str, args: tuple, kws: tuple, dst: int) -> None:
        plain = [a for a in args if type(a) is int]
        last = name.rsplit(".", 1)[-1]
        if "." in name and last.startswith(REGISTERS + LOADERS) and self.foreign(name):
            self.registry(name, plain, kws, dst)
        container = ("L", "", ("call", dst), 0)
        if "." in name and last.startswith(FACTORIES) and len(plain) > 1 and self.foreign(name):
            self.built_by(plain, dst)
        if name in PASS_THROUGH and plain:
            self.s.edge(plain[0], dst)
        elif name == "types.MethodType" and plain:  # ``types.MethodType(fn, module)``: ``fn`` bound to it
            self.s.watch(plain[0], lambda values: self.s.add_values(dst, [("Pa", v, 1) for v in values]))
            self.o.call(plain[0], args[1:2], (), None)
        elif (name.startswith("torch.nn") and last == "ModuleDict") or name == "types.SimpleNamespace":
            # entries by key and by attribute; ``SimpleNamespace(run=f, step=g)``: its keywords are its attributes
            keyed = ("L", "", (KEYED, dst), 0)
            self.s.add_values(dst, (keyed,))
            for arg in plain:
                self.o.elements(arg, self.o.elems(keyed))
            for _, node in kws:
                self.s.edge(node, self.o.elems(keyed))
        elif name == PARTIAL and plain:
            bound = len(args) - 1
            self.s.watch(plain[0], lambda values: self.s.add_values(dst, [("Pa", v, bound) for v in values]))
            self.o.call(plain[0], args[1:], kws, None)
        elif name == "collections.defaultdict" and args and type(args[0]) is int:
            # ``defaultdict(LayerWeights)``: ``d[k]`` of a missing key stores what calling the factory makes
            self.s.add_values(dst, (container,))
            self.o.call(args[0], (), (), self.o.elems(container))
            for arg in args[1:]:  # ``defaultdict(f, mapping)``: the mapping's entries too
                self.o.elements(arg[1] if type(arg) is tuple else arg, self.o.elems(container))
        elif name in ("builtins.enumerate", "builtins.zip"):
            starred = any(type(a) is tuple for a in args)  # ``zip(*rows)``: which source is where, unknown
            first = None if starred or kws else 1 if name == "builtins.enumerate" else 0
            self.pairs(dst, [a[1] if type(a) is tuple else a for a in args], first)
        elif (name in COPIES or (name.startswith("torch.nn") and last in MODULE_CONTAINERS)) \
                and len(plain) == 1 and len(args) == 1 and not kws:
            self.s.edge(plain[0], dst)  # ``list(xs)``, ``nn.ModuleList(layers)``: the same elements (one
            # container for both: a store into the copy reaches the original, which costs no call edge)
        elif name in COPIES or (name.startswith("torch.nn") and last in MODULE_CONTAINERS):
            self.s.add_values(dst, (container,))
            for arg in args:
                self.o.elements(arg[1] if type(arg) is tuple else arg, self.o.elems(container))
            for _, node in kws:
                self.s.edge(node, self.o.elems(container))
        elif name.startswith("torch.nn") and last == "Sequential":
            container = ("L", "", ("call", dst), 1)
            self.s.add_values(dst, (container,))
            for arg in args:
                if type(arg) is tuple:
                    self.o.elements(arg[1], self.o.elems(container))
                else:
                    self.s.edge(arg, self.o.elems(container))
        elif name in THREAD_STARTS:
            self.thread_start(name, args, kws)
        elif name in DYNAMIC_IMPORTS and plain:  # imported by a computed name (:mod:`.classpaths`)
            self.dynamic_import(plain[0], dst)
        elif name == "builtins.next" and plain:
            self.o.elements(plain[0], dst)
        elif name == "builtins.type" and plain:
            self.s.watch(plain[0], lambda values: self.s.add_values(
                dst, [("C", v[1], v[2]) for v in values if v[0] in ("I", "S")]))

    def registry(self, name: str, plain: list, kws: tuple, dst: int) -> None:
        """A library module's registry, one per module (``fms.models``): a ``register*`` call puts
        its arguments in, a loader of the same module (``get_*``, ``load*``, ``build*``, ``from_*``...)
        returns what calling them builds -- a registered class's instance, a factory's result. Keys
        are not compared (flow-insensitive, as project registries: ``REG[name] = cls``)."""
        module, last = name.rsplit(".", 1)
        reg = self.s.node(("registry", module))
        if last.startswith(REGISTERS):
            for node in (*plain, *(n for _, n in kws)):
                self.s.edge(node, reg)
        else:
            self.o.call(reg, (), (), dst)

    def built_by(self, args: list[int], dst: int) -> None:
        """A library factory handed a builder (a function, class or bound method) with its other
        arguments: it calls the builder (arguments unknown) and returns what it made, as a list's
        elements and as the elements of a list inside a tuple. Its first argument is the count or
        config, never the builder; an instance handed (a model to wrap) is not called."""
        inner, outer = ("L", "", ("built", dst), 0), ("L", "", ("builds", dst), 0)
        made = self.o.elems(inner)
        self.s.add_values(dst, (outer,))
        self.s.add_values(self.o.elems(outer), (inner,))
        self.s.edge(made, self.o.elems(outer))

        def on(values):
            for v in values:
                if v[0] in BUILDERS and self.o.once(("built", dst, v)):
                    node = self.s.fresh()
                    self.s.add_values(node, (v,))
                    self.o.call(node, (), (), made)
        for arg in args[1:]:
            self.s.watch(arg, on)

    def thread_start(self, name: str, args: tuple, kws: tuple) -> None:
        """``Thread(target=fn, args=(a,), kwargs={...})``: ``fn(a, ...)`` runs (on another thread: no
        call edge, :data:`graphlint.static.flowlink.BACKGROUND`), its parameters get the arguments."""
        named = dict(k for k in kws if k[0] != "**")
        target = named.get("target", args[1] if name.endswith("Thread") and len(args) > 1 else None)
        if name.endswith("Timer"):
            target = named.get("function", args[1] if len(args) > 1 else None)
        if type(target) is not int:
            return
        spread = tuple(("*", named[k]) for k in ("args",) if k in named)
        self.o.call(target, spread, tuple(("**", named[k]) for k in ("kwargs",) if k in named), None)

    def task_method(self, recv: int, method: str, args: tuple, kws: tuple) -> None:
        """``executor.submit(fn, *args, **kws)`` on a library executor (``loop.run_in_executor(ex, fn,
        *args)``, ``pool.apply_async(fn, args)``): ``fn`` is called with those arguments."""
        skip = 1 if method == "run_in_executor" else 0
        if len(args) <= skip or type(args[skip]) is not int:
            return
        fn, rest = args[skip], args[skip + 1:]
        if method == "apply_async":
            rest = tuple(("*", a) for a in rest[:1] if type(a) is int)
        if method == "run_in_executor":
            self.o.call(fn, rest, kws, None)
            return

        def on(values):  # a project class's own ``submit(...)`` is an ordinary call
            if any(v[0] == "X" for v in values) and self.o.once(("task", recv, fn, id(args))):
                self.o.call(fn, rest, kws, None)
        self.s.watch(recv, on)

    def returns_receiver(self, recv: int, method: str, dst: int) -> None:
        """``model.eval()`` (:data:`SELF_RETURNING`): the receiver, where no class of its family binds
        ``method``; ``options`` only on a class (an actor class's options)."""
        def on(values):
            for v in values:
                if v[0] in (("C",) if method == "options" else ("I", "S")) \
                        and not self.o.class_attr(self.o.family(v), method) \
                        and not any(method in self.o.fields.get((i.path, n), ()) for i, n in self.o.family(v)):
                    self.s.add_values(dst, (v,))
        self.s.watch(recv, on)

    def container_method(self, recv: int, kind: str, args: tuple, kws: tuple, dst: int) -> None:
        plain = [a for a in args if type(a) is int]
        if kind == "store" and plain:
            self.o.store_elements(recv, plain[-1])
        elif kind == "store-get":
            if plain:
                self.o.store_elements(recv, plain[-1])
            self.o.elements(recv, dst)
        elif kind == "extend":
            for arg in plain:
                spread = self.s.fresh()
                self.o.elements(arg, spread)
                self.o.store_elements(recv, spread)
            for _, node in kws:
                self.o.store_elements(recv, node)
        elif kind == "get":
            self.o.elements(recv, dst)
            if len(plain) > 1:
                self.s.edge(plain[-1], dst)
        elif kind == "same":
            self.s.edge(recv, dst)
        elif kind == "pairs":
            self.pairs(dst, [recv])

    def pairs(self, dst: int, sources: list[int], first: int | None = None) -> None:
        """``enumerate(xs)``, ``zip(xs, ys)``, ``d.items()``: a container of tuples whose elements are
        the sources' elements (``for i, layer in enumerate(self.layers)`` unpacks a layer). With
        ``first`` (the tuple position of the first source: 1 for ``enumerate``) each position also
        has its own node (:meth:`.Objects.item`): ``for req, chooser in zip(requests, choosers)``
        binds ``chooser`` to the choosers only, not to every zipped list's elements."""
        outer = ("L", "", ("call", dst), 0)
        pair = ("L", "", ("pair", dst) if first is None else ("zip", dst), 0)
        self.s.add_values(dst, (outer,))
        self.s.add_values(self.o.elems(outer), (pair,))
        for k, src in enumerate(sources):
            if first is None:
                self.o.elements(src, self.o.elems(pair))
            else:
                at = self.o.position(pair, first + k)
                self.o.elements(src, at)
                self.s.edge(at, self.o.elems(pair))

    def getattr_prefix(self, obj: int, prefix: str, dst: int, names: int | None = None) -> None:
        """``getattr(self, name)``: every field (of the class, its bases) starting with ``prefix``;
        ``getattr(module, name)`` (a class chosen by a configuration string): every class the module
        defines whose name starts with ``prefix`` -- any of them can be named, so all are targets.
        With ``names`` (the node of a name the analysis follows, no literal prefix), an instance's
        fields are all candidates only once a name it does not know reaches it (a library's value):
        ``getattr(self, method_name)(*args)`` of a dispatch helper handed ``"run"`` is ``self.run``,
        and every field of a runner with sixteen of them would push the method out of the node."""
        fields = [names is None]

        def unknown(values):
            if not fields[0] and any(v[0] != "Str" for v in values):
                fields[0] = True
                self.s.watch(obj, on)  # the watch replays every value the object already holds

        def on(values):
            for v in values:
                if v[0] == "Mod" and (len(v) == 2 or v[2] != BY_STRING):  # by string: what its strings name
                    info = self.by_path.get(v[1])
                    if info is not None:
                        self.s.add_values(dst, [("C", v[1], c) for c in sorted(info.classes)
                                                if "." not in c and c.startswith(prefix)])
                elif v[0] in ("I", "S") and fields[0]:
                    for info, name in self.o.family(v):
                        for attr in sorted(self.o.fields.get((info.path, name), ())):
                            if attr.startswith(prefix):
                                self.s.edge(self.o.field(info.path, name, attr), dst)
        self.s.watch(obj, on)
        if names is not None:
            self.s.watch(names, unknown)

    def getattr_names(self, obj: int, names: int, dst: int, scope: tuple[str, str]) -> None:
        """``getattr(type(self), MODES[mode])``: the attribute each name reaching ``names`` spells
        (a property's getter runs, in ``scope``)."""
        def on(values):
            for v in values:
                if v[0] != "Str" or not self.o.once(("getattr", obj, v[1], dst)):
                    continue
                if path_like(v[1]):  # ``getattr(module, path[dot + 1:])``: a path's last name
                    self.getattr_path(obj, v[1], dst)
                else:
                    self.o.load(obj, v[1], dst)
                    self.implicit.load(*scope, obj, v[1], dst)
        self.s.watch(names, on)

    def module_method(self, recv: int, method: str, fn: int) -> None:
        """``m.apply(fn)`` / ``m.register_forward_hook(fn)`` on project modules that do not bind the
        method themselves (a class's own ``apply`` -- a logit filter's -- is an ordinary call). For
        ``apply``, ``fn``'s first parameter gets ``m`` and every module its fields hold, transitively
        (``nn.Module.apply`` walks the sub-modules; the fields stand for them, containers of layers
        included)."""
        def on(values):
            for v in values:
                if v[0] in ("I", "S") and not self.o.class_attr(self.o.family(v), method) \
                        and self.o.once(("module-method", recv, method, fn, v)):
                    if method != "apply":
                        self.implicit.module_hook(v, fn)
                    elif self.o.once(("apply", recv, fn)):
                        self.o.call(fn, (self.submodules(recv),), (), None)
        self.s.watch(recv, on)

    def submodules(self, recv: int) -> int:
        """A node holding what ``recv`` holds and, transitively, every value its instances' fields
        hold (and the elements of the containers among them)."""
        subs = self.s.fresh()
        self.s.edge(recv, subs)

        def on(values):
            for v in values:
                if v[0] in ("I", "S"):
                    for info, name in self.o.family(v):
                        for attr in sorted(self.o.fields.get((info.path, name), ())):
                            if self.o.once(("submodule", subs, info.path, name, attr)):
                                field = self.o.field(info.path, name, attr)
                                self.s.edge(field, subs)
                                self.o.elements(field, subs)
        self.s.watch(subs, on)
        return subs
