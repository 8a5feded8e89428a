"""Which implementation a captured call runs, where the capture is guarded by a test of its class.

An engine with several implementations of one part (a registry of backbones an option picks at
load, ``self.backbone = backbone_cls(config)``) may capture its step only when the one it built
supports it: ``if not allow_graphs: return self._logits(x)`` before the capture, every caller
passing ``allow_graphs=self.graphable()``, which returns ``... and "_fused" in
str(self.backbone.__class__)``. The points-to analysis is context-insensitive: the captured
``self.backbone(h)`` runs every class stored in the field, so the portable implementation's
host-int cache writes were rated as captured. They never are.

The fact used is sound for the object the capturing method runs on: a test of the class of
``self.f`` (:mod:`.classtests`) holds at a capture when the capture's site is under it -- directly,
through a local bound from it, a method whose every ``return`` implies it, or a parameter every
caller fills from one of those -- and ``self.f`` is bound only in ``__init__`` (nothing else in
the project stores an attribute of that name), so the test is true for the object's life. From
the capture on, through calls on the same ``self`` (``self._logits(...)``, a closure of the
capturing method), a call of ``self.f(...)`` / ``self.f.m(...)`` runs only the methods of classes
that pass the test: a target whose class and every subclass of it in the project fail it is not a
captured edge. Nothing changes where any link is missing (an unknown caller, a default value, a
test of something else, a field rebound later); the edge stays in every other context.
"""

from __future__ import annotations

from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.index import Index
from graphlint.static.names import module_name

FuncId = tuple[str, str]
Calls = dict[FuncId, list[tuple[FuncId, CallSite]]]
SELF = ("n", "self")
DEPTH = 4  # parameters and locals followed back at most this far
#: what hands a function on to its own callers unchanged: a reference passed to them is no caller
WRAPPERS = ("torch.compile", "compile", "functools.wraps", "wraps")


def _module_names(path: str) -> list[str]:
    """``a/b/c.py`` -> ``a.b.c``, ``b.c``, ``c`` (the package root is not known), and ``__main__``."""
    parts = module_name(path).split(".")
    return [".".join(parts[i:]) for i in range(len(parts))] + ["__main__"]


