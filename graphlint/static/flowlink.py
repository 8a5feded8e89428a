"""Every file's flow facts (:mod:`.flows`) -> constraints of one whole-program points-to problem.

Names are scoped as Python scopes them (a function's locals, its enclosing functions', the
module's globals, ``from x import *`` included; class bodies are their own scope, not seen by their
methods); imports resolve to the project's modules (relative ones against the importing module,
absolute ones by module-name suffix, so ``src/`` layouts work), and a name another module
re-exports is read from that module's global. The library calls and container methods values
flow through are modelled in :mod:`.libflows`; everything else from outside the project is opaque:
its results hold nothing.
"""

from __future__ import annotations

import builtins
from functools import partial

from graphlint.static.classpaths import SPLITS, ClassPaths
from graphlint.static.facts import ModuleInfo, ScopeFlow
from graphlint.static.implicit import Implicit
from graphlint.static.index import Index
from graphlint.static.keyedreturns import call_keys, keyed_call
from graphlint.static.installed import own_field
from graphlint.static.libpipelines import PipelineNames, mark_pipeline
from graphlint.static.libflows import (CONTAINER_METHODS, COPIES, MODULE_METHODS, PASS_THROUGH, PARTIAL, SELF_RETURNING,
                                      TASK_METHODS, LibraryFlows, library_partial)
from graphlint.static.moduleflows import ModuleFlows
from graphlint.static.names import module_name
from graphlint.static.patched import PATCHED, patched_names
from graphlint.static.objects import FOREIGN, Objects
from graphlint.static.pkgscan import PackageScans
from graphlint.static.pointsto import CAP, Value
from graphlint.static.swapstores import UnnamedStores

BUILTINS = frozenset(dir(builtins))
#: calls that run a callable they are handed later, on another thread or process: what it does is
#: not the step's own work (a weight reload in the background, a shutdown hook)
#: (a thread runs a loop of its own: whether that loop is per step is its own business, :mod:`.loops`).
#: A task handed to a pool (``executor.submit(fn, x)``, ``loop.run_in_executor(None, fn, x)``) is no
#: such thing: it runs once per submission, the submitter's work on another thread -- an edge.
BACKGROUND = frozenset(("threading.Thread", "threading.Timer", "multiprocessing.Process", "torch.multiprocessing.Process",
                        "torch.multiprocessing.spawn", "atexit.register", "signal.signal"))
SELF = ("n", "self")
BACKGROUND_METHODS = frozenset(("start_new_thread",))


