"""A state the per-token loop hands back: ``out, state = model.forward(tokens, state)``.

A recurrent model builds its zero state on a request's first call (``if state == None: state =
[...]``) and returns it; the loop passes the returned state to the next call, so the set-up runs
once per request, not per token. Said soundly, from both ends (a state handed back is *not* a state
that is not None: higgs-audio's ``num_remaining_delays`` stays None until an EOS is seen):

- **the loop** (:func:`carried_results`): a name the loop binds once, as element ``k`` of the tuple
  target of a call it passes the name to, and nowhere else; from the loop's second iteration on
  that call is passed ``("hb", k)``, what its previous call returned at ``k``;
- **the set-up** (:func:`set_binding`): code in a block under ``if p is None:`` / ``p == None`` (``p``
  a parameter not rebound yet) after a statement *of that block* binding ``p`` to a value, carries
  the conjunct ``("set", p)``;
- **the callee hands ``p`` back** (:class:`HandBacks`, ``FunctionInfo.hands_back``): every
  ``return`` gives ``p`` at position ``k`` (a tuple display, or a call handing its own parameter
  back there: ``return self.forward_one(idx[0], state)``), the body never falls off its end, and
  every binding of ``p`` is some object (a display, a tensor op, a call returning one on every
  path: checked at link).

Then a call of the loop's later iterations is handed a non-None state whenever any call before it
ran the set-up: ``("set", p)`` is false for it (:mod:`.argvalues`), and what only the set-up runs is
once per request.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import bound_names, last_statement, preorder, statement_nodes

_ASSIGN = frozenset((cst.Assign,))
_BINDERS = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.AsName)


def carried_results(stmt: cst.For | cst.While) -> dict[str, tuple]:
    """Names the loop binds exactly once, as element ``k`` of ``a, name = f(..., name, ...)`` (at any
    depth of its body): ``{name: ("hb", k, id(call))}``. The loop's every binding is counted only
    where such a statement exists (a walk of its expressions, for ``:=``)."""
    found: dict[str, tuple] = {}
    for node in statement_nodes(stmt, _ASSIGN):
        if type(node.value) is cst.Call and len(node.targets) == 1 \
                and type(node.targets[0].target) in (cst.Tuple, cst.List):
            passed = {a.value.value for a in node.value.args if type(a.value) is cst.Name and not a.star}
            for k, el in enumerate(node.targets[0].target.elements):
                if type(el.value) is cst.Name and el.value.value in passed and type(el) is cst.Element:
                    found[el.value.value] = ("hb", k, id(node.value))
    if not found:
        return {}
    binders = [node for node in preorder(stmt) if type(node) in _BINDERS or type(node) is cst.Del]
    counts: dict[str, int] = {}
    for node in binders:
        for name in bound_names(node.name if type(node) is cst.AsName else node.target):
            counts[name] = counts.get(name, 0) + 1
    if isinstance(stmt, cst.For):
        for name in bound_names(stmt.target):
            counts[name] = counts.get(name, 0) + 2
    return {name: v for name, v in found.items() if counts.get(name) == 1}


def objects_only(found: tuple) -> bool:
    """A local whose every binding is some object (``state = [...]``, then ``return state``)."""
    return found[0] == "l" and all(v == ("o",) or v is not None and v[0] == "new" for v, _ in found[1])


def none_test(c: tuple, param: str) -> bool:
    """``p is None`` / ``p == None`` on the parameter as passed (or the ``else`` of its negation)."""
    if c[0] == "not" and c[1][0] == "not":
        c = c[1][1]
    return c[0] in ("is", "eq") and c[1] == ("p", param) and c[2] is None


def set_binding(small: cst.BaseSmallStatement, cond: tuple) -> str | None:
    """``p = <value>`` under a None test of the parameter ``p``: the set-up that makes ``p`` an
    object (its value is checked at link, with the callee's other bindings)."""
    if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
        return None
    name = small.targets[0].target.value
    if type(small.value) is cst.Name and small.value.value == "None":
        return None
    for c in cond:
        if none_test(c, name):
            return name
    return None


class HandBacks:
    """Per function: which parameter every ``return`` hands back at one position (walker side)."""

    def __init__(self) -> None:
        self.items: dict[str, set] | None = None  # param -> {("k", k) | ("via", callee IR, slot)}
        self.needs: set = set()  # ("r", callee IR): bindings that must be objects

    def returned(self, value: cst.BaseExpression | None, params: frozenset, assigns: dict, call_exprs: dict) -> None:
        if self.items is not None and not self.items:
            return
        here: dict[str, tuple] = {}
        kind = type(value)
        if kind is not cst.Tuple and kind is not cst.Call:
            self.items = {}
            return
        if kind is cst.Tuple:
            for k, el in enumerate(value.elements):
                if type(el) is cst.Element and type(el.value) is cst.Name and el.value.value in params:
                    here.setdefault(el.value.value, ("k", k))
        elif call_exprs.get(id(value)) is not None:
            expr, slot = call_exprs[id(value)], 0
            for arg in value.args:
                if arg.star:
                    break
                key = arg.keyword.value if arg.keyword is not None else slot
                slot += arg.keyword is None
                if type(arg.value) is cst.Name and arg.value.value in params:
                    here.setdefault(arg.value.value, ("via", expr, key))
        for name in list(here):
            if not self._objects(name, assigns.get(name, ())):
                del here[name]
        if self.items is None:
            self.items = {name: {item} for name, item in here.items()}
        else:
            self.items = {name: items | {here[name]} for name, items in self.items.items() if name in here}

    def _objects(self, name: str, bound: tuple | None) -> bool:
        """Every binding of ``name`` on the way: the parameter as passed, or some object."""
        if bound is None:
            return False
        for v, _ in bound:
            if v == ("p", name) or v == ("o",) or v is not None and v[0] == "new":
                continue
            v = v[3] if v is not None and v[0] == "mc" else v  # a method's answer: its call (:mod:`.modetests`)
            if v is None or v[0] != "r":
                return False
            self.needs.add(v)
        return True

    def result(self, body: cst.BaseSuite, scan: bool = True) -> tuple:
        """``scan``: the file may rebind a name where the value facts do not follow (``(p := None)``,
        ``global p``); looked for only then."""
        if not self.items or not ends_in_exit(body):
            return ()
        for node in preorder(body) if scan else ():
            if type(node) is cst.NamedExpr and type(node.target) is cst.Name:
                self.items.pop(node.target.value, None)
            elif type(node) in (cst.Global, cst.Nonlocal):
                for item in node.names:
                    self.items.pop(item.name.value, None)
        if not self.items:
            return ()
        return tuple((name, tuple(sorted(items, key=repr)), tuple(sorted(self.needs, key=repr)))
                     for name, items in sorted(self.items.items()))


def ends_in_exit(suite: cst.BaseSuite) -> bool:
    """The block never falls off its end: its last statement returns or raises (``if x: return y``
    on one line too), or is a ``with`` whose body does, or an ``if`` / ``else`` whose every branch does."""
    last = last_statement(suite)
    return last is not None and _exits(last)


def _exits(last: cst.CSTNode) -> bool:
    kind = type(last)
    if kind is cst.Return or kind is cst.Raise:
        return True
    if kind is cst.With:
        return ends_in_exit(last.body)
    if kind is cst.If:
        orelse = last.orelse
        return orelse is not None and ends_in_exit(last.body) and (
            ends_in_exit(orelse.body) if type(orelse) is cst.Else else _exits(orelse))
    return False


# -- link side ---------------------------------------------------------------------------------
class Mark:
    """A value :mod:`.argvalues` cannot compare: what a call returned at a position."""
    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k


HB = tuple(Mark(k) for k in range(32))  # ("hb", k) before the callee checks it
HANDED = Mark(-1)  # ... after: the parameter is what the previous call of the same site handed back
MARKS = frozenset((*HB, HANDED))
ONLY_HANDED = frozenset((HANDED,))


class HandBackFacts:
    """``hands_back(fid, param)``: the position every return of ``fid`` hands ``param`` back at."""

    def __init__(self, av) -> None:
        self.av = av
        self.memo: dict[tuple, int | None] = {}

    def position(self, fid: tuple, param: str) -> int | None:
        key = (fid, param)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None  # a recursion hands back nothing known
        entry = self.av.fns.get(fid)
        facts = next((f for f in entry[1].hands_back if f[0] == param), None) if entry else None
        if facts is None or not all(self.av.returns_object(fid, need[1]) for need in facts[2]):
            return None
        ks = set()
        for item in facts[1]:
            if item[0] == "k":
                ks.add(item[1])
                continue
            targets = [(c, s) for c, s in self.av.raw.get(fid, ()) if s.expr == item[1] and not s.reference]
            if not targets:
                return None
            for target, site in targets:
                name = self.param_at(target, item[2])
                bound = self.av.bind(target, site, _unknown)
                if bound is not None and name not in bound:
                    continue  # a call that cannot bind it never runs it (a TypeError)
                ks.add(self.position(target, name) if name is not None else None)
        found = ks.pop() if len(ks) == 1 else None
        self.memo[key] = found
        return found

    def param_at(self, fid: tuple, slot) -> str | None:
        entry = self.av.fns.get(fid)
        if entry is None or entry[0] is None:
            return None
        flow = entry[0]
        params = flow.call_params()
        if isinstance(slot, str):
            return slot if slot in params or slot in flow.kwonly else None
        return params[slot] if slot < len(params) else None

    def checked(self, caller: tuple, site, bound: dict, evaluate, args) -> dict:
        """``bound`` with each ``("hb", k)`` made :data:`HANDED` where every function the site may
        run hands the parameter it binds back at ``k``, else unknown (and so is a state passed on
        further: only the call the loop hands it back to knows it)."""
        if not any(found is not None and not found.isdisjoint(MARKS) for found in bound.values()):
            return bound
        ok = args is not site.args
        for target in [c for c, s in self.av.raw.get(caller, ()) if s is site]:
            other = self.av.bind(target, site, evaluate, args)
            ok = ok and other is not None
            for name, found in (other or {}).items():
                for mark in (found or frozenset()) & MARKS:
                    ok = ok and mark is not HANDED and self.position(target, name) == mark.k
        return {name: found if found is None or found.isdisjoint(MARKS)
                else (None if not ok else (found - MARKS) | ONLY_HANDED) for name, found in bound.items()}


def _unknown(_value) -> None:
    return None
