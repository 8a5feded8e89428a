"""Why a call on the decode path is unresolved: what its callee's value set is rooted at.

An unresolved call (:mod:`.unresolved`) is one whose callee holds no value that runs a function.
Only some are graphlint's own gap. Walking the callee's flow facts backwards -- the assignments,
parameter bindings, field stores, returns and imports the points-to analysis solved, the same
statements (:attr:`graphlint.static.facts.ScopeFlow.stmts`) -- says where the missing value would
have come from:

* ``library``: an import no analysed module provides (a relative import of a module of the package
  outside the checked paths, an absolute one of a third-party package, an object of one): the code
  is there, only not given -- add the package's path, or give its entry with ``--entry``;
* ``callback``: a parameter no caller in the checked paths binds (an entry point's own parameter,
  a constructor argument the user passes, a callback with a ``None`` default): the user supplies it;
* ``optional``: an optional kernel or extension -- an import inside ``try: ... except
  ImportError``, a ``torch.ops.*`` custom op, a relative import of a module with no Python source
  (a compiled extension, built at install time);
* ``not-followed``: everything else -- the value comes from project code graphlint sees (a class,
  a function, a container, a computed ``getattr``, a store it cannot place) and the call graph
  still did not follow it: graphlint's own gap, the list to work on.

A callee with several roots takes the most telling: a gap anywhere makes it ``not-followed`` (a
value graphlint should have carried), then ``optional``, ``callback``, ``library``. The walk is
bounded (:data:`DEPTH` steps) and only runs for the few unresolved calls on the decode path, after
the solve: it classifies, it resolves nothing (the call graph and the counts are the same).
"""

from __future__ import annotations

import os

from graphlint.static.facts import CallSite, ModuleInfo

LIBRARY, CALLBACK, OPTIONAL, GAP = "library", "callback", "optional", "not-followed"
#: the kinds in the order the reports list them (graphlint.report.decode_path.KIND_WORDS words them)
KINDS = (LIBRARY, CALLBACK, OPTIONAL, GAP)
_RANK = {LIBRARY: 0, CALLBACK: 1, OPTIONAL: 2, GAP: 3}
DEPTH = 12  # backward steps before a root counts as not found
#: dotted prefixes that name a custom-op or extension namespace (``torch.ops.my_ext.gemm``)
EXTENSION_PREFIXES = ("torch.ops.", "torch.classes.")
FuncId = tuple[str, str]


def pick(kinds: set[str]) -> str:
    """The kind of a callee whose roots are ``kinds`` (none found: graphlint's gap)."""
    return max(kinds, key=_RANK.__getitem__) if kinds else GAP