class Linker(LibraryFlows, ClassPaths, ModuleFlows, PackageScans):
    """Compiles the flow facts of ``infos`` into ``objects``' solver (call :meth:`compile_all`)."""

    def __init__(self, infos: list[ModuleInfo], index: Index, objects: Objects):
        self.infos, self.index, self.o, self.s = infos, index, objects, objects.s
        self.by_path = {info.path: info for info in infos}
        self.memo: dict[tuple[str, str], dict[tuple, int]] = {}  # (path, scope) -> IR -> node
        #: (path, scope, id of an IR tuple) -> node, for the call graph's questions: by identity, as they
        #: are asked with the very tuples the summary holds (hashing nested tuples costs their size)
        self.kept: dict[tuple, int] = {}
        self.empty = self.s.fresh()
        self.module_locals: dict[str, set[str]] = {}
        self.names = {info.path: module_name(info.path) for info in infos}
        self.packages = {".".join(n.split(".")[:i]) for n in self.names.values() for i in range(1, n.count(".") + 1)}
        objects.module_attr = self.module_attr
        self.implicit = Implicit(infos, objects)  # decorators, and what loads, subscripts and stores run
        self.wrapped = self.implicit.wrapped  # decorators' wrapper closures -> the functions they wrap
        self.implicit.evaluate = self.eval  # a proxy's forwarded load (:meth:`.Implicit.delegated`)
        #: names of functions that call a parameter: their calls keep their arguments' nodes (:mod:`.passedcalls`)
        self.keep_args: frozenset[str] = frozenset()
        #: what stores on objects other than ``self`` install (:mod:`.installed`), set by the call graph
        self.installed = None
        self.policies = None  # methods policy records replace (:mod:`.policies`), set by the call graph
        self.swaps = UnnamedStores(infos)  # field stores of methods nothing names (:mod:`.swapstores`)
        self.pipelines = PipelineNames(self.by_path, self.index)  # library pipelines built (:mod:`.libpipelines`)

    # -- the whole program ---------------------------------------------------------------------
    def compile_all(self) -> None:
        self.o.keyed = {(i.path, q): ps for i in self.infos for q, ps in i.keyed_returns.items()}
        self.o.forwards, self.o.keyed_call = {}, partial(keyed_call, self)
        for info in self.infos:
            self.globals_of(info.path, set())
        for info in self.infos:
            for qual, flow in info.flows.items():
                start = self.s.count
                self.compile_scope(info.path, qual, flow)
                if qual.endswith("__init__"):
                    self.s.widen(start)
        self.o.generated.install(self.infos, self.eval)  # after the scopes: the wrapper a metaclass binds has the lower id

    def compile_scope(self, path: str, qual: str, flow: ScopeFlow) -> None:
        if flow.cls and flow.fkind in ("m", "p", "c") and flow.params:  # ``self``, or ``cls`` in a classmethod
            self.s.edge(self.eval(path, qual, ("cls" if flow.fkind == "c" else "self", flow.cls)),
                        self.s.node(("v", path, qual, flow.params[0])))
        for name, star in ((flow.vararg, "*"), (flow.kwarg, "**")):
            if name:
                container = ("L", path, (star, qual), 0)
                self.s.add_values(self.s.node(("v", path, qual, name)), (container,))
        for name in patched_names(flow):  # an outside object this scope patches (:mod:`.patched`)
            if not self.names_import(path, qual, ("n", name)):
                self.s.add_values(self.s.node(("v", path, qual, name)), ((PATCHED, path, qual, name),))
        for stmt in flow.stmts:
            kind = stmt[0]
            if kind == "=" and stmt[2][0] == "da":
                continue  # a field's mapping annotation: for :mod:`.receivers` only, no store here
            if kind == "=":
                value = self.eval(path, qual, stmt[2])
                if stmt[1][0] == "n" and (stmt[2][0] == "s" or self.s.cap(value) > CAP):
                    # ``for layer in self.layers``: an element; ``model = self.model``: a field's values,
                    # which a factory's model classes fill, and beside them the graph wrapper it may swap in
                    self.s.elementwise(self.var(path, qual, stmt[1][1]))
                self.assign(path, qual, stmt[1], value)
            elif kind == "e":
                self.eval(path, qual, stmt[1])
            elif kind == "set":
                target = stmt[1]
                obj = self.eval(path, qual, target[1])
                (self.implicit.store if target[0] == "a" else self.implicit.store_item)(path, qual, obj)
            elif kind == "in":
                self.implicit.contains(path, qual, self.eval(path, qual, stmt[1]))
            elif kind == "r":
                self.o.returned(path, qual, self.eval(path, qual, stmt[1]), stmt)
            elif kind == "rep" and self.policies is not None:  # a method a policy record replaces
                self.policies.record(stmt[1], self.eval(path, qual, stmt[2]),
                                     [self.eval(path, qual, c) for c in stmt[3]])

    def assign(self, path: str, qual: str, target: tuple, value: int) -> None:
        kind = target[0]
        if kind == "n":
            node = self.var(path, qual, target[1])
            if node is not None:
                self.s.edge(value, node)
        elif kind == "a":
            obj = self.eval(path, qual, target[1])
            if not self.swaps.hold(self.by_path[path].flows.get(qual), qual, path, target, obj, value):
                self.o.store(obj, target[2], value)
            self.implicit.store(path, qual, obj)
            if self.installed is not None and target[1] != SELF:
                field = own_field(self.by_path[path].flows.get(qual), target[1]) if target[2] == "forward" else None
                if field is not None:  # installed on a submodule of its own: a call through that field runs it
                    self.s.edge(value, self.o.field(path, field[0], field[1]))
                else:
                    self.installed.store(obj, value, target[2])
        elif kind == "s":
            obj = self.eval(path, qual, target[1])
            self.o.store_elements(obj, value)
            self.implicit.store_item(path, qual, obj)

    # -- names ---------------------------------------------------------------------------------
    def var(self, path: str, qual: str, name: str) -> int | None:
        flows = self.by_path[path].flows
        scope = qual
        while scope and scope != "<module>":
            flow = flows.get(scope)
            if flow is None or name in flow.outer:
                if flow is not None and name in flow.enclosing:  # ``nonlocal``: the enclosing function's
                    scope = flow.parent
                    continue
                break
            if name in flow.locals and (flow.kind == "function" or scope == qual):
                if flow.kind == "class":
                    return self.o.cattr(path, flow.cls, name)
                return self.s.node(("v", path, scope, name))
            scope = flow.parent
        if name in self.module_locals.get(path, ()):
            return self.s.node(("v", path, "<module>", name))
        return None

    def names_import(self, path: str, qual: str, ir: tuple) -> bool:
        """Whether ``ir`` names an import or a builtin (a module: its attributes are no bound methods)."""
        return self.static_name(path, qual, ir) is not None

    def family(self, path: str, cls: str) -> set[tuple[str, str]]:
        """A class with its bases and subclasses, as (path, class qualname)."""
        ref = (self.by_path[path], cls)
        return {(i.path, n) for i, n in (*self.index.mro(ref), *self.index.subclasses(ref))}

    def static_name(self, path: str, qual: str, ir: tuple) -> str | None:
        """The dotted name of a callee outside the project's own bindings: ``torch.compile``,
        ``builtins.list``, ``functools.partial`` (through the file's imports)."""
        if ir[0] == "a":
            base = self.static_name(path, qual, ir[1])
            return f"{base}.{ir[2]}" if base else None
        if ir[0] == "s":  # ``list[GraphInfo]()``: a generic alias of a builtin container calls its origin
            base = self.static_name(path, qual, ir[1])
            return base if base in COPIES else None
        if ir[0] != "n":
            return None
        name = ir[1]
        info = self.by_path[path]
        if name in info.imports:
            dotted = info.imports[name]
            return self.index.absolute(info, dotted) if dotted.startswith(".") else dotted
        if name in BUILTINS and self.var(path, qual, name) is None:
            return f"builtins.{name}"
        return None

    # -- expressions -----------------------------------------------------------------------------
    def eval(self, path: str, qual: str, ir: tuple, keep: bool = False) -> int:
        """The node of ``ir`` in scope ``qual`` of ``path`` (compiled once); ``keep``: one the call
        graph will ask about after :meth:`forget` (a call site's callee, a region's callable)."""
        scope = self.memo.get((path, qual))
        if scope is None:
            scope = self.memo[(path, qual)] = {}
        node = scope.get(ir)
        if node is None:
            node = scope[ir] = self._eval(path, qual, ir)
        if keep:
            self.kept[(path, qual, id(ir))] = node
        return node

    def forget(self) -> None:
        """Compiling is over: keep only the nodes the call graph asks about."""
        self.memo = {}

    def known(self, path: str, qual: str, ir: tuple) -> int | None:
        """The node ``ir`` was compiled to in that scope, if the call graph kept it."""
        return self.kept.get((path, qual, id(ir)))

    def _eval(self, path: str, qual: str, ir: tuple) -> int:
        tag, s = ir[0], self.s
        if tag in ("a", "n", "str", "g"):
            flow = self.by_path[path].flows.get(qual)
            self.swaps.loaded(ir, path, flow.cls if flow is not None else "",
                              lambda base: self.names_import(path, qual, base))
        if tag == "n":
            node = self.var(path, qual, ir[1])
            return self.empty if node is None else node
        if tag == "c":
            return self.call(path, qual, ir)
        dst = s.fresh()
        if tag == "a":
            obj = self.eval(path, qual, ir[1])
            if ir[1] == ("n", "self") or s.cap(obj) > CAP:  # a field's values and their methods, uncut
                s.elementwise(dst)
            self.o.load(obj, ir[2], dst)
            self.implicit.load(path, qual, obj, ir[2], dst)
        elif tag == "s":
            s.elementwise(dst)
            obj = self.eval(path, qual, ir[1])
            if len(ir) > 2:  # ``a, b = t``: position ``ir[2]`` of a tuple (:meth:`.Objects.item`)
                self.o.item(obj, ir[2], dst)
            else:
                self.o.elements(obj, dst)
            self.implicit.item(path, qual, obj)
        elif tag == "l":
            container = ("L", path, ir[1], ir[3])
            s.add_values(dst, (container,))
            self.fill(path, qual, container, ir[2])
        elif tag == "o":
            for alt in ir[1]:
                s.edge(self.eval(path, qual, alt), dst)
        elif tag == "d":
            s.add_values(dst, (("F", path, ir[1]),))
        elif tag == "k":
            s.add_values(dst, (("C", path, ir[1]),))
        elif tag == "self":
            s.add_values(dst, (("S", path, ir[1]),))
        elif tag == "cls":  # ``Sub.from_dict(d)`` runs ``cls(**d)`` with ``cls`` = Sub
            ref = (self.by_path[path], ir[1])
            s.add_values(dst, [("C", i.path, n) for i, n in (ref, *self.o.built.cone(ref))])
        elif tag == "sup":
            s.add_values(dst, (("Sup", path, ir[1]),))
        elif tag == "t":
            if self.foreign(self.static_name(path, qual, ir[1])):  # ``tok: Tokenizer`` of a library
                s.add_values(dst, (FOREIGN,))
            s.watch(self.eval(path, qual, ir[1]),
                    lambda values: s.add_values(dst, [("S", v[1], v[2]) for v in values if v[0] == "C"]))
        elif tag == "la":  # ``layers: list[Layer]``: the one container of Layer instances
            def typed(values):
                for v in values:
                    if v[0] == "C":
                        box = ("L", "", ("ann", v[1], v[2]), 0)
                        s.add_values(dst, (box,))
                        s.add_values(self.o.elems(box), (("S", v[1], v[2]),))
            s.watch(self.eval(path, qual, ir[1][1]), typed)
        elif tag == "i":
            self.imported(path, ir[1], dst)
        elif tag == "g":
            obj = self.eval(path, qual, ir[1])
            names = self.eval(path, qual, ir[3]) if len(ir) > 3 else None
            self.getattr_prefix(obj, ir[2], dst, None if ir[2] else names)
            for name in sorted(n for n in self.implicit.properties if ir[2] and n.startswith(ir[2])):
                self.o.load(obj, name, dst)  # ``getattr(cfg, f"output_{k}")``: a property so named runs
                self.implicit.load(path, qual, obj, name)
            if names is not None:
                self.getattr_names(obj, names, dst, (path, qual))
        elif tag == "str":
            self.string(dst, ir[1])
        elif tag == "cat":
            self.concat(dst, [p if type(p) is str else self.eval(path, qual, p) for p in ir[1]])
        elif tag == "modname":
            self.string(dst, self.names[path])
        elif tag == "scan":  # ``pkgutil.iter_modules(pkg.__path__, ...)`` (:mod:`.pkgscan`)
            self.package_scan(self.eval(path, qual, ir[1]), ir[2], ir[3], dst)
        elif tag == "pkgpath":
            self.own_path(path, dst)
        elif tag == "x":
            s.add_values(dst, (FOREIGN,))
        elif tag == "dec":
            self.implicit.decorated(self.eval(path, qual, ir[1]), self.eval(path, qual, ir[2]), dst)
        return dst

    def fill(self, path: str, qual: str, container: Value, elements: tuple) -> None:
        target = self.o.elems(container)
        for el in elements:
            if el[0] == "*s":
                self.o.elements(self.eval(path, qual, el[1]), target)
            else:
                self.s.edge(self.eval(path, qual, el), target)

    def arguments(self, path: str, qual: str, args: tuple, kws: tuple) -> tuple[tuple, tuple]:
        arg_nodes = tuple(("*", self.eval(path, qual, a[1])) if a is not None and a[0] == "*" and len(a) == 2
                          else (self.eval(path, qual, a) if a is not None else self.empty) for a in args)
        return arg_nodes, tuple((k, self.eval(path, qual, v)) for k, v in kws)

    def call(self, path: str, qual: str, ir: tuple) -> int:
        _, func, args, kws = ir
        dst = self.s.fresh()
        fnode = self.eval(path, qual, func)
        arg_nodes, kw_nodes = self.arguments(path, qual, args, kws)
        if self.keep_args and func[0] in ("n", "a") and func[-1] in self.keep_args:  # :mod:`.passedcalls`
            for a, n in (*zip(args, arg_nodes), *((v, n) for (_, v), (_, n) in zip(kws, kw_nodes))):
                if a is not None and type(n) is int:
                    self.kept[(path, qual, id(a))] = n
        self.o.call(fnode, arg_nodes, kw_nodes, dst, call_keys(args, kws) if self.o.keyed else None)
        name = self.static_name(path, qual, func)
        if name is not None and library_partial(name) and self.foreign(name):
            name = PARTIAL  # ``funcy.partial(f, a)``: a library's re-export of functools.partial binds alike
        foreign = name is not None and self.foreign(name)
        if func[0] == "a" and func[2] == "__get__" and arg_nodes and type(arg_nodes[0]) is int:
            # ``f.__get__(obj[, cls])``: the descriptor protocol binds ``f`` to ``obj``, as ``types.MethodType``
            self.library_call("types.MethodType", (self.eval(path, qual, func[1]), arg_nodes[0]), (), dst)
        elif name is not None:
            self.library_call(name, arg_nodes, kw_nodes, dst)
            if name == "builtins.next" and arg_nodes and type(arg_nodes[0]) is int:
                self.implicit.advanced(path, qual, arg_nodes[0])  # ``next(gen)``: its ``__next__``
            if foreign:
                self.s.add_values(dst, (FOREIGN,))
        if foreign:
            pass  # a library's method: what :meth:`library_call` models
        elif func[0] == "a" and func[2] in CONTAINER_METHODS:  # ``MODULE_MAP.copy()`` of an imported global too
            self.container_method(self.eval(path, qual, func[1]), CONTAINER_METHODS[func[2]], arg_nodes,
                                  kw_nodes, dst)
        elif func[0] == "a" and func[2] in MODULE_METHODS and len(arg_nodes) == 1 and type(arg_nodes[0]) is int:
            self.module_method(self.eval(path, qual, func[1]), func[2], arg_nodes[0])
        elif func[0] == "a" and func[2] in SPLITS:  # ``path.split(":")`` (:mod:`.classpaths`)
            self.split_path(self.eval(path, qual, func[1]), dst)
        elif func[0] == "a" and func[2] in SELF_RETURNING:
            self.returns_receiver(self.eval(path, qual, func[1]), func[2], dst)
        if func[0] == "a" and func[2] in TASK_METHODS:
            self.task_method(self.eval(path, qual, func[1]), func[2], arg_nodes, kw_nodes)
        built = self.pipelines.builds(path, qual, func) if func[0] in ("a", "n") else ""
        if built:
            mark_pipeline(self, built, kw_nodes, dst, (path, qual))
        return dst

    def foreign(self, name: str | None) -> bool:
        """Whether the dotted ``name`` (:meth:`static_name`) is from a library: no analysed module or
        package provides it, and it is no builtin (builtins copy and pass on the project's values)."""
        if name is None or name.startswith("builtins.") or name in PASS_THROUGH or name == PARTIAL:
            return False
        parts = name.split(".")
        return not any(self.index.find_module(".".join(parts[:cut])) is not None
                       or ".".join(parts[:cut]) in self.packages for cut in range(len(parts), 0, -1))

    def background(self, path: str, qual: str, func: tuple) -> bool:
        """Whether calling ``func`` hands its arguments to another thread or process (:data:`BACKGROUND`)."""
        if func[0] == "i":  # a library call the summary kept only by name
            return func[1] in BACKGROUND
        return (func[0] == "a" and func[2] in BACKGROUND_METHODS) or self.static_name(path, qual, func) in BACKGROUND
