"""A parameter rebound only where an ``isinstance`` test fails: ``if not isinstance(past, Cache): past =
DynamicCache()``.

The points-to analysis is flow-insensitive: ``past`` holds every value any binding gives it, so a method
called on it after the ``if`` runs the ``DynamicCache``'s even where every caller passes a cache object (a
``StaticCache``) and the rebinding never runs. While walking, :class:`.flows.FlowRecorder` notes each binding
of a parameter made in the body of an ``if`` whose test requires ``not isinstance(name, C)`` (the test, or
one conjunct of an ``and``; nested ``if``\\ s inside that body too): ``ScopeFlow.unless`` maps the binding's
statement to the class expressions. :mod:`.hotreceivers` drops those bindings where every value the callers
pass is an instance of ``C`` -- always an explicit argument, never a default, a literal or a field that may
hold ``None`` -- and keeps the whole name everywhere else.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts


def failed_tests(test: cst.BaseExpression, params: tuple[str, ...]) -> list[tuple[str, list[cst.BaseExpression]]]:
    """(parameter, class expressions) of each ``not isinstance(param, C)`` / ``(C, D)`` the test requires."""
    out = []
    for part in conjuncts(test):
        if not (type(part) is cst.UnaryOperation and type(part.operator) is cst.Not):
            continue
        call = part.expression
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

    def begin(self, flows, test: cst.BaseExpression) -> int:
        """An ``if`` body starts: how many guards it adds (give it to :meth:`end` after the body)."""
        scope = flows.scope
        if scope.kind != "function":
            return 0
        added = 0
        for name, kinds in failed_tests(test, (*scope.params, *scope.kwonly)):
            irs = tuple(flows.ir.expr(k) for k in kinds)
            if irs and None not in irs:
                self.guards.append((len(flows.stack), name, irs))
                added += 1
        return added

    def end(self, added: int) -> None:
        if added:
            del self.guards[-added:]

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