class Provenance:
    """Answers :meth:`kind` for call sites of a solved :class:`graphlint.static.callgraph.CallGraph`;
    ``raw`` (caller -> [(callee, site)], :func:`graphlint.static.link.link`'s) gives each function's
    callers, whose arguments bind its parameters."""

    def __init__(self, graph, raw: dict[FuncId, list[tuple[FuncId, CallSite]]] | None = None):
        self.graph, self.raw = graph, raw or {}
        self.by_path: dict[str, ModuleInfo] = {info.path: info for info in graph.infos}
        self._callers: dict[FuncId, list[FuncId]] | None = None
        self._calls_in: dict[FuncId, tuple] = {}  # caller -> its call IRs (:func:`_calls`), asked per parameter
        self._sites_of: dict[FuncId, dict] = {}  # caller -> callee -> the call IRs that run it

    def kind(self, fid: FuncId, site: CallSite) -> str:
        return pick(self.roots(fid[0], fid[1], site.expr, DEPTH, set()))

    # -- the walk -------------------------------------------------------------------------------
    def roots(self, path: str, scope: str, ir, depth: int, seen: set) -> set[str]:
        if ir is None:
            return set()  # a literal, arithmetic, a call of the stdlib or torch: no callable of ours
        key = (path, scope, ir)
        if depth <= 0 or key in seen:
            return {GAP} if depth <= 0 else set()
        seen.add(key)
        tag = ir[0]
        if tag in ("n", "a"):
            dotted = self._dotted(path, scope, ir)
            if dotted is not None:
                return {self.imported(path, dotted)}
        if tag == "n":
            return self.name(path, scope, ir[1], depth, seen)
        if tag == "a":
            return self.attribute(path, scope, ir, depth, seen)
        if tag == "i":
            return {self.imported(path, ir[1])}
        if tag == "x":
            return {LIBRARY}
        if tag == "o":
            return set().union(*(self.roots(path, scope, alt, depth - 1, seen) for alt in ir[1]))
        if tag == "c":  # what a call returns: a project function's returns; else where the callee comes from
            func_roots = self.roots(path, scope, ir[1], depth - 1, seen)
            if func_roots:
                return func_roots
            return {GAP}
        if tag == "s":  # an element of a container: the container's roots, when it is no project container
            base = self.roots(path, scope, ir[1], depth - 1, seen)
            return base or {GAP}
        return {GAP}  # a def, a class, a container literal, ``self``, ``super()``, ``getattr(x, name)``...

    def _dotted(self, path: str, scope: str, ir) -> str | None:
        """``ir`` as the dotted name an import gives it, relative dots kept (``._C.kern``,
        ``torch.ops.ext.gemm``), or None: its root is no imported name (or a function's own
        variable of that name: a parameter, an assignment)."""
        attrs = []
        while ir[0] == "a":
            attrs.append(ir[2])
            ir = ir[1]
        if ir[0] != "n":
            return None
        info = self.by_path[path]
        name = ir[1]
        flow = info.flows.get(scope)
        if flow is not None and scope != "<module>" and (
                name in _params(flow) or any(st[0] == "=" and st[1] == ir and (st[2] or ("",))[0] != "i"
                                             for st in flow.stmts)):
            return None
        if name in info.imports:
            return ".".join((info.imports[name], *reversed(attrs)))
        return None

    def name(self, path: str, scope: str, name: str, depth: int, seen: set) -> set[str]:
        flows = self.by_path[path].flows
        while True:
            flow = flows.get(scope)
            if flow is not None and name in flow.locals:
                found = self._stores(path, scope, flow, ("n", name), depth, seen)
                if scope != "<module>" and name in _params(flow) and not _is_self(flow, name):
                    found |= self.parameter(path, scope, flow, name, depth, seen)
                elif not found and not _bound(flow, ("n", name)):
                    return {LIBRARY}  # bound only from what the flow facts drop: a call of the standard
                    # library or torch (``loop = asyncio.get_running_loop()``), a literal's method
                return found or {GAP}
            if flow is None or scope == "<module>" or not flow.parent:
                break
            scope = flow.parent
        module = flows.get("<module>")
        if module is not None and name in module.locals and scope != "<module>":
            return self._stores(path, "<module>", module, ("n", name), depth, seen) or {GAP}
        return {GAP}

    def _stores(self, path: str, scope: str, flow, target: tuple, depth: int, seen: set) -> set[str]:
        found: set[str] = set()
        for stmt in flow.stmts:
            if stmt[0] == "=" and stmt[1] == target:
                found |= self.roots(path, scope, stmt[2], depth - 1, seen)
        return found

    def attribute(self, path: str, scope: str, ir: tuple, depth: int, seen: set) -> set[str]:
        base, attr = ir[1], ir[2]
        flow = self.by_path[path].flows.get(scope)
        if base[0] == "n" and flow is not None and _is_self(flow, base[1]):
            return self.field(path, flow.cls, attr, depth, seen)
        return self.roots(path, scope, base, depth - 1, seen)  # a method of what the object is

    def field(self, path: str, cls: str, attr: str, depth: int, seen: set) -> set[str]:
        """Every store of ``self.<attr>`` in the class's family (its MRO and subclasses), and a
        class-body binding; none: graphlint's gap (or a library base's, which :mod:`.objects`
        already resolves)."""
        info = self.by_path[path]
        index = self.graph.index
        family = list(index.mro((info, cls))) + list(index.subclasses((info, cls)))
        found: set[str] = set()
        recorded = written = False
        for owner, name in family:
            written = written or f"{name}:{attr}" in owner.attr_writes
            for qual, flow in owner.flows.items():
                if flow.kind == "class" and qual == name and attr in flow.locals:
                    recorded = recorded or _bound(flow, ("n", attr))
                    found |= self._stores(owner.path, qual, flow, ("n", attr), depth, seen)
                elif flow.kind == "function" and flow.cls == name and flow.params:
                    target = ("a", ("n", flow.params[0]), attr)
                    recorded = recorded or _bound(flow, target)
                    found |= self._stores(owner.path, qual, flow, target, depth, seen)
        if not recorded and written:  # stored, never from a value the flow facts keep: a library's object
            return {LIBRARY}          # (``self.group = dist.new_group(...)``)
        return found

    def parameter(self, path: str, qual: str, flow, name: str, depth: int, seen: set) -> set[str]:
        """What the callers in the checked paths bind to a parameter; none binds it: the user's."""
        found: set[str] = set()
        bound = False
        for caller in self.callers((path, qual)):
            for arg in self._arguments(caller, (path, qual), flow, name):
                bound = True
                found |= self.roots(caller[0], caller[1], arg, depth - 1, seen)
        return found if bound else {CALLBACK}

    # -- callers --------------------------------------------------------------------------------
    def callers(self, fid: FuncId) -> list[FuncId]:
        if self._callers is None:
            self._callers = {}
            for caller, edges in self.raw.items():
                for callee, site in edges:
                    if not site.reference and callee != caller:
                        self._callers.setdefault(callee, []).append(caller)
        return sorted(set(self._callers.get(fid, ())))

    def _arguments(self, caller: FuncId, callee: FuncId, flow, name: str) -> list:
        """The argument IRs each call in ``caller`` that runs ``callee`` passes for ``name``."""
        info = self.by_path.get(caller[0])
        cflow = info.flows.get(caller[1]) if info is not None else None
        if cflow is None:
            return []
        by_callee = self._sites_of.get(caller)
        if by_callee is None:  # asked per parameter of every callee, as the calls below
            by_callee = self._sites_of[caller] = {}
            for c, site in self.raw.get(caller, ()):
                by_callee.setdefault(c, set()).add(site.expr)
        targets = by_callee.get(callee, frozenset())
        first = 1 if flow.cls and flow.fkind in ("m", "p", "c") else 0
        position = flow.params.index(name) - first if name in flow.params else -1
        out = []
        calls = self._calls_in.get(caller)
        if calls is None:  # every parameter of every callee asks again: walked once (on torch, 561,724 asks)
            calls = self._calls_in[caller] = tuple(_calls(cflow.stmts))
        for call in calls:
            if call[1] not in targets:
                continue
            args, kws = call[2], call[3]
            if 0 <= position < len(args) and not any(a is not None and a[0] == "*" and len(a) == 2
                                                     for a in args[:position + 1]):
                out.append(args[position])
            for key, value in kws:
                if key == name or key == "**":
                    out.append(value)
            for a in args:
                if a is not None and a[0] == "*" and len(a) == 2:
                    out.append(a[1])  # ``f(*args)``: whatever the spread holds
        return out

    # -- imports -------------------------------------------------------------------------------
    def imported(self, path: str, dotted: str) -> str:
        info = self.by_path[path]
        if _optional(info, dotted):
            return OPTIONAL
        absolute = self.graph.index.absolute(info, dotted) if dotted.startswith(".") else dotted
        if absolute.startswith(EXTENSION_PREFIXES):
            return OPTIONAL
        parts = absolute.split(".")
        for cut in range(len(parts), 0, -1):
            if self.graph.index.find_module(".".join(parts[:cut])) is not None:
                return GAP  # a module graphlint analyses: the name should have resolved
        if dotted.startswith("."):
            return LIBRARY if _source_on_disk(path, dotted) else OPTIONAL
        return LIBRARY


