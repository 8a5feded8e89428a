"""A generic wrapper's field, per construction: what ``self.inner(...)`` runs in a hot method is what the
constructions of the *objects its hot callers call* handed the wrapper, not what every construction did.

The points-to analysis keeps one node per class and field: a pipeline stage ``Stage(builder=Layer,
...)`` that stores its builder (``self.builder = builder``) and calls what it built (``self.inner =
self.builder(**kw)``; ``return self.inner(**inputs)``) holds, in ``Stage.inner``, the layers of every
model of the package that wraps its layers in stages. A decode loop that runs one model then ran, through
``Stage.forward``, the layers of the training-only models too (1-object sensitivity is what the
context-insensitive solve lacks). Here, for a hot method ``W.m``'s call of a field -- ``self.f(...)``
or ``self.f.g(...)`` -- the objects are read from the hot calls of ``W.m``: each call's receiver
(``self.head``, ``layer`` of ``for layer in self.layers``, a local) followed through the caller's own
bindings and its class's ``self`` fields to the constructions ``W(...)`` that made it
(``nn.ModuleList([W(...) for ...])``, ``a if c else b``). For each construction, the field's provenance
in ``W``: stored from a parameter of the ``__init__`` the construction runs (``self.f = p``), or the
result of calling one (``self.f = p(...)``, ``self.f = self.g(...)`` with ``self.g = p``). The
argument that construction passes for ``p`` (its points-to values: the classes or functions a name
holds) then says what the call runs: a class's ``forward`` / ``__call__`` (or ``g``) when the field
holds an instance built from it, the class's ``__init__`` or the function itself when it holds it
(``Mlp(act=fast_gelu)``: ``self.act(h)`` runs ``fast_gelu``). Edges to other classes' methods and
other module functions are dropped and the decode path found again (as :mod:`.hotreceivers`), up to
:data:`ROUNDS` times: a layer only a pruned wrapper built holds its own handed functions, and its
calls went cold only once it did.

Nothing is pruned where a link is unknown: a caller that is an entry or a callback, a receiver that is
a parameter, ``self``, an element read by index, a call's result or anything else; a field stored by
anything but the wrapper's own methods (``obj.f = v``, ``setattr``, a keyword of a construction
without an own ``__init__``); a store of anything else; a ``*``/``**`` splat or a left-out argument
at the construction; an argument holding something other than project classes and functions; a
method not found along a class's project MRO.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.hotreceivers import rebound

FuncId = tuple[str, str]
ClassKey = tuple[str, str]
SELF = ("n", "self")
#: calls whose one positional argument's elements are the container's (``nn.ModuleList([...])``)
CONTAINERS = frozenset(("ModuleList", "Sequential", "list", "tuple"))
#: how far receivers and stores are followed
DEPTH = 10
#: how many times the decode path is found again after a pruning (the linker's loop)
ROUNDS = 3


class WrapperFields:
    def __init__(self, receivers, infos: list[ModuleInfo]):
        self.r = receivers  # :class:`.hotreceivers.HotReceivers`: hot callers, lookups, the solve
        self.infos = infos
        self.by_path, self.index, self.graph = receivers.by_path, receivers.index, receivers.graph
        self._objects: dict[FuncId, list | None] = {}
        self._stores_of: dict[tuple, list | None] = {}
        self._owners: dict[str, list] | None = None  # field -> who stores it, over every file

    def dropped(self) -> set[tuple[FuncId, int, FuncId]]:
        """(caller, id(site), callee) of a hot wrapper method's field calls that no hot object's construction runs."""
        out: set[tuple[FuncId, int, FuncId]] = set()
        for fid in sorted(self.r.hot):
            flow = self.by_path[fid[0]].flows.get(fid[1])
            if flow is None or fid in self.r.open or flow.fkind != "m" or not flow.cls:
                continue
            edges = self.r.raw.get(fid, ())
            for site in {id(s): s for _, s in edges}.values():
                expr = site.expr
                if site.reference or expr[:1] != ("a",):
                    continue
                if expr[1] == SELF:
                    attr, method = expr[2], None
                elif expr[1][:1] == ("a",) and expr[1][1] == SELF:
                    attr, method = expr[1][2], expr[2]
                else:
                    continue
                objects = self.objects(fid)
                if not objects:
                    continue
                runs = self._runs(objects, attr, method)
                if runs is None:
                    continue
                out.update((fid, id(site), callee) for callee, s in edges
                           if s is site and callee not in runs and self._prunable(callee))
        return out

    def _prunable(self, callee: FuncId) -> bool:
        """A method of a class or a module's own function: what a field's known values name (never a
        closure -- a decorator's wrapper -- or a lambda, whose calls the values do not spell)."""
        info = self.by_path.get(callee[0])
        return self.r._method_of_class(callee) or (info is not None and "." not in callee[1]
                                                    and callee[1] in info.functions and not callee[1].startswith("<"))

    # -- which objects a hot method runs on: constructions ------------------------------------
    def objects(self, fid: FuncId) -> list | None:
        """(function, construction IR, class) of every object the hot calls of ``fid`` run on; None: not known."""
        if fid not in self._objects:
            self._objects[fid] = self._objects_now(fid)
        return self._objects[fid]

    def _objects_now(self, fid: FuncId) -> list | None:
        callers = [(c, s) for c, s in self.r.callers.get(fid, ()) if self.r._runs_hot(c, s)]
        if not callers:
            return None
        method = fid[1].rpartition(".")[2]
        out = []
        for caller, site in callers:
            expr = site.expr
            if expr[:1] == ("a",) and expr[2] == method:
                receiver = expr[1]
            elif method in ("forward", "__call__"):
                receiver = expr  # ``self.head(x)``, ``layer(**state)``: ``nn.Module.__call__``
            else:
                return None
            built = self._built(caller, receiver, DEPTH)
            if built is None:
                return None
            for ctx, ctor in built:
                classes = self._classes(ctx, ctor[1])
                if classes is None:
                    return None
                out.extend((ctx, ctor, cls) for cls in classes if self._finds(cls, method) == fid)
        return out or None

    def _built(self, ctx: FuncId, ir, depth: int) -> list | None:
        """The constructions (``("c", ...)`` IRs, each with its function) whose objects ``ir`` holds."""
        if depth <= 0 or type(ir) is not tuple:
            return None
        tag = ir[0]
        if tag == "c":
            return [(ctx, ir)]
        if tag == "o":
            return self._union(ctx, ir[1], depth, self._built)
        if tag == "s":
            return self._elements(ctx, ir[1], depth)
        return self._follow(ctx, ir, depth, self._built)

    def _elements(self, ctx: FuncId, ir, depth: int) -> list | None:
        """The constructions the elements of the container ``ir`` holds."""
        if depth <= 0 or type(ir) is not tuple:
            return None
        tag = ir[0]
        if tag == "l":
            if any(type(e) is tuple and e[:1] == ("*",) for e in ir[2]):
                return None
            return self._union(ctx, ir[2], depth, self._built)
        if tag == "c":
            func, args, kws = ir[1], ir[2], ir[3]
            name = func[2] if func[:1] == ("a",) else func[1] if func[:1] == ("n",) else None
            if name not in CONTAINERS or len(args) != 1 or kws:
                return None
            return self._elements(ctx, args[0], depth - 1)
        if tag == "o":
            return self._union(ctx, ir[1], depth, self._elements)
        return self._follow(ctx, ir, depth, self._elements)

    def _follow(self, ctx: FuncId, ir, depth: int, then) -> list | None:
        """A local bound in ``ctx`` (never a parameter) or a ``self`` field of its class: what is bound there."""
        flow = self.by_path[ctx[0]].flows.get(ctx[1])
        if flow is None:
            return None
        if ir[0] == "n":
            name = ir[1]
            if name in (*flow.params, *flow.kwonly, flow.vararg, flow.kwarg):
                return None
            binds = [stmt[2] for stmt in flow.stmts if stmt[:2] == ("=", ("n", name))]
            return self._union(ctx, binds, depth, then) if binds else None
        if ir[0] == "a" and ir[1] == SELF and flow.cls and flow.fkind == "m":
            ref = self.r._ref((ctx[0], flow.cls))
            if ref is None:
                return None
            classes = {(i.path, n) for sub in (ref, *self.index.subclasses(ref)) for i, n in self.index.mro(sub)}
            stores = self._stores(classes, ir[2])
            if not stores:
                return None
            out = []
            for where, value in stores:
                got = then(where, value, depth - 1)
                if got is None:
                    return None
                out.extend(got)
            return out
        return None

    def _union(self, ctx: FuncId, irs, depth: int, then) -> list | None:
        out = []
        for ir in irs:
            got = then(ctx, ir, depth - 1)
            if got is None:
                return None
            out.extend(got)
        return out

    # -- what a field of a constructed wrapper holds -------------------------------------------
    def _runs(self, objects: list, attr: str, method: str | None) -> set[FuncId] | None:
        """What ``self.attr(...)`` / ``self.attr.method(...)`` runs on the given objects; None: not known."""
        out: set[FuncId] = set()
        for ctx, ctor, cls in objects:
            ref = self.r._ref(cls)
            init = self.index.find_method(ref, "__init__") if ref is not None else None
            if init is None:
                return None
            init_fid = (init[0].path, init[1])
            init_flow = init[0].flows.get(init[1])
            mro = {(i.path, n) for i, n in self.index.mro(ref)}
            origins = self._origins(mro, init_fid, attr, DEPTH)
            if init_flow is None or not origins:
                return None
            for param, called in origins:
                arg = _argument(ctor, init_flow, param)
                values = self._values(ctx, arg) if arg is not None else None
                if values is None:
                    return None
                for value in values:
                    got = self._target(value, called, method)
                    if got is None:
                        return None
                    out |= got
        return out

    def _origins(self, mro: set[ClassKey], init: FuncId, attr: str, depth: int) -> set | None:
        """(parameter of ``init``, called) for every store of ``self.attr`` in the classes ``mro``:
        the parameter itself (``self.f = p``) or what calling it returned (``self.f = p(...)``,
        ``self.f = self.g(...)`` where ``self.g = p``); None where a store is anything else."""
        stores = self._stores(mro, attr) if depth > 0 else None
        if not stores:
            return None
        params = self.by_path[init[0]].flows[init[1]]
        out: set = set()
        for where, value in stores:
            alternatives = value[1] if value[:1] == ("o",) else (value,)
            for one in alternatives:
                if one[:1] == ("n",) and where == init and one[1] in (*params.params[1:], *params.kwonly) \
                        and not rebound(params, one[1]):
                    out.add((one[1], False))
                elif one[:1] == ("c",) and one[1][:1] == ("n",) and where == init \
                        and one[1][1] in (*params.params[1:], *params.kwonly) and not rebound(params, one[1][1]):
                    out.add((one[1][1], True))
                elif one[:1] == ("c",) and one[1][:1] == ("a",) and one[1][1] == SELF:
                    inner = self._origins(mro, init, one[1][2], depth - 1)
                    if inner is None or any(called for _, called in inner):
                        return None
                    out |= {(param, True) for param, _ in inner}
                else:
                    return None
        return out

    def _stores(self, classes: set[ClassKey], attr: str) -> list[tuple[FuncId, tuple]] | None:
        """(function, value IR) of every ``self.attr = value`` in a method of ``classes``; None where
        the field may also be stored otherwise (another object's ``obj.attr = v``, ``setattr(obj, "attr", v)``)."""
        key = (frozenset(classes), attr)
        if key not in self._stores_of:
            self._stores_of[key] = self._stores_now(classes, attr)
        return self._stores_of[key]

    def _stores_now(self, classes: set[ClassKey], attr: str) -> list[tuple[FuncId, tuple]] | None:
        if self._owners is None:  # a computed-name ``setattr`` is read back by no load of the solve either
            self._owners = {}
            for info in self.infos:
                for name, owned in info.owned_stores.items():
                    self._owners.setdefault(name, []).extend(owner for owner, _ in owned)
        names = {n.rpartition(".")[2] for _, n in classes}
        for owner in self._owners.get(attr, ()):
            if owner is not None and owner[0] == "self":
                continue  # a method's own store: read below (or another class's field)
            if owner is not None and owner[0] == "new" and (owner[1] not in names or self._own_init(classes, owner[1])):
                continue  # a keyword of a construction: a parameter of an ``__init__`` of its own
            return None
        out = []
        for path, cls in sorted(classes):
            prefix = f"{cls}."
            for qual, flow in self.by_path[path].flows.items():
                if flow.kind == "function" and qual.startswith(prefix):
                    out.extend(((path, qual), stmt[2]) for stmt in flow.stmts
                               if stmt[:2] == ("=", ("a", SELF, attr)) and stmt[2] is not None)
        return out

    def _own_init(self, classes: set[ClassKey], name: str) -> bool:
        return all("__init__" in self.by_path[p].classes[n].methods
                   for p, n in classes if n.rpartition(".")[2] == name and n in self.by_path[p].classes)

    def _values(self, ctx: FuncId, ir) -> list | None:
        """The project classes and functions a name (or ``a if c else b`` of names) holds in ``ctx``."""
        if ir[:1] == ("o",):
            out = []
            for alt in ir[1]:
                got = self._values(ctx, alt)
                if got is None:
                    return None
                out.extend(got)
            return out
        if ir[:1] != ("n",):
            return None
        solver = self.graph.solver
        node = self.graph.linker.var(ctx[0], ctx[1], ir[1])
        if node is None or node in solver.full or not solver.pts.get(node):
            return None
        values = solver.values(node)
        return None if any(v[0] not in ("C", "F") or v[1] not in self.by_path for v in values) else values

    def _target(self, value: tuple, called: bool, method: str | None) -> set[FuncId] | None:
        if value[0] == "F":
            return {(value[1], value[2])} if not called and method is None else None
        cls = (value[1], value[2])
        if not called:
            found = self._finds(cls, "__init__") if method is None else None
            return {found} if found else None
        if method is not None:
            return self.r._lookups(frozenset((cls,)), method)
        found = {f for f in (self._finds(cls, "forward"), self._finds(cls, "__call__")) if f}
        return found or None

    def _finds(self, cls: ClassKey, method: str) -> FuncId | None:
        ref = self.r._ref(cls)
        hit = self.index.find_method(ref, method) if ref is not None else None
        return (hit[0].path, hit[1]) if hit is not None else None

    def _classes(self, ctx: FuncId, func) -> list[ClassKey] | None:
        """The classes a construction's callee holds (a project name holding classes only)."""
        got = self.r._constructed(ctx, func)
        return sorted(got) if got else None


def _argument(ctor: tuple, init_flow, param: str):
    """What a construction passes for ``param`` of the ``__init__`` it runs; None for a splat or the default."""
    _, _, args, kws = ctor
    if any(type(a) is tuple and a[:1] in (("*",), ("**",), ("*s",)) for a in (*args, *kws)):
        return None
    for key, value in kws:
        if key == param:
            return value
    names = init_flow.call_params()
    index = names.index(param) if param in names else len(args)
    return args[index] if index < len(args) else None
