"""Arguments that are the same on every call of their caller: no per-step position, whatever the
callee names its parameter.

``params.POSITION_NAMES`` makes an ``int`` parameter named ``start_idx`` a per-step position, and a
capture that freezes it an error (GL308). A layer slicing its fixed column segment
(``result[:, start_idx:end_idx]``) is named the same, but every caller computes the segment from
shapes, fields and a counter reset at each call and advanced over the fused layers: what a
capture records is what every replay needs.

At the end of a caller's walk, an argument is *steady* when built from literals, shapes, ``self``
fields only ``__init__`` binds (no counter, :attr:`.ClassInfo.counters`, nor one the value rounds
know), rank and world-size queries, and locals bound only from those -- with at least one such
source, not a literal alone (``start_pos = 0`` before a capture is what GL308 is about). A local
advanced in a loop is steady only in a ``for`` over a steady iterable that is no per-token loop;
a binding under a branch only when the test is. A parameter of the caller, a global, a ``while``
loop's counter and any other call are not. The slots are the third element of ``CallSite.kinds``;
:mod:`.valueflow` turns a position-named parameter every resolved call passes a steady value into
``param:<f>:<name>=steady``, which takes it out of the callee's positions (:func:`.valuekinds.set_kind`).
"""
from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from graphlint.static.cstwalk import name_children
from graphlint.static.rebound import rebound_fields
from graphlint.static.names import resolve

#: builtins whose result is steady when their arguments are (``len(self.sizes)``, ``min(a, b)``)
STEADY_BUILTINS = frozenset(("len", "int", "float", "bool", "min", "max", "abs", "round", "enumerate", "zip",
                             "range", "reversed", "sorted", "list", "tuple"))
#: a tensor's shape queries: a capture records one shape, so what is computed from it is the same on every replay
SHAPE_METHODS = frozenset(("size", "dim", "numel", "ndimension", "nelement", "element_size"))
#: process-group queries: the same on every call of a process (``self.process_group.rank()``)
RANK_METHODS = frozenset(("rank", "size", "get_rank", "get_world_size"))
#: a container's views, iterated over in a steady loop (``for k, v in self.sizes.items()``)
VIEW_METHODS = frozenset(("items", "keys", "values"))
#: a field a deeper object may advance under these names (``self.cache.seq_len``): never steady
COUNTER_NAMES = ("*pos*", "*len*", "*offset*", "*step*", "*count*", "*idx*", "*index*", "start*", "cur*", "n_*")

NOT_STEADY = None
#: a dependency on the program's structure (a field, a shape, a rank, a loop's counter), not a name
SOURCE = "#"


class SteadyArgs:
    """Per walked function: its call sites' argument nodes, settled when the function ends."""

    def __init__(self) -> None:
        self.stack: list[list[tuple[object, cst.Call]]] = []
        self.per_token: set[int] = set()  # ids of the loop statements the walk found feed a call back
        #: the enclosing classes' bodies, and (lazily) the fields a method other than ``__init__`` binds
        self.classes: list[list] = []
        #: whether the file spells ``:=`` and ``setattr`` at all (:meth:`read_source`): where it does
        #: not, no walk looks for a walrus or a ``setattr`` call (a third of this module's time on torch)
        self.walrus = self.setattr = True

    def read_source(self, text: str) -> None:
        """A ``NamedExpr`` is the one token ``:=``, a ``setattr`` name those seven letters (libcst
        keeps a name's source spelling): a file without them has neither node."""
        self.walrus, self.setattr = ":=" in text, "setattr" in text

    def enter_class(self, stmt: cst.ClassDef) -> None:
        self.classes.append([stmt, None])

    def exit_class(self) -> None:
        self.classes.pop()

    def rebound(self) -> set[str]:
        """``self.x`` fields some method of the enclosing class other than ``__init__`` binds."""
        if not self.classes:
            return set()
        top = self.classes[-1]
        if top[1] is None:
            top[1] = rebound_fields(top[0], self.setattr)
        return top[1]

    def begin(self) -> int:
        self.stack.append([])
        return len(self.stack)

    def note(self, site, call: cst.Call) -> None:
        if self.stack and site is not None:
            self.stack[-1].append((site, call))

    def end(self, stmt: cst.FunctionDef, oracle, depth: int) -> list:
        """``depth``: what :meth:`begin` returned (a nested function that failed mid-walk left its list).
        Returns the function's (site, call) pairs (:mod:`.restaged` reads them too)."""
        del self.stack[depth:]
        pending = self.stack.pop() if len(self.stack) == depth else []
        if pending:
            settle(pending, stmt, oracle, self.per_token, self.rebound() if oracle.cls is not None else set(),
                   self.walrus)
        return pending