def _bound(flow, target: tuple) -> bool:
    """Whether a statement of ``flow`` binds ``target`` from a value the flow facts keep."""
    return any(stmt[0] == "=" and stmt[1] == target for stmt in flow.stmts)


def _params(flow) -> tuple[str, ...]:
    return (*flow.params, *flow.kwonly, *(n for n in (flow.vararg, flow.kwarg) if n))


def _is_self(flow, name: str) -> bool:
    return bool(flow.cls) and flow.fkind in ("m", "p", "c") and bool(flow.params) and flow.params[0] == name


def _optional(info: ModuleInfo, dotted: str) -> bool:
    """Whether ``dotted`` (or a module it is read from) was imported inside ``try: ... except ImportError``."""
    optional = getattr(info, "optional_imports", ())
    return any(dotted == o or dotted.startswith(o + ".") for o in optional)


def _source_on_disk(path: str, dotted: str) -> bool:
    """Whether a relative import from ``path`` names Python source that exists (a module of the
    package outside the checked paths) rather than nothing or a compiled extension (``_C.so``)."""
    level = len(dotted) - len(dotted.lstrip("."))
    base = os.path.dirname(path) or "."
    for _ in range(level - 1):
        base = os.path.dirname(base) or "."
    parts = [p for p in dotted.lstrip(".").split(".") if p]
    for cut in range(len(parts), 0, -1):
        where = os.path.join(base, *parts[:cut])
        if os.path.isfile(where + ".py") or os.path.isfile(os.path.join(where, "__init__.py")):
            return True
    return False


def _calls(stmts):
    """Every call IR (``("c", func, args, kws)``) inside a scope's statements, nested ones too."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if type(node) is not tuple or not node:
            continue
        if node[0] == "c" and len(node) == 4:
            yield node
        stack.extend([x for x in node if type(x) is tuple])