class ClassGuards:
    def __init__(self, infos: list[ModuleInfo], index: Index, calls: Calls, graph):
        self.by_path = {info.path: info for info in infos}
        self.index, self.calls, self.graph = index, calls, graph
        self.callers: dict[FuncId, set[FuncId]] = {}
        for caller, edges in calls.items():
            for callee, site in edges:
                if not site.reference:
                    self.callers.setdefault(callee, set()).add(caller)
        self._handed: set[FuncId] | None = None
        self.unstable, self.stored = _stores(infos)
        self._names: dict[str, list[tuple[str, str]]] | None = None

    def handed(self) -> set[FuncId]:
        """Functions passed as a value to what may call them with any arguments (a thread, a library,
        a project function), not to a wrapper that hands its own caller's on (``torch.compile``):
        their parameters are not only what the call graph's callers pass. Found once, when asked."""
        if self._handed is None:
            self._handed = set()
            for path, info in self.by_path.items():
                for qual, fn in info.functions.items():
                    for site in fn.calls:
                        if site.reference and not (site.via is not None and site.via[-1] in WRAPPERS):
                            node = self.graph.node(path, qual, site.expr)
                            if node is not None:
                                self._handed.update(self.graph.callees(node, classes=False))
        return self._handed

    def sites(self, caller: FuncId, callee: FuncId) -> list[CallSite] | None:
        """The caller's own call sites (its summary's, before one edge per callee merged them) that
        may run ``callee``; None where an edge has no such site (a call the points-to did not make)."""
        fn = self.fn(caller)
        if fn is None:
            return None
        found = [site for site in fn.calls if not site.reference
                 and callee in self.graph.targets(caller[0], caller[1], site)]
        return found or None

    def fn(self, fid: FuncId):
        info = self.by_path.get(fid[0])
        return info.functions.get(fid[1]) if info is not None else None

    # -- what holds at a site ----------------------------------------------------------------
    def held(self, cond: tuple, fid: FuncId, depth: int = 0) -> frozenset:
        """The class tests (``("k", field, test)``) the conjunction ``cond`` implies in ``fid``."""
        out: set = set()
        for c in cond:
            out |= self._cond(c, fid, depth)
        return frozenset(t for t in out if t[1] not in self.unstable)

    def _cond(self, c: tuple, fid: FuncId, depth: int) -> frozenset:
        kind = c[0]
        if kind == "t":
            return self._value(c[1], fid, depth)
        if kind == "and":
            return self._cond(c[1], fid, depth) | self._cond(c[2], fid, depth)
        if kind == "not" and c[1][0] == "not":
            return self._cond(c[1][1], fid, depth)
        if kind == "not" and c[1][0] == "or":  # ``if not a or b: return``: a holds after it
            return self._cond(("not", c[1][1]), fid, depth) | self._cond(("not", c[1][2]), fid, depth)
        return frozenset()

    def _value(self, v: tuple | None, fid: FuncId, depth: int) -> frozenset:
        if v is None or depth > DEPTH:
            return frozenset()
        kind = v[0]
        if kind == "mc":  # ``self.graphable()`` read as a method's answer (:mod:`.modetests`): its call
            return self._value(v[3], fid, depth)
        if kind == "k":
            return frozenset((v,))
        if kind == "l":  # a local: whichever binding it holds
            found = [self._value(value, fid, depth + 1) for value, _ in v[1]]
            return frozenset.intersection(*found) if found else frozenset()
        if kind == "r":  # a predicate: what each target's truthy result implies
            expr = v[1]
            fn = self.fn(fid)
            targets = {t for site in (fn.calls if fn is not None else ()) if site.expr == expr and not site.reference
                       for t in self.graph.targets(fid[0], fid[1], site)}
            tests = [frozenset(fn.class_tests) if fn is not None else frozenset()
                     for fn in (self.fn(t) for t in targets)]
            found = frozenset.intersection(*tests) if tests else frozenset()
            if expr[0] == "a" and expr[1][0] == "a" and expr[1][1] == SELF:  # ``self.f.supports_graphs()``
                found |= {("k", expr[1][2], ("call", expr[2]))}
            return found
        if kind == "p":
            return self._param(v[1], fid, depth)
        return frozenset()

    def _param(self, name: str, fid: FuncId, depth: int) -> frozenset:
        """What every caller's argument for parameter ``name`` implies (its default: nothing)."""
        info = self.by_path.get(fid[0])
        flow = info.flows.get(fid[1]) if info is not None else None
        callers = self.callers.get(fid, ())
        if flow is None or not callers or fid in self.handed():
            return frozenset()
        skip = 1 if flow.fkind in ("m", "c") else 0
        position = flow.params.index(name) - skip if name in flow.params else -1
        found = None
        for caller in sorted(callers):
            sites = self.sites(caller, fid)
            if sites is None:
                return frozenset()
            for spelling in (s for site in sites for s in (site.args or (None,))):
                if spelling is None:
                    return frozenset()
                positional, keywords = spelling[0], dict(spelling[1])
                if name in keywords:
                    value = keywords[name]
                elif 0 <= position < len(positional):
                    value = positional[position]
                else:
                    return frozenset()  # its default, or splatted: nothing known
                tests = self._value(value, caller, depth + 1)
                found = tests if found is None else found & tests
                if not found:
                    return frozenset()
        return found or frozenset()

    # -- the captured walk ---------------------------------------------------------------------
    def pruned(self, roots: list[tuple[FuncId, tuple]], stop: set[FuncId]) -> set[tuple[FuncId, int, FuncId]]:
        """(caller, id(site), callee) of the edges no capture runs: walked from the graph roots with
        the class tests that hold on ``self``, an edge is pruned when every way the walk reaches its
        caller rules it out."""
        start: dict[FuncId, frozenset] = {}
        for root, chain in roots:
            start.setdefault(root, None)
            tests = self._root_tests(root, chain) if len(chain) == 2 else frozenset()
            start[root] = tests if start[root] is None else start[root] & tests
        return pruned_edges(start, self.calls, stop, self._edge)

    def _edge(self, caller: FuncId, callee: FuncId, site: CallSite, tests: frozenset) -> tuple[bool, frozenset]:
        if self._ruled_out(callee, site, tests):
            return True, frozenset()
        return False, self._carried(caller, callee, site, tests)

    def _root_tests(self, root: FuncId, chain: tuple) -> frozenset:
        capturer = chain[0]
        sites = [site for site in self.sites(capturer, root) or () if site.in_capture]  # the captured calls
        if not sites:
            return frozenset()
        found = frozenset.intersection(*(self.held(site.cond, capturer) for site in sites))
        return found if all(self._same_self(capturer, root, site) for site in sites) else frozenset()

    def _carried(self, caller: FuncId, callee: FuncId, site: CallSite, tests: frozenset) -> frozenset:
        return tests if tests and self._same_self(caller, callee, site) else frozenset()

    def _same_self(self, caller: FuncId, callee: FuncId, site: CallSite) -> bool:
        """``callee``'s ``self`` is ``caller``'s: ``self.m(...)``, or a closure of the caller."""
        if callee[0] != caller[0]:
            return site.expr[0] == "a" and site.expr[1] == SELF and self._method(callee)
        if callee[1].startswith(caller[1] + "."):
            flow = self.by_path[callee[0]].flows.get(callee[1])
            return flow is not None and "self" not in flow.params
        return site.expr[0] == "a" and site.expr[1] == SELF and self._method(callee)

    def _method(self, fid: FuncId) -> bool:
        info = self.by_path.get(fid[0])
        flow = info.flows.get(fid[1]) if info is not None else None
        return flow is not None and flow.fkind == "m"

    def _ruled_out(self, callee: FuncId, site: CallSite, tests: frozenset) -> bool:
        expr = site.expr
        if expr[0] == "a" and expr[1] == SELF:
            field = expr[2]
        elif expr[0] == "a" and expr[1][0] == "a" and expr[1][1] == SELF:
            field = expr[1][2]
        else:
            return False
        mine = [t[2] for t in tests if t[1] == field]
        info = self.by_path.get(callee[0])
        owner = callee[1].rpartition(".")[0]
        if not mine or info is None or owner not in info.classes:
            return False
        family = [(info, owner), *self.index.subclasses((info, owner))]
        return not any(all(self._passes(ref, test, site) for test in mine) for ref in family)

    def _passes(self, ref: tuple[ModuleInfo, str], test: tuple, site: CallSite) -> bool:
        """Whether an instance of exactly ``ref`` may pass ``test`` (True when unsure)."""
        info, qual = ref
        kind = test[0]
        if kind in ("in", "eq"):
            part, text = test[1], test[2]
            if part == "name":
                values = [qual.rpartition(".")[2]]
            elif part == "qualname":
                values = [qual]
            elif part == "module":
                values = _module_names(info.path)
            else:
                values = [f"<class '{m}.{qual}'>" for m in _module_names(info.path)]
            return any(text in v if kind == "in" else text == v for v in values)
        if kind in ("attr", "call"):
            return self._declared(ref, test[1], kind == "call")
        if kind in ("isinstance", "is"):
            wanted = self._classes(test[1:])
            if wanted is None:
                return True
            if kind == "is":
                return (info.path, qual) in wanted
            return any((i.path, q) in wanted for i, q in self.index.mro(ref))
        return True

    def _declared(self, ref: tuple[ModuleInfo, str], name: str, called: bool) -> bool:
        """Whether ``name`` (called or not) may be truthy on an instance of ``ref``: False only where
        the first class of its MRO that binds the name declares it false and no code stores it on
        an object."""
        if name in self.stored:
            return True
        for info, qual in self.index.mro(ref):
            klass = info.classes[qual]
            if (name, called) in klass.false_members:
                return False
            flow = info.flows.get(qual)
            if name in klass.methods or (flow is not None and name in flow.locals):
                return True
        return True

    def _classes(self, names: tuple) -> set[tuple[str, str]] | None:
        """The project classes the tested names denote, in any module (None: one is no project class)."""
        if self._names is None:
            self._names = {}
            for info in self.by_path.values():
                for qual in info.classes:
                    self._names.setdefault(qual.rpartition(".")[2], []).append((info.path, qual))
        out: set[tuple[str, str]] = set()
        for name in names:
            hits = self._names.get(name.rpartition(".")[2])
            if not hits:
                return None
            out.update(hits)
        return out


