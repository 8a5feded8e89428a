"""The whole-program call graph: every call site's targets, from the points-to analysis.

:class:`CallGraph` compiles every file's flow facts (:mod:`.flowlink`), solves them to a fixpoint
(:mod:`.pointsto`) and answers, per call site the walker recorded (:class:`CallSite`, whose
``expr`` is the callee in :mod:`.flowir` form), which functions it may run: what calling each
value that reaches the callee does (:meth:`graphlint.static.objects.Objects.callees`: a function,
a bound method, a class's ``__init__``, an instance's ``forward``/``__call__``, a partial's
function, every element of an ``nn.Sequential``). A callback passed as an argument
(``reference`` sites) is the functions and bound methods it holds, never a class, and an edge of
its own only when a library receives it on this thread: one handed to a project function is
followed through that function's parameter, one handed to ``threading.Thread`` or an executor
runs elsewhere.

This is the only call resolution: name resolution (:class:`graphlint.static.index.Index`) is not
unioned in. It answers two questions no value flow can -- which module a dotted import names, and
each class's bases (the MRO, and the subclasses whose overrides a call on ``self`` may run) --
and the points-to asks it both while solving.

:attr:`CallGraph.unresolved` is, per function, the call sites that look like calls into the
project -- on ``self``, a local, a parameter, an attribute, a relative import (``CallSite.plain``)
-- whose callee holds no value: the places where graphlint cannot see what runs. Calls of
``torch.*``, tensor methods, builtins, the standard library and other imports from outside the
project are never counted (they are not marked ``plain``, their root is an import that no
analysed module provides, or the callee holds a library object: ``self.proj = nn.Linear(...)``).
"""

from __future__ import annotations

import builtins

from graphlint.static.compilemodes import COMPILED_GRAPH, mark_compiled
from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.flowlink import Linker
from graphlint.static.index import Index
from graphlint.static.installed import Installed
from graphlint.static.libblocks import LibraryBlocks
from graphlint.static.libloops import GENERATE
from graphlint.static.policies import Policies
from graphlint.static.objects import FOREIGN, Objects
from graphlint.static.passedcalls import names, parameter_calls
from graphlint.static.pointsto import Solver

FuncId = tuple[str, str]
IMPLICIT = ("implicit",)  # the callee of an implicit call's site (:meth:`CallGraph.implicit_sites`)


BUILTIN_NAMES = frozenset(dir(builtins))
#: what a table handed over as a callback may hold that its receiver calls
CALLBACKS = ("F", "M", "W", "Pa")


def capturing_functions(infos: list[ModuleInfo]) -> frozenset[tuple[str, str]]:
    """(path, qualname) of every function that opens a CUDA-graph capture."""
    return frozenset((i.path, q) for i in infos for q, fn in i.functions.items() if fn.captures)


def recording_only(infos: list[ModuleInfo]) -> frozenset[tuple[str, str]]:
    """Capturing functions that never replay: a call of one records a graph once (set-up), and reaches a
    replay only where flow-insensitive values alias the wrapper it installs (``self._orig = model.forward``
    kept before ``model.forward = self``, captured, then reaching the wrapper's replay): never a replay point."""
    return frozenset((i.path, q) for i in infos for q, fn in i.functions.items() if fn.captures and not fn.replay_order)


def captured_roots(infos: list[ModuleInfo]) -> dict[tuple[str, str], frozenset[str]]:
    """Per capturing function, the names a captured call is made through (``model`` of
    ``model.forward(...)``, ``_callable`` of ``_callable()``): what the capture runs, whose values
    the solver keeps up to ``ELEMENT_CAP`` (:attr:`.Solver.capture_roots`)."""
    out: dict[tuple[str, str], frozenset[str]] = {}
    for info in infos:
        for qual, fn in info.functions.items():
            if fn.captures:
                names = {root_name(site.expr) for site in fn.calls if site.in_capture}
                out[(info.path, qual)] = frozenset(n for n in names if n is not None)
    return out


def root_name(ir: tuple | None) -> str | None:
    """The local a callee expression starts from (``self.runner.model.forward`` -> ``self``)."""
    while ir is not None and ir[0] in ("a", "s", "c"):
        ir = ir[1]
    return ir[1] if ir is not None and ir[0] == "n" else None