def settle(pending: list, stmt: cst.FunctionDef, oracle, per_token: set[int], rebound: set[str],
           walrus: bool = True) -> None:
    """Give each site the slots (positional index, keyword) every one of its calls passes steadily."""
    deps = Deps(oracle, rebound)
    steady, structural = steady_names(stmt.body, deps, per_token, walrus)
    by_site: dict[int, list] = {}
    for site, call in pending:
        by_site.setdefault(id(site), [site]).append(call)
    for site, *calls in by_site.values():
        slots: set | None = None
        shape = None
        for call in calls:
            if any(arg.star for arg in call.args):
                slots = None
                break
            own = set()
            positional = [a for a in call.args if a.keyword is None]
            this_shape = (len(positional), tuple(a.keyword.value for a in call.args if a.keyword is not None))
            if shape is not None and this_shape != shape:
                slots = None
                break
            shape = this_shape
            for i, arg in enumerate(call.args):
                found = deps.of(arg.value)
                if found is not NOT_STEADY and found - {SOURCE} <= steady and (SOURCE in found or found & structural):
                    own.add(i if arg.keyword is None else arg.keyword.value)
            slots = own if slots is None else slots & own
        if not slots or shape is None:
            continue
        kinds = site.kinds
        if kinds is None:
            kinds = (("",) * shape[0], tuple((k, "") for k in shape[1]))
        site.kinds = (kinds[0], kinds[1], tuple(sorted(slots, key=str)))


class Deps:
    """The local names an expression's value depends on, or :data:`NOT_STEADY`."""

    def __init__(self, oracle, rebound: set[str]) -> None:
        self.oracle = oracle
        self.params = oracle.fn.params
        cls = oracle.cls
        self.counters = (set(cls.counters) | rebound) if cls is not None else set()

    def of(self, node: cst.BaseExpression) -> set[str] | None:
        kind = type(node)
        if kind in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString):
            return set()
        if kind is cst.Name:
            if node.value in ("True", "False", "None"):
                return set()
            if node.value in self.params or node.value in ("self", "cls"):
                return NOT_STEADY  # derived from a parameter: what the caller's callers pass
            return {node.value}
        if kind is cst.Attribute:
            return self._attribute(node)
        if kind is cst.Subscript:
            return self._union([node.value, *self._slice_parts(node.slice)])
        if kind is cst.Call:
            return self._call(node)
        if kind is cst.BinaryOperation:
            return self._union([node.left, node.right])
        if kind is cst.UnaryOperation:
            return self.of(node.expression)
        if kind is cst.BooleanOperation:
            return self._union([node.left, node.right])
        if kind is cst.Comparison:
            return self._union([node.left, *(c.comparator for c in node.comparisons)])
        if kind is cst.IfExp:
            return self._union([node.test, node.body, node.orelse])
        if kind in (cst.Tuple, cst.List):
            if any(type(el) is cst.StarredElement for el in node.elements):
                return NOT_STEADY
            return self._union([el.value for el in node.elements])
        return NOT_STEADY

    def _union(self, nodes) -> set[str] | None:
        out: set[str] = set()
        for n in nodes:
            found = self.of(n)
            if found is NOT_STEADY:
                return NOT_STEADY
            out |= found
        return out

    @staticmethod
    def _slice_parts(elements) -> list:
        parts = []
        for el in elements:
            s = el.slice
            if type(s) is cst.Index:
                parts.append(s.value)
            else:
                parts.extend(p for p in (s.lower, s.upper, s.step) if p is not None)
        return parts

    def _attribute(self, node: cst.Attribute) -> set[str] | None:
        if node.attr.value == "shape":
            return {SOURCE}  # a capture records one shape: the same on every replay
        chain = [node.attr.value]
        root = node.value
        while type(root) is cst.Attribute:
            chain.append(root.attr.value)
            root = root.value
        if not (type(root) is cst.Name and root.value == "self"):
            return NOT_STEADY  # a local object's or a parameter's field: it may advance between calls
        chain.reverse()  # self.a.b -> [a, b]
        if chain[0] in self.counters or "*" in self.counters:
            return NOT_STEADY  # ``self.offset``: a method other than ``__init__`` binds or advances it
        if len(chain) > 1 and (self.oracle.field_kind(node) == "step"
                               or any(fnmatchcase(chain[-1], p) for p in COUNTER_NAMES)):
            return NOT_STEADY  # ``self.cache.seq_len``: another object's counter
        return {SOURCE}

    def _call(self, node: cst.Call) -> set[str] | None:
        func = node.func
        args = [a.value for a in node.args if not a.star]
        if len(args) != len(node.args):
            return NOT_STEADY
        if type(func) is cst.Name:
            if func.value in STEADY_BUILTINS and func.value not in self.oracle.imports and func.value not in self.params:
                return self._union(args)
            return NOT_STEADY
        if type(func) is not cst.Attribute:
            return NOT_STEADY
        method = func.attr.value
        if method in SHAPE_METHODS and self.oracle.is_tensor(func.value):
            return _source(self._union(args))  # ``x.size(1)``: a shape
        if method in RANK_METHODS or method in VIEW_METHODS:
            return self._union([func.value, *args])  # ``self.process_group.rank()``, ``self.sizes.items()``
        name = resolve(func, self.oracle.imports) or ""
        if name.startswith("torch.distributed.") and name.rsplit(".", 1)[-1] in ("get_rank", "get_world_size"):
            return _source(self._union(args))
        return NOT_STEADY