def guarded_captures(infos: list[ModuleInfo]) -> bool:
    """Whether any class test can matter: a capture under some condition, and a test somewhere (a
    predicate returning one, a class declaring a capability false, a test in the capture's condition)."""
    conds = [s.cond for info in infos for fn in info.functions.values() for s in fn.calls if s.in_capture and s.cond]
    if not conds:
        return False
    return any("('k'," in repr(c) for c in conds) or any(
        fn.class_tests for info in infos for fn in info.functions.values()) or any(
        k.false_members for info in infos for k in info.classes.values())


def pruned_edges(start: dict, calls: Calls, stop: set[FuncId], edge, limit: int | None = None) \
        -> set[tuple[FuncId, int, FuncId]]:
    """The walk both captured-edge prunings share (:class:`ClassGuards`, :class:`.receiverclasses.ReceiverClasses`):
    from each root with its state (what is known of ``self`` there), every edge of a function reached
    in a true state is asked ``edge(caller, callee, site, state) -> (ruled out, the callee's state)``;
    one reached in a false state (nothing known) is kept and passes that state on. An edge is pruned
    (``(caller, id(site), callee)``) when every state that reaches its caller rules it out; past
    ``limit`` (caller, state) pairs nothing is."""
    if not any(start.values()):
        return set()
    seen: set = set()
    queue = list(start.items())
    ruled: dict[tuple[FuncId, int, FuncId], bool] = {}  # edge -> pruned in every state so far
    while queue:
        fid, state = queue.pop()
        if (fid, state) in seen or fid in stop:
            continue
        if limit is not None and len(seen) > limit:
            return set()
        seen.add((fid, state))
        for callee, site in calls.get(fid, ()):
            key = (fid, id(site), callee)
            out, carried = edge(fid, callee, site, state) if state else (False, state)
            ruled[key] = ruled.get(key, True) and out
            if not out:
                queue.append((callee, carried))
    return {key for key, out in ruled.items() if out}


def without(calls: Calls, pruned: set[tuple[FuncId, int, FuncId]]) -> Calls:
    """``calls`` less the ``pruned`` edges (the callers not touched are shared)."""
    if not pruned:
        return calls
    touched = {caller for caller, _, _ in pruned}
    out = dict(calls)
    for caller in touched:
        out[caller] = [(callee, site) for callee, site in calls[caller] if (caller, id(site), callee) not in pruned]
    return out


def _stores(infos: list[ModuleInfo]) -> tuple[set[str], set[str]]:
    """(attribute names some code other than ``self.<name> = ...`` in an ``__init__`` stores,
    attribute names any code stores)."""
    out: set[str] = set()
    every: set[str] = set()
    for info in infos:
        for qual, flow in info.flows.items():
            init = flow.kind == "function" and qual.endswith(".__init__")
            for stmt in flow.stmts:
                if stmt[0] in ("=", "set") and stmt[1] and stmt[1][0] == "a":
                    every.add(stmt[1][2])
                    if not (init and stmt[1][1] == SELF):
                        out.add(stmt[1][2])
    return out, every