class CallGraph:
    def __init__(self, infos: list[ModuleInfo], index: Index):
        self.infos, self.index = infos, index
        self.solver = Solver()
        self.solver.capture_roots = captured_roots(infos)
        self.by_path = by_path = {info.path: info for info in infos}
        self.objects = Objects(self.solver, index, by_path, _self_fields(infos))
        self.linker = Linker(infos, index, self.objects)
        #: functions that call a parameter (:mod:`.passedcalls`), and per caller what they run for it
        self.helpers = parameter_calls(infos)
        self.passed: dict[FuncId, dict[tuple, list[FuncId]]] = {}
        self.linker.keep_args = names(self.helpers)
        #: code installed into library or unknown modules, and the calls that may run it (:mod:`.installed`)
        self.installed = self.linker.installed = Installed(self.objects)
        #: methods policy records replace; the library-tied ones are weak targets (:mod:`.policies`)
        self.policies = self.linker.policies = Policies(self.objects)
        #: what calling a project module whose forward is a library's runs (:mod:`.libblocks`)
        self.blocks = LibraryBlocks(self.objects)
        self.linker.compile_all()
        self._compile_queries(infos)
        self.linker.swaps.release(self.objects.store, self.linker.family)  # the held field stores of methods some code names
        #: ids of the torch.compile regions that capture (a CUDA-graph mode, read from settings too)
        self.graph_compiles = mark_compiled(infos, self.linker, self.solver)
        self._compiled_sites: dict[FuncId, list[CallSite]] | None = None
        #: (caller, id of the callee IR) of the sites whose only targets are installed guesses
        self.guessed: set[tuple[FuncId, int]] = set()
        self._pool: list[FuncId] | None = None
        self.linker.forget()  # the compile memo is most of the memory the solve does not need
        self.solver.run()
        while self.linker.settle() and not self.solver.exhausted:  # imports by string (:mod:`.classpaths`)
            self.solver.run()
        self.solver.done()  # frees the watchers: nothing is compiled or solved after this
        self.objects.from_library, self.linker.implicit.bound_memo = {}, {}  # the solve's memos: not held to the peak
        #: function -> its call sites that look like project calls but resolve to nothing
        self.unresolved: dict[FuncId, list[CallSite]] = {}
        #: (function, callee IR) -> the methods a call on an open receiver was given (:mod:`.openreceivers`)
        self.by_class: dict[tuple[FuncId, tuple], tuple[FuncId, ...]] = {}
        self._callees: dict[tuple[int, bool], list[FuncId]] = {}

    def _compile_queries(self, infos: list[ModuleInfo]) -> None:
        """The expressions the call graph will be asked about that no statement compiled (the callee
        of a call without arguments, a callable passed as a value, a region's callable), compiled
        before the one solve."""
        linker = self.linker
        for info in infos:
            flows = info.flows
            for qual, fn in info.functions.items():
                if qual not in flows:
                    continue
                exprs = [site.expr for site in fn.calls] + [e for loop in (*fn.loops, *fn.serve_loops) for e in loop.exprs]
                exprs += [site.via for site in fn.calls if site.via is not None and site.via[0] != "i"]
                exprs += [site.expr[1] for site in fn.calls if site.expr[0] == "s"]  # ``kernel[grid]``: :meth:`builds`
                exprs += [site.expr[1] for site in fn.calls if site.expr[0] == "a" and site.expr[2] == GENERATE]  # :mod:`.libloops`
                for expr in exprs:
                    linker.eval(info.path, qual, expr, keep=True)
                if fn.captures:  # what the capture calls is never cut at 16 (:attr:`.Solver.capture_roots`)
                    for site in fn.calls:
                        if site.in_capture:
                            self.solver.elementwise(linker.eval(info.path, qual, site.expr, keep=True))
                            if site.expr[0] == "a":  # its receiver: which classes it runs on (:mod:`.receiverclasses`)
                                linker.eval(info.path, qual, site.expr[1], keep=True)
            for region in info.regions:
                if region.function in flows:
                    linker.eval(info.path, region.function, region.expr, keep=True)
            for qual, _, *exprs in info.denorm:  # a weight_norm removal's tree (:mod:`.denorm`)
                for expr in (e for e in exprs if e is not None and qual in flows):
                    linker.eval(info.path, qual, expr, keep=True)

    def node(self, path: str, qual: str, expr: tuple) -> int | None:
        """The solver's node for ``expr`` in scope ``qual`` of ``path`` (None: not compiled)."""
        return self.linker.known(path, qual, expr)

    def callees(self, node: int, classes: bool = True, tables: bool = False) -> list[FuncId]:
        """What calling the values of ``node`` runs (``classes=False``: a callback passed as a
        value, whose class would not be called; ``tables``: a container passed so hands over the
        functions it holds)."""
        key = (node, classes, tables)
        known = self._callees.get(key)
        if known is None:
            known = self._callees[key] = self._resolve(node, classes, tables)
        return known

    def _resolve(self, node: int, classes: bool, tables: bool = False) -> list[FuncId]:
        return self.resolve_values(self.solver.values(node), classes, tables)

    def resolve_values(self, values: list, classes: bool = True, tables: bool = False) -> list[FuncId]:
        """What calling any of ``values`` runs (the list is extended in place: pass a copy)."""
        found: dict[FuncId, None] = {}
        for value in values:
            if not classes and value[0] == "C":
                continue
            if value[0] == "L" and value[3]:  # ``nn.Sequential``: calling it calls every element
                values.extend(v for v in self.solver.values(self.objects.elems(value)) if v not in values)
            elif value[0] == "L" and tables:  # a table of callbacks handed over (``CLI(COMMANDS)``): the
                # functions and bound methods it holds (not its modules: ``len(self.layers)`` runs none)
                values.extend(v for v in self.solver.values(self.objects.elems(value))
                              if v[0] in CALLBACKS and v not in values)
            hits = self.objects.callees(value)
            for fid, _, _ in hits:
                if fid is not None:
                    found[fid] = None
            called = self.objects._views.get(("called", value)) if value[0] in ("I", "S") else (
                self.objects.generated.hook_of(value) if value[0] == "C" and classes else None)
            own = [fid for method in (self.solver.values(called) if called is not None else ())
                   for fid, _, _ in self.objects.callees(method) if fid is not None]
            found.update(dict.fromkeys(own))  # ``self.forward = self.gated_forward``: the method it picked
            if not hits and classes and not own:  # a library block's forward: the project modules it holds (:mod:`.libblocks`)
                found.update(dict.fromkeys(self.blocks.runs(value)))
        return sorted(found)

    def targets(self, path: str, qual: str, site: CallSite) -> list[FuncId]:
        """The functions ``site`` (a call site of ``qual`` in ``path``) may run, by points-to."""
        node = self.node(path, qual, site.expr)
        if node is None:
            return []
        if site.reference and site.via is not None and (self.runs_project(path, qual, site.via)
                                                        or self.linker.background(path, qual, site.via)):
            return []  # handed to a project function (its parameter carries it to where it is called) or
            # to another thread
        # a builtin that takes a table (``len(COMMANDS)``, ``sorted(self.hooks)``) calls none of it
        tables = site.reference and not (site.via is not None and site.via[0] == "n" and site.via[1] in BUILTIN_NAMES)
        found, values = self.callees(node, classes=not site.reference, tables=tables), self.solver.values(node)
        if site.in_capture and found and all(self.replays(f) for f in found):
            found, values = [], [v for v in values if not all(map(self.replays, self.resolve_values([v])))]
        if not found and not site.reference and self.installed.runs(values, site.expr) \
                and self.pool() and not self.external(path, qual, site.expr) \
                and not self.builds(path, qual, site.expr):
            self.guessed.add(((path, qual), id(site.expr)))
            return self.pool()  # a library or unknown module: what was installed into one
        wrapped = self.linker.wrapped.get((path, qual))
        if wrapped:  # a decorator's wrapper calling what it wraps: the wrapped value's call runs that
            found = [fid for fid in found if fid not in wrapped]
        return found

    def replays(self, fid: FuncId) -> bool:
        """Whether ``fid`` replays a graph. A capture never reaches one: where its call resolves only to
        replaying functions, the callable it records is a wrapper's alias (``self._orig = model.forward``
        kept before ``model.forward = self``, flow-insensitive): what the capture runs is the rest of
        the values, a library model's forward -- and the code installed into it (:mod:`.installed`)."""
        info = self.by_path.get(fid[0])
        fn = info.functions.get(fid[1]) if info is not None else None
        return fn is not None and bool(fn.replay_order)

    def pool(self) -> list[FuncId]:
        """What a call of a library or unknown module may run: the code installed into one, and the
        ``forward`` replacements of policy records tied to no project class (weak: :meth:`weak`)."""
        if self._pool is None:
            self._pool = sorted(set(self.installed.targets()) | set(self.policies.library()))
        return self._pool

    def weak(self) -> set[FuncId]:
        """Replacements only a weakly tied policy record supplies: evidence through them is weak."""
        return set(self.policies.weak()) - set(self.installed.targets())

    def compiled_sites(self) -> dict[FuncId, list[CallSite]]:
        """Per function, its calls of a callable compiled with CUDA graphs (:mod:`.compilemodes`):
        whatever name, parameter, field or return carried it there, each such call replays."""
        if self._compiled_sites is None:
            self._compiled_sites = {}
            for info in self.infos if self.graph_compiles else ():
                for qual, fn in info.functions.items():
                    found = [site for site in fn.calls if not (site.reference or site.in_capture)
                             and self.holds_compiled(info.path, qual, site.expr)]
                    if found:
                        self._compiled_sites[(info.path, qual)] = found
        return self._compiled_sites

    def holds_compiled(self, path: str, qual: str, expr: tuple) -> bool:
        node = self.node(path, qual, expr)
        return node is not None and COMPILED_GRAPH in self.solver.values(node)

    def runs_graph(self, caller: FuncId, site: CallSite) -> bool:
        """Whether this call (an edge's site) calls a callable compiled with CUDA graphs."""
        return any(s.expr is site.expr for s in self.compiled_sites().get(caller, ()))

    def runs_wrapped(self, path: str, qual: str, site: CallSite) -> bool:
        """Whether ``site`` is a decorator's wrapper calling what it wraps (``return fn(*a)``): no
        edge of its own (each caller of the decorated function runs the one it decorates, through
        the wrapped value), and no blind spot either."""
        wrapped = self.linker.wrapped.get((path, qual))
        node = self.node(path, qual, site.expr) if wrapped else None
        return node is not None and any(fid in wrapped for fid in self.callees(node, classes=not site.reference))

    def implicit_sites(self, info: ModuleInfo, qual: str) -> list[tuple[FuncId, CallSite]]:
        """What ``qual`` runs without a call expression (:mod:`.implicit`: a property's getter,
        ``__getitem__``...), each with a call site of no particular statement, in every loop of
        the function (a function hot only in its loops runs them when one of its loops is hot)."""
        found = self.linker.implicit.edges.get((info.path, qual))
        if not found:
            return []
        fn = info.functions.get(qual)
        site = CallSite(IMPLICIT, loops=frozenset(loop.id for loop in fn.loops) if fn is not None else frozenset())
        return [(fid, site) for fid in sorted(found)]

    def runs_project(self, path: str, qual: str, expr: tuple) -> bool:
        """Whether calling ``expr`` (in ``qual`` of ``path``) runs some function of the project."""
        node = self.linker.known(path, qual, expr)
        return node is not None and bool(self.callees(node))

    def site_targets(self, info: ModuleInfo, qual: str, site: CallSite) -> list[FuncId]:
        """The call graph's edges out of one call site (its points-to targets); recorded in
        :attr:`unresolved` when it looks like a project call and runs nothing."""
        found = self.targets(info.path, qual, site)
        if (not found or found is self._pool) and site.plain and not site.reference and not self.external(info.path, qual, site.expr) \
                and not self.foreign(info.path, qual, site.expr) and not self.builds(info.path, qual, site.expr) \
                and not self.runs_wrapped(info.path, qual, site):
            self.unresolved.setdefault((info.path, qual), []).append(site)
        return found

    def foreign(self, path: str, qual: str, expr: tuple) -> bool:
        """Whether the callee holds a library object (``self.proj = nn.Linear(...)``, ``tok: Tokenizer``);
        never a computed ``getattr(self, name)``, which may pick any field, one of them a library's."""
        if expr[0] == "g":
            return False
        node = self.node(path, qual, expr)
        return node is not None and FOREIGN in self.solver.values(node)

    def builds(self, path: str, qual: str, expr: tuple) -> bool:
        """Whether the callee holds a project class -- constructing a record (a dataclass, a
        ``NamedTuple``, a class whose ``__init__`` is a library's) runs no project code the call
        graph misses (``MatchResult(...)``) -- or launches a project kernel: no blind spot either."""
        node = self.node(path, qual, expr)
        if node is not None and any(v[0] == "C" for v in self.solver.values(node)):
            return True
        # a kernel launch, ``kernel[grid](...)`` of a project ``@triton.jit`` function: device code,
        # which the call graph does not follow by design (docs/check.md, kernel-DSL code)
        base = self.node(path, qual, expr[1]) if expr[0] == "s" else None
        return base is not None and any(v[0] in ("F", "W") for v in self.solver.values(base))

    def loop_targets(self, info: ModuleInfo, qual: str, loop) -> list[FuncId]:
        """What a per-token loop's feeding calls run."""
        found: dict[FuncId, None] = {}
        passed = self.passed.get((info.path, qual), {})
        for expr in loop.exprs:
            found.update(dict.fromkeys(self.targets(info.path, qual, CallSite(expr))))
            found.update(dict.fromkeys(passed.get(expr, ())))  # what a helper runs for this caller
        return list(found)

    def region_functions(self, info: ModuleInfo, region) -> list[FuncId]:
        """What a declared region runs (``Region(name, fn)``, ``torch.compile(fn)``,
        ``make_graphed_callables(fn)``): the callables ``fn`` holds -- a method, a ``partial``'s
        function, the closures a factory call returns (``self._graph_a_fn(i)``)."""
        node = self.node(info.path, region.function, region.expr)
        if node is None:
            return []
        # ``torch.compile(lambda x: model(x))``: the lambda is a function of its own (:mod:`.flows`), the
        # compiled root; ``model``'s forward is graph code as its callee, and a direct ``model(x)``
        # elsewhere calls no compiled root (measured: torchchat eval's eager multimodal loop)
        return self.callees(node, classes=False)

    def handed(self, info: ModuleInfo, qual: str) -> list[tuple[FuncId, int]]:
        """(callable, statement ordinal) for every function or bound method ``qual`` passes as an
        argument (``runner.capture(self._token_forward, x)``), whoever receives it."""
        found = []
        for site in info.functions[qual].calls:
            if site.reference:
                node = self.node(info.path, qual, site.expr)
                found.extend((fid, site.order) for fid in (self.callees(node, classes=False) if node else ()))
        return found

    def record_inits(self) -> set[FuncId]:
        """The ``__init__`` wrappers a metaclass installed on dataclasses (:mod:`.generated`): a
        dataclass is a record, built wherever one is needed (a model's output, every step), so the
        ``__init__`` name does not make them set-up code the way a module's constructor is."""
        found = set()
        for node in self.objects.generated.hooked.values():
            found.update((v[1], v[2]) for v in self.solver.values(node) if v[0] == "F")
        return found

    def instantiated(self) -> set[tuple[str, str]]:
        """(path, class) of every class some analysed code calls (builds an instance of)."""
        return self.objects.made

    def external(self, path: str, qual: str, expr: tuple) -> bool:
        """Whether the callee is rooted at an import no analysed module provides."""
        root = expr
        while root[0] in ("a", "s"):
            root = root[1]
        if root[0] != "n":
            return False
        name = self.linker.static_name(path, qual, root)
        if name is None:
            return False
        if name.startswith("builtins."):
            return True
        parts = name.split(".")
        return not any(self.index.find_module(".".join(parts[:cut])) is not None
                       or ".".join(parts[:cut]) in self.linker.packages for cut in range(len(parts), 0, -1))

    def unresolved_count(self, functions) -> int:
        """Unresolved project calls inside ``functions`` (e.g. the decode path)."""
        return sum(len(self.unresolved.get(fid, ())) for fid in functions)

    def unresolved_in(self, hot) -> list[tuple[FuncId, CallSite]]:
        """The unresolved calls of the ``hot`` functions (function -> None for all of it, or the
        ids of the loops whose calls are hot: a per-token loop's body), one per callee spelling,
        sorted by function; ``flowir.render(site.expr)`` spells the callee (``self.model_forward``).
        A call made inside a capture is decode code wherever its function is cold (a capture routine
        is set-up): one that resolves to nothing is listed too, or the region would vanish unseen."""
        found = []
        capturing = {fid for fid, sites in self.unresolved.items() if any(s.in_capture for s in sites)}
        for fid in sorted(set(hot) | capturing):
            loops, seen = hot.get(fid), set()
            for site in self.unresolved.get(fid, ()):
                shown = site.in_capture if fid not in hot else loops is None or bool(site.loops & loops)
                if not shown or site.expr in seen:
                    continue
                seen.add(site.expr)
                found.append((fid, site))
        return found


def _self_fields(infos: list[ModuleInfo]) -> dict[tuple[str, str], set[str]]:
    """(path, class) -> attributes its methods store on ``self`` (``self.x = ...``)."""
    out: dict[tuple[str, str], set[str]] = {}
    for info in infos:
        for flow in info.flows.values():
            if flow.kind != "function" or not flow.cls:
                continue
            for stmt in flow.stmts:
                target = stmt[1] if stmt[0] == "=" else None
                if target is not None and target[0] == "a" and target[1] == ("n", "self"):
                    out.setdefault((info.path, flow.cls), set()).add(target[2])
    return out
