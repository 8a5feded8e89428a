"""Which classes a parameter's method call runs on the decode path: the objects its *hot* callers pass.

The points-to analysis is context-insensitive about parameters: ``Attention.forward(x, kv_cache)``
has one ``kv_cache``, holding every view any caller ever builds -- the decode view the per-token
loop passes, and the prefill views the prompt's pass builds -- so ``kv_cache.update(...)`` ran every
view's ``update`` wherever the layer was hot, and the prefill views' per-prompt code was rated
per-token. Which views are per-token is decided by the callers that reach the call, not by names:
a speculative round that builds a chunked-prefill view every round makes that view per-token too.

For a hot function's call ``p.m(...)`` on a parameter ``p`` it never rebinds, the classes are
those of the values its hot callers pass for ``p`` (a caller's own parameter passed on: what *its*
hot callers pass, up to :data:`DEPTH` calls up), read from the points-to solution of each
argument: a name, a field of an object of a known class (``self.kv_cache``), or a call's result
(what its callees return). A call edge to a method of a class none of them looks up is dropped.
Nothing is pruned where a link is unknown: a function called from outside (an entry, a loop's own
function), a caller passing ``*args``/``**kwargs`` or another expression, an argument holding
anything but project instances, a method that is not found along a class's MRO.
"""

from __future__ import annotations

from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.index import Index

FuncId = tuple[str, str]
ClassKey = tuple[str, str]
Raw = dict[FuncId, list[tuple[FuncId, CallSite]]]
#: calls followed up through parameters passed on
DEPTH = 6
#: what a parameter's annotation binds it to (:mod:`.flowir`): no value a call passes
ANNOTATED = ("t", "la", "da")
#: what an entry function may be handed to and still be called only by the project (:meth:`HotReceivers._called_here`)
COMPILERS = {"torch.compile"}