def _source(found: set[str] | None) -> set[str] | None:
    return found if found is NOT_STEADY else found | {SOURCE}


def steady_names(body: cst.BaseSuite, deps: Deps, per_token: set[int],
                 walrus: bool = True) -> tuple[set[str], set[str]]:
    """The locals every binding of which is steady (a greatest fixpoint over the function's
    bindings), and those of them some binding of which reaches a :data:`SOURCE`. ``walrus``
    False: the file has no ``:=``, so no statement is searched for one."""
    bindings: dict[str, list[set[str] | None]] = {}
    _Bindings(bindings, deps, per_token, walrus).suite(body, set(), False)
    steady = {name for name, found in bindings.items() if all(f is not NOT_STEADY for f in found)}
    changed = True
    while changed:
        changed = False
        for name in list(steady):
            if any(not f <= steady | {SOURCE} for f in bindings[name]):
                steady.discard(name)
                changed = True
    structural: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name in steady - structural:
            if any(SOURCE in f or f & structural for f in bindings[name]):
                structural.add(name)
                changed = True
    return steady, structural


SEQUENCES = (cst.Tuple, cst.List)


class _Bindings:
    """Every binding of a local: the names its value depends on, the tests of the branches it sits
    in and, inside a loop, the loop's iterable (a ``while`` or per-token loop: not steady)."""

    def __init__(self, out: dict, deps: Deps, per_token: set[int], walrus: bool = True):
        self.out, self.deps, self.per_token, self.walrus = out, deps, per_token, walrus

    def bind(self, target: cst.BaseExpression, found: set[str] | None, context: set[str] | None) -> None:
        kind = type(target)
        if kind is cst.Name:
            both = NOT_STEADY if found is NOT_STEADY or context is NOT_STEADY else found | context
            self.out.setdefault(target.value, []).append(both)
        elif kind in SEQUENCES:
            for el in target.elements:
                self.bind(el.value, NOT_STEADY if type(el) is cst.StarredElement else found, context)
        # ``obj.x = v`` / ``a[i] = v``: no local bound

    def suite(self, body, context: set[str] | None, looping: bool) -> None:
        stmts = body.body if hasattr(body, "body") else body
        for stmt in stmts:
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    self.small(small, context, looping)
            else:
                self.compound(stmt, context, looping)

    def small(self, stmt, context, looping: bool) -> None:
        kind = type(stmt)
        if kind is cst.Assign:
            found = self.deps.of(stmt.value)
            for t in stmt.targets:
                self.bind(t.target, found, context)
        elif kind is cst.AnnAssign:
            if stmt.value is not None:
                self.bind(stmt.target, self.deps.of(stmt.value), context)
        elif kind is cst.AugAssign:
            found = self.deps.of(stmt.value)
            if type(stmt.target) is cst.Name:
                advanced = {stmt.target.value, SOURCE} if looping else {stmt.target.value}
                self.bind(stmt.target, NOT_STEADY if found is NOT_STEADY else found | advanced, context)
        elif kind is cst.Global or kind is cst.Nonlocal:
            for n in stmt.names:
                self.out.setdefault(n.name.value, []).append(NOT_STEADY)
        elif kind is cst.Import or kind is cst.ImportFrom:
            names = stmt.names if type(stmt.names) in (list, tuple) else ()
            for alias in names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                if type(bound) is cst.Name:
                    self.out.setdefault(bound.value, []).append(NOT_STEADY)
        if self.walrus:
            for node in _walruses(stmt):
                self.bind(node.target, NOT_STEADY, context)

    def compound(self, stmt, context, looping: bool) -> None:
        kind = type(stmt)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            self.out.setdefault(stmt.name.value, []).append(NOT_STEADY)
            return
        if kind is cst.If:
            inner = _join(context, self.deps.of(stmt.test))
            self.suite(stmt.body, inner, looping)
            if stmt.orelse is not None:
                if type(stmt.orelse) is cst.If:
                    self.compound(stmt.orelse, inner, looping)
                else:
                    self.suite(stmt.orelse.body, inner, looping)
            return
        if kind is cst.For:
            if id(stmt) in self.per_token or stmt.asynchronous is not None:
                inner = NOT_STEADY  # a per-token loop: what it advances changes every token
            else:
                inner = _join(context, self.deps.of(stmt.iter))
            self.bind(stmt.target, {SOURCE} if inner is not NOT_STEADY else NOT_STEADY, inner)  # a counter of the call
            self.suite(stmt.body, inner, True)
            if stmt.orelse is not None:
                self.suite(stmt.orelse.body, inner, True)
            return
        if kind is cst.While:
            self.suite(stmt.body, NOT_STEADY, True)  # how often it runs: data the walk cannot see
            if stmt.orelse is not None:
                self.suite(stmt.orelse.body, NOT_STEADY, True)
            return
        if kind is cst.With:
            for item in stmt.items:
                if item.asname is not None:
                    self.bind(item.asname.name, NOT_STEADY, context)
            self.suite(stmt.body, context, looping)
            return
        if kind is cst.Try or kind is cst.TryStar:
            self.suite(stmt.body, context, looping)
            for handler in stmt.handlers:
                if handler.name is not None:
                    self.bind(handler.name.name, NOT_STEADY, context)
                self.suite(handler.body, context, looping)
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self.suite(extra.body, context, looping)
            return
        if kind is cst.Match:
            for case in stmt.cases:
                for node in _names_in(case.pattern):
                    self.out.setdefault(node, []).append(NOT_STEADY)
                self.suite(case.body, NOT_STEADY, looping)
            return
        for node in _names_in(stmt):  # anything else binding a name: not steady
            self.out.setdefault(node, []).append(NOT_STEADY)


def _join(context: set[str] | None, found: set[str] | None) -> set[str] | None:
    return NOT_STEADY if context is NOT_STEADY or found is NOT_STEADY else context | found


def _walruses(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is cst.NamedExpr:
            yield current
        if kind is cst.Lambda or kind is cst.FunctionDef:
            continue
        stack.extend(name_children(current))


def _names_in(node: cst.CSTNode) -> set[str]:
    """Names a statement of another kind may bind (a conservative over-approximation)."""
    out = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            out.add(current.value)
        stack.extend(name_children(current))
    return out
