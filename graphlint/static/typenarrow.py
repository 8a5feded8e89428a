"""What an ``isinstance`` test of a parameter says about the objects it holds.

A parameter rebound only where the test fails: ``if not isinstance(past, Cache): past = DynamicCache()``.

The points-to analysis is flow-insensitive: ``past`` holds every value any binding gives it, so a method
called on it after the ``if`` runs the ``DynamicCache``'s even where every caller passes a cache object (a
``StaticCache``) and the rebinding never runs. While walking, :class:`.flows.FlowRecorder` notes each binding
of a parameter made in the body of an ``if`` whose test requires ``not isinstance(name, C)`` (the test, or
one conjunct of an ``and``; nested ``if``\\ s inside that body too): ``ScopeFlow.unless`` maps the binding's
statement to the class expressions. :mod:`.hotreceivers` drops those bindings where every value the callers
pass is an instance of ``C`` -- always an explicit argument, never a default, a literal or a field that may
hold ``None`` -- and keeps the whole name everywhere else.

A method called where the test holds: ``if isinstance(cache, Paged): cache.evict(n)`` runs the ``evict``
of ``Paged``, a subclass or a base of one -- whatever the points-to set of ``cache`` holds besides.
``ScopeFlow.only`` keeps, per spelling of such a call on a parameter, the class expressions (None where
some call so spelled is outside every such test); :func:`outside_tests` drops the other classes' methods
from the call graph, where the parameter is never rebound.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts


def failed_tests(test: cst.BaseExpression, params: tuple[str, ...],
                 held: bool = False) -> list[tuple[str, list[cst.BaseExpression]]]:
    """(parameter, class expressions) of each ``not isinstance(param, C)`` / ``(C, D)`` the test requires
    (``held``: each ``isinstance(param, C)``)."""
    out = []
    for part in conjuncts(test):
        negated = type(part) is cst.UnaryOperation and type(part.operator) is cst.Not
        if negated == held:
            continue
        call = part.expression if negated else part
        if type(call) is not cst.Call or type(call.func) is not cst.Name or call.func.value != "isinstance" \
                or len(call.args) != 2 or any(a.keyword is not None or a.star for a in call.args):
            continue
        subject, kinds = call.args[0].value, call.args[1].value
        if type(subject) is not cst.Name or subject.value not in params:
            continue
        out.append((subject.value, [e.value for e in kinds.elements] if type(kinds) is cst.Tuple else [kinds]))
    return out


class Unless:
    """The walker's side: the ``not isinstance`` guards of the ``if`` bodies being walked, per scope depth."""

    def __init__(self) -> None:
        self.guards: list[tuple[int, str, tuple]] = []  # (scope depth, parameter, class IRs)
        self.holds: list[tuple[int, str, tuple]] = []  # the same, of tests that hold in the body
        self.bare: set[tuple[int, tuple]] = set()  # (id of the scope, callee IR) of calls outside every such test

    def begin(self, flows, test: cst.BaseExpression) -> tuple[int, int]:
        """An ``if`` body starts: how many guards and holding tests it adds (for :meth:`end` after the body)."""
        scope = flows.scope
        if scope.kind != "function":
            return (0, 0)
        added = []
        for held, into in ((False, self.guards), (True, self.holds)):
            before = len(into)
            for name, kinds in failed_tests(test, (*scope.params, *scope.kwonly), held):
                irs = tuple(flows.ir.expr(k) for k in kinds)
                if irs and None not in irs:
                    into.append((len(flows.stack), name, irs))
            added.append(len(into) - before)
        return added[0], added[1]

    def end(self, added: tuple[int, int]) -> None:
        for into, count in zip((self.guards, self.holds), added):
            if count:
                del into[-count:]

    def called(self, flows, func) -> None:
        """A call of ``func`` (callee IR): ``p.m(...)`` under ``if isinstance(p, C):`` keeps ``C`` in ``only``."""
        if func is None or func[:1] != ("a",) or func[1][:1] != ("n",) or flows.scope.kind != "function":
            return
        depth = len(flows.stack)
        irs = next((g[2] for g in reversed(self.holds) if g[0] == depth and g[1] == func[1][1]), None)
        only, key = flows.scope.only, (id(flows.scope), func)
        if irs is None:  # kept only where a tested call of it is: most calls are never tested
            self.bare.add(key)
            if func in only:
                only[func] = None
        else:
            only[func] = irs if key not in self.bare and only.get(func, irs) == irs else None

    def note(self, flows, name: str, count: int) -> None:
        """The last ``count`` statements bound ``name``: those a guard on it holds are kept in ``unless``."""
        depth = len(flows.stack)
        irs = next((g[2] for g in reversed(self.guards) if g[0] == depth and g[1] == name), None)
        if irs is None:
            return
        scope = flows.scope
        for at in range(len(scope.stmts) - count, len(scope.stmts)):
            if scope.stmts[at][:2] == ("=", ("n", name)):
                scope.unless[at] = irs


def outside_tests(raw: dict, infos: list, index, graph) -> set[tuple]:
    """(caller, id(site), callee) of the calls ``p.m(...)`` made only where ``isinstance(p, C)`` holds
    whose callee is a method of a class no instance of ``C`` has in its MRO (``p`` never rebound)."""
    by_path = {info.path: info for info in infos}
    out: set[tuple] = set()
    for caller, edges in raw.items():
        flow = by_path[caller[0]].flows.get(caller[1])
        if flow is None or not flow.only:
            continue
        for callee, site in edges:
            irs = flow.only.get(site.expr)
            if irs is None or site.reference or _rebinds(flow, site.expr[1][1]):
                continue
            allowed = _family_mros(caller, irs, by_path, index, graph)
            owner = callee[1].rpartition(".")[0]
            info = by_path.get(callee[0])
            if allowed is not None and info is not None and owner in info.classes and (callee[0], owner) not in allowed:
                out.add((caller, id(site), callee))
    return out


def _rebinds(flow, name: str) -> bool:
    return any(stmt[:2] == ("=", ("n", name)) and (stmt[2] or ("",))[0] not in ("t", "la", "da") for stmt in flow.stmts)


def _family_mros(caller, irs: tuple, by_path: dict, index, graph) -> set[tuple[str, str]] | None:
    """Every class in the MRO of some project class that is an instance of one the IRs name; None
    where an IR names anything but project classes."""
    out: set[tuple[str, str]] = set()
    solver = graph.solver
    for ir in irs:
        node = graph.linker.var(caller[0], caller[1], ir[1]) if ir[:1] == ("n",) else None
        if node is None or node in solver.full or not solver.pts.get(node):
            return None
        for v in solver.values(node):
            info = by_path.get(v[1]) if v[0] == "C" else None
            if info is None or v[2] not in info.classes:
                return None
            for ref in (( info, v[2]), *index.subclasses((info, v[2]))):
                out.update((i.path, name) for i, name in index.mro(ref))
    return out