class HotReceivers:
    def __init__(self, infos: list[ModuleInfo], index: Index, raw: Raw, graph, hot: set[FuncId],
                 open_: set[FuncId], only_loops: dict[FuncId, frozenset[int]]):
        self.by_path = {info.path: info for info in infos}
        self.index, self.raw, self.graph, self.hot, self.open = index, raw, graph, hot, open_
        self.only_loops = only_loops
        self.callers: dict[FuncId, list[tuple[FuncId, CallSite]]] = {}
        self.handed: dict[FuncId, set] = {}  # a function passed as a value: the callees it is passed to
        for caller, edges in raw.items():
            for callee, site in edges:
                if not site.reference:
                    self.callers.setdefault(callee, []).append((caller, site))
                else:
                    self.handed.setdefault(callee, set()).add(_spelled(self.by_path[caller[0]].imports, site.via))
        self._passed: dict[tuple[FuncId, str, bool], frozenset | None] = {}

    def dropped(self) -> set[tuple[FuncId, int, FuncId]]:
        """(caller, id(site), callee) of the hot calls on a parameter that no class passed there runs."""
        out: set[tuple[FuncId, int, FuncId]] = set()
        for fid in sorted(self.hot):
            flow = self.by_path[fid[0]].flows.get(fid[1])
            if flow is None or fid in self.open:
                continue
            params = set(flow.call_params()) | set(flow.kwonly)
            edges = self.raw.get(fid, ())
            for site in {id(s): s for _, s in edges}.values():
                expr = site.expr
                if site.reference or expr[0] != "a" or expr[1][:1] != ("n",) or expr[1][1] not in params \
                        or rebound(flow, expr[1][1]):
                    continue
                classes = self.passed(fid, expr[1][1], DEPTH)
                if not classes:
                    continue
                runs = self._lookups(classes, expr[2])
                if runs is None:
                    continue
                out.update((fid, id(site), callee) for callee, s in edges
                           if s is site and callee not in runs and self._method_of_class(callee))
        return out

    def passed(self, fid: FuncId, param: str, depth: int, strict: bool = False) -> frozenset | None:
        """The classes of the project instances hot callers pass ``fid`` for ``param``; None: not known.
        ``strict``: what *every* call passes, each an instance (no default, literal or field that may be None)."""
        key = (fid, param, strict)
        if key in self._passed:
            return self._passed[key]
        self._passed[key] = None  # a cycle knows nothing
        found = self._passed[key] = self._passed_now(fid, param, depth, strict) if depth > 0 else None
        return found

    def _passed_now(self, fid: FuncId, param: str, depth: int, strict: bool) -> frozenset | None:
        flow = self.by_path[fid[0]].flows.get(fid[1])
        if flow is None or flow.fkind not in ("m", "") or fid in self.open and not (strict and self._called_here(fid, flow)) \
                or strict and not self.handed.get(fid, set()) <= COMPILERS:  # a callback: its caller passes anything
            return None
        out: set[ClassKey] = set()
        # an entry's parameters are what every call passes it; a hot function's, what its hot callers pass
        callers = [(c, s) for c, s in self.callers.get(fid, ()) if fid in self.open or self._runs_hot(c, s)]
        if not callers:
            return None
        for caller, site in callers:
            args = self._arguments(caller, site)
            if args is None:
                return None
            for arg in args:
                got = self._arg_classes(caller, flow, param, arg, depth, strict)
                if got is None:
                    return None
                out |= got
        return frozenset(out)

    def _called_here(self, fid: FuncId, flow) -> bool:
        """An entry (a capture's root, a loop's function) whose project calls are all it gets: a module
        function (handed to nothing but ``torch.compile``: :meth:`_passed_now`)."""
        return flow.fkind == "" and not flow.cls and flow.parent == ""

    def _runs_hot(self, caller: FuncId, site: CallSite) -> bool:
        loops = self.only_loops.get(caller)
        if loops is not None:
            return bool(loops & site.loops)
        return caller in self.hot or site.in_capture

    def _arguments(self, caller: FuncId, site: CallSite) -> list[tuple] | None:
        """The call IRs of ``caller``'s flow whose callee is the site's expression (every spelling)."""
        flow = self.by_path[caller[0]].flows.get(caller[1])
        if flow is None:
            return None
        found = [ir for stmt in flow.stmts for ir in _calls(stmt) if ir[1] == site.expr]
        return found or None

    def _arg_classes(self, caller: FuncId, callee_flow, param: str, call: tuple, depth: int,
                     strict: bool = False) -> frozenset | None:
        _, _, args, kws = call
        value = next((v for k, v in kws if k == param), None)  # named: no splat can pass it too
        if value is None and any(type(a) is tuple and a[:1] in (("*",), ("**",), ("*s",)) for a in (*args, *kws)):
            return None
        if value is None:
            names = callee_flow.call_params() if callee_flow.fkind == "m" else callee_flow.params
            index = names.index(param) if param in names else len(args)
            value = args[index] if index < len(args) else None
        if value is None:
            return None if strict else frozenset()  # the default: no project object
        if strict:
            return self._instance_of(caller, value, depth)
        if value[:1] == ("a",) and value[1][:1] == ("n",):
            return self._field_classes(caller, value[1][1], value[2])
        if value[:1] == ("c",):  # a call's result (``pool.step_view(slots)``): what its callees return
            return self._returned(caller, value[1])
        if value[:1] != ("n",):
            return None
        caller_flow = self.by_path[caller[0]].flows.get(caller[1])
        if caller_flow is not None and value[1] in (*caller_flow.params, *caller_flow.kwonly):
            if not rebound(caller_flow, value[1]):
                return self.passed(caller, value[1], depth - 1)
            narrowed = self._narrowed(caller, caller_flow, value[1], depth)
            if narrowed is not None:
                return narrowed
        node = self.graph.linker.var(caller[0], caller[1], value[1])
        return None if node is None else self._instances(node)

    def _instance_of(self, caller: FuncId, value: tuple, depth: int) -> frozenset | None:
        """The classes of what ``value`` (an argument ``caller`` passes) holds, each an instance, never None:
        a parameter every call fills so, a class's construction, a local bound only to constructions."""
        flow = self.by_path[caller[0]].flows.get(caller[1])
        if flow is None:
            return None
        if value[:1] == ("c",):
            return self._constructed(caller, value[1])
        if value[:1] != ("n",):
            return None
        name = value[1]
        if name in (*flow.params, *flow.kwonly):
            if not rebound(flow, name):
                return self.passed(caller, name, depth - 1, strict=True)
            return self._narrowed(caller, flow, name, depth)
        binds = [stmt[2] for stmt in flow.stmts if stmt[:2] == ("=", ("n", name)) and (stmt[2] or ("",))[0] not in ANNOTATED]
        out: set[ClassKey] = set()
        for bound in binds or (None,):
            got = self._constructed(caller, bound[1]) if bound is not None and bound[0] == "c" else None
            if got is None:
                return None
            out |= got
        return frozenset(out)

    def _constructed(self, caller: FuncId, func: tuple) -> frozenset | None:
        """The classes a call of ``func`` builds, when it holds classes only (a project name, ``Cls(...)``)."""
        if func[:1] != ("n",):
            return None
        node = self.graph.linker.var(caller[0], caller[1], func[1])
        solver = self.graph.solver
        if node is None or node in solver.full or not solver.pts.get(node):
            return None
        values = list(solver.values(node))
        if any(v[0] != "C" or self._ref((v[1], v[2])) is None for v in values):
            return None
        return frozenset((v[1], v[2]) for v in values)

    def _narrowed(self, caller: FuncId, flow, name: str, depth: int) -> frozenset | None:
        """A parameter rebound only under ``if not isinstance(name, C):`` (:mod:`.typenarrow`): the classes
        every call passes, where each is an instance of ``C`` (the rebindings never run); None otherwise."""
        guards = [flow.unless.get(i) for i, stmt in enumerate(flow.stmts)
                  if stmt[:2] == ("=", ("n", name)) and (stmt[2] or ("",))[0] not in ANNOTATED]
        if not guards or None in guards:
            return None
        entry = self.passed(caller, name, depth - 1, strict=True)
        if not entry:
            return None
        for irs in set(guards):
            kinds: set[ClassKey] = set()
            for ir in irs:
                got = self._constructed(caller, ir)
                if got is None:
                    return None
                kinds |= got
            if not all(any((info.path, cls) in kinds for info, cls in self.index.mro(self._ref(c))) for c in entry):
                return None
        return entry

    def _returned(self, caller: FuncId, func: tuple) -> frozenset | None:
        callees = {callee for callee, site in self.raw.get(caller, ()) if site.expr == func and not site.reference}
        if not callees:
            return None
        out: set[ClassKey] = set()
        for path, qual in callees:
            if self.by_path[path].flows.get(qual) is None:
                return None  # a class built (its ``__init__``), a library call: not followed here
            got = self._instances(self.graph.solver.ids.get(("r", path, qual)))
            if got is None:
                return None
            out |= got
        return frozenset(out)

    def _field_classes(self, caller: FuncId, base: str, attr: str) -> frozenset | None:
        """The classes of what ``base.attr`` holds: the field along the MRO of each class ``base`` is."""
        node = self.graph.linker.var(caller[0], caller[1], base)
        owners = None if node is None else self._instances(node)
        if not owners:
            return None
        out: set[ClassKey] = set()
        ids = self.graph.solver.ids
        for cls in owners:
            nodes = [ids.get(("fd", info.path, name, attr)) for info, name in self.index.mro(self._ref(cls))]
            nodes = [n for n in nodes if n is not None]
            if not nodes:
                return None
            for field in nodes:
                got = self._instances(field)
                if got is None:
                    return None
                out |= got
        return frozenset(out)

    def _instances(self, node: int) -> frozenset | None:
        solver = self.graph.solver
        if node is None or node in solver.full or not solver.pts.get(node):
            return None
        out: set[ClassKey] = set()
        for v in solver.values(node):
            if v[0] == "I":
                out.add((v[1], v[2]))
            elif v[0] == "S":
                ref = self._ref((v[1], v[2]))
                if ref is None:
                    return None
                out.add((v[1], v[2]))
                out |= {(info.path, name) for info, name in self.index.subclasses(ref)}
            else:
                return None
        return frozenset(out)

    def _ref(self, cls: ClassKey):
        info = self.by_path.get(cls[0])
        return (info, cls[1]) if info is not None and cls[1] in info.classes else None

    def _lookups(self, classes: frozenset, attr: str) -> set[FuncId] | None:
        """The methods ``attr`` finds on instances of ``classes``; None where a lookup is not known."""
        out: set[FuncId] = set()
        for cls in classes:
            ref = self._ref(cls)
            if ref is None:
                return None
            for info, name in self.index.mro(ref):
                klass = info.classes[name]
                if attr in klass.methods:
                    out.add((info.path, f"{name}.{attr}"))
                    break
                flow = info.flows.get(name)
                if flow is not None and attr in flow.locals:
                    return None  # a class attribute: what it holds
            else:
                return None  # not found along the project MRO: a library base's, or a field's
        return out

    def _method_of_class(self, fid: FuncId) -> bool:
        info = self.by_path.get(fid[0])
        owner, _, name = fid[1].rpartition(".")
        return info is not None and owner in info.classes and name in info.classes[owner].methods


def _calls(ir) -> list[tuple]:
    """Every call IR (``("c", func, args, kwargs)``) inside ``ir``."""
    out: list[tuple] = []
    stack = [ir]
    while stack:
        node = stack.pop()
        if type(node) is not tuple:
            continue
        if node[:1] == ("c",) and len(node) == 4:
            out.append(node)
        stack.extend(part for part in node if type(part) is tuple)
    return out


def _spelled(imports: dict[str, str], via: tuple | None) -> str | None:
    """A library callee's dotted name (``("a", ("n", "torch"), "compile")`` -> ``torch.compile``)."""
    if via is None or via[:1] == ("i",):
        return via[1] if via else None
    if via[:1] == ("n",):
        return imports.get(via[1])
    if via[:1] == ("a",):
        base = _spelled(imports, via[1])
        return f"{base}.{via[2]}" if base else None
    return None


def rebound(flow, name: str) -> bool:
    """Whether the function binds ``name`` (its annotation's instance, ``("t", ...)``, is no binding)."""
    return any(stmt[:1] == ("=",) and stmt[1] == ("n", name) and (stmt[2] or ("",))[0] not in ANNOTATED
               for stmt in flow.stmts)
