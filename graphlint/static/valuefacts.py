"""What one file says about the *values* that decide branches: the walker's half of
:mod:`.argvalues`.

A branch is decided at link time only from three kinds of value, so that is all recorded here,
in a tiny IR of plain tuples (cached with the summary):

- a **value**: ``("c", v)`` a literal (None, True, False, a string, an int or float); ``("p",
  name)`` a parameter of the function, read before the body rebinds it; ``("l", ((value,
  conditions), ...))`` a name rebound on the way (each binding with the branch conditions it was
  made under: ``padding_mask = None`` then ``elif ...: padding_mask = attention_mask``); ``("f", attr)`` a
  configuration field (``config.attr``, ``self.config.attr``, ``self.attr``: every object's field
  of that name); ``("g", attr, v)`` ``getattr(obj, "attr", v)``; ``("self",)``; ``("hb", k)`` what
  the same call returned at position ``k`` last time (:mod:`.handback`); ``("pf",)`` a loop counter from 0 on its loop's
  later iterations, an int other than 0 (:func:`.iterations.past_first`); ``("o",)`` some object that is not None (an
  arithmetic result, a container display, a class built, a tensor op's result); ``("r", callee)``
  what a call returns (the callee in flow IR: not None when every function the call graph gives
  it returns an object on every path, ``FunctionInfo.returns_object``); ``None``: unknown;
- a **condition**: ``("t", value)`` its truth, ``("is", value, v)`` / ``("eq", value, v)`` against a
  literal, ``("cmp", value, op, v)`` an ordered comparison with one (``<``, ``<=``, ``>``, ``>=``;
  ``if top_k > 0:``), ``("in", value, (v, ...))`` membership in a display of literals, ``("not", c)``, ``("and", c, c)``, ``("or", c, c)``, ``("shape",)`` a test computed
  from tensor shapes and constants alone (decided when a graph is captured, for its shapes: see
  :mod:`.argvalues`), ``("nonempty",)`` a batch is not empty (true in every capture:
  :mod:`.shapetests`), ``("set", p)`` code after the set-up of a parameter tested for None (false
  where every call hands back what the previous one returned: :mod:`.handback`), ``("?",)`` anything else;
- a call's **arguments**: ``(positional values, ((keyword, value), ...), *args, **kwargs)``, the
  last two False, True (something unknown splatted) or what the splat hands on (:mod:`.splats`:
  the function's own ``**kwargs`` / ``*args``, a dict display);
- ``a and b``, ``a or b``, ``x if c else y`` as values are binding lists ``("l", ...)`` of their
  sides under the deciding operand's condition (:mod:`.compound`).

Every call site and candidate carries the conjunction of the conditions of the branches it sits
in (``cond``), an early exit's negation included for the rest of its block (``if cond: return``); every function its parameters' defaults (``FunctionInfo.defaults``); every file
the values it stores into fields (``ModuleInfo.field_stores``). Tensor-valued tests are never
conditions here: a parameter is a value only through ``is None``/truthiness/``==``/order/``in``
against literals, which the decode loop's arguments decide (``if attention_mask is not None:`` where the
loop passes no mask); a test on tensor data stays the data-dependent rules' business.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static import dictkeys
from graphlint.static.backendflags import backend_value
from graphlint.static.classtests import returned_tests, tested_class
from graphlint.static.compound import compound_condition, compound_value
from graphlint.static.cstwalk import bound_names, called_name, ends_in_jump, last_returns, statement_binders
from graphlint.static.handback import HandBacks, carried_results, objects_only
from graphlint.static.iterations import past_first
from graphlint.static.returnedconsts import note_return, result, unpack
from graphlint.static.valueatoms import MODE_FLAG, config_field, literal
from graphlint.static.modetests import built, closure_values, member, member_const, member_literal, member_test, receiver, returns_test
from graphlint.static.shapetests import EMPTY, NONEMPTY, SHAPE, emptiness, has_shape, shape_test, size_read
from graphlint.static.splats import changed_in_place, splat_of, star_of

UNKNOWN = ("?",)
#: expressions whose value is some object, never None (``medusa_ids + offset``): ``("o",)``
NEVER_NONE = (cst.BinaryOperation, cst.Comparison, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp,
              cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FormattedString, cst.Lambda, cst.ConcatenatedString)
 # what may test a field's class (:mod:`.classtests`)
#: ordered comparisons a condition keeps (``("cmp", value, op, literal)``), and each one's mirror
#: for a literal written on the left (``0 < top_k`` is ``top_k > 0``)
ORDERED = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">="}
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ABSENT = object()


class ValueFacts:
    """The walker's record of parameters, rebindings and the branch conditions it is inside."""

    def __init__(self) -> None:
        self.params: frozenset[str] = frozenset()
        self.kwarg: str | None = None  # the function's ``**kwargs`` / ``*args``, handed on unchanged (:mod:`.splats`)
        self.vararg: str | None = None
        self.body: cst.CSTNode | None = None
        self.unchanged: dict[str, bool] = {}  # splat name -> never changed in place (scanned when splatted)
        #: name -> what it was bound to so far on this path, each with the branch conditions it was
        #: bound under (a parameter starts with its caller's value); None: something unknown
        self.assigns: dict[str, tuple | None] = {}
        self.cond: tuple = ()  # the conjuncts of the enclosing branches' conditions
        #: what the rest of the current block runs under after an ``if`` that exits early
        self.exits: tuple = ()
        #: the walker's tensor oracle (a torch op's or tensor method's result is never None) and
        #: the flow IR of each call of the current statement (``("r", callee)``: see :meth:`value`)
        self.is_tensor = lambda node: False
        self.shapes = lambda: set()  # the current function's shape names (``condition``'s ``shapes``)
        self.call_exprs: dict[int, tuple | None] = {}
        self.returns_object = True  # every ``return`` of the current function so far gives an object
        self.in_try = 0  # inside ``try``/``except``/``finally``: a rebinding adds, never replaces
        self.exit_conds: set[tuple] = set()  # the conjuncts early exits added (:meth:`binding_cond`)
        #: name -> (loop id, literal): what the enclosing loops' bodies leave it bound to for their
        #: next iteration, while this iteration has not rebound it (:func:`.iterations.carried_literals`)
        self.carried: dict[str, tuple[int, tuple]] = {}
        self.past: dict[str, tuple] = {}  # counter -> its first value, while :meth:`later` computes
        #: the class tests every ``return`` so far implies when its result is truthy (None: no return
        #: yet; :mod:`.classtests`): ``FunctionInfo.class_tests``
        self.class_tests: frozenset | None = None
        self.hands_back = HandBacks()  # the parameters every ``return`` hands back (:mod:`.handback`)
        self.hands_back_scan = True  # the file may rebind a name by ``:=`` / ``global`` (summarize: its text)
        #: an enclosing function's names a nested one reads (:func:`.modetests.closure_values`)
        self.closure: dict[str, tuple] = {}

    def early_exit(self, stmt: cst.If, test: tuple) -> None:
        """``if cond: return`` (``raise``, ``continue``, ``break``): the rest of the block runs only
        when ``cond`` is false, so it carries ``not cond`` (:meth:`take_exits`); an ``elif`` chain
        whose first branches all exit adds each of their negations. A test on tensor shapes is no
        value (``if x.shape[-1] > 64: return self.prefill(x)``: the rest is the decode path, never
        weakened to "only for some shapes")."""
        inner, self.exits = self.exits, ()
        if test[0] == "?" or has_shape(test) or not ends_in_jump(stmt.body):
            return
        self.exits = (("not", test), *(inner if isinstance(stmt.orelse, cst.If) else ()))

    def take_exits(self) -> tuple:
        exits, self.exits = self.exits, ()
        self.exit_conds.update(exits)
        return exits

    def binding_cond(self) -> tuple:
        """The branches a binding is made under, less the early exits before it: whatever reads
        the name after them runs under the same exits (a read past the exits' block sees one
        value more, never one less), and the binding stays small."""
        return tuple(c for c in self.cond if c not in self.exit_conds) if self.exit_conds else self.cond

    def begin(self, stmt: cst.FunctionDef, fn) -> tuple:
        saved = (self.params, self.assigns, self.cond, self.returns_object, self.carried, self.kwarg, self.vararg,
                 self.body, self.unchanged, self.exit_conds, self.class_tests, self.hands_back, self.closure)
        self.closure = closure_values(self.assigns, self.body) if self.body is not None else {}
        self.carried, self.exit_conds, self.class_tests, self.hands_back = {}, set(), None, HandBacks()  # another function's early exits guard nothing here
        p = stmt.params
        every = (*p.posonly_params, *p.params, *p.kwonly_params)
        self.params = frozenset(param.name.value for param in every)
        self.kwarg = p.star_kwarg.name.value if p.star_kwarg is not None else None
        self.vararg = p.star_arg.name.value if isinstance(p.star_arg, cst.Param) else None
        self.body, self.unchanged = stmt.body, {}
        self.assigns, self.cond, self.returns_object = {}, (), True
        fn.defaults = {param.name.value: literal(param.default) for param in every if param.default is not None}
        return saved

    def end(self, saved: tuple, stmt: cst.FunctionDef | None = None, fn=None) -> None:
        """``fn.returns_object``: every ``return`` gives some object and the body never falls off
        its end (an implicit ``None``): a call of it is "not None" where its result is passed on."""
        if fn is not None and stmt is not None:
            fn.returns_object = self.returns_object and last_returns(stmt.body)
            if self.class_tests and last_returns(stmt.body):
                fn.class_tests = tuple(sorted(self.class_tests))
            fn.hands_back, fn.returned_consts = self.hands_back.result(stmt.body, self.hands_back_scan), result(self, stmt)
            fn.returns_test, fn.query = returns_test(self, stmt) if fn.cls else (None, False)
        (self.params, self.assigns, self.cond, self.returns_object, self.carried, self.kwarg, self.vararg,
         self.body, self.unchanged, self.exit_conds, self.class_tests, self.hands_back, self.closure) = saved

    def returned(self, value: cst.BaseExpression | None) -> None:
        if self.class_tests is None or self.class_tests:  # nothing left to intersect: no more looks
            tests = returned_tests(value)
            self.class_tests = tests if self.class_tests is None else self.class_tests & tests
        found = self.value(value) if value is not None else None
        if found is None or found[0] not in ("o", "k", "new", "e") and not objects_only(found):  # a class test is a bool
            self.returns_object = False
        self.hands_back.returned(value, self.params, self.assigns, self.call_exprs)
        note_return(self, value)  # the literals a returned tuple holds (:mod:`.returnedconsts`)

    def stored(self, target: cst.BaseExpression, value: cst.BaseExpression | None = None) -> None:
        """``name = value``: from here on the name holds this value, under the branches it was
        bound in (a branch's bindings are merged with the other side's at its end, :meth:`merge`;
        a name a loop binds is unknown at the loop's top, :meth:`loop`). Inside ``try`` it may
        also still hold what it held (the statement may not have run): a union there. Anything
        but a literal, a parameter, a field, an object or another such local is unknown."""
        if type(value) is cst.Yield:
            self.hands_back.items = {}  # ``x = yield y``: a generator returns no tuple
        if type(target) is cst.Name:
            self.carried.pop(target.value, None)
            self.bind(target.value, self.value(value) if value is not None else None)
            dictkeys.bound(self, target.value, value)  # a dict display: its keys (:mod:`.dictkeys`)
        elif type(target) is cst.Subscript:
            dictkeys.stored(self, target, value)
        elif type(target) in (cst.Tuple, cst.List) and not unpack(self, target, value):  # ``a, b = f(x)``
            for el in target.elements:
                self.stored(el.value)
        elif type(target) is cst.StarredElement:
            self.stored(target.value)

    def bind(self, name: str, found: tuple | None, weak: bool = False) -> None:
        """``name`` holds ``found`` from here on (``weak``, or inside ``try``: it may also still hold
        what it held)."""
        known = self.assigns.get(name, ((("p", name), ()),) if name in self.params else ()) \
            if self.in_try or weak else ()
        if known is None or (found is None and not self.binding_cond()) or len(known) >= 4:
            self.assigns[name] = None  # unknown on every path: nothing left to decide
        else:  # unknown only under its branch: a branch the values rule out binds nothing
            self.assigns[name] = (*known, (found, self.binding_cond()))

    def loop(self, stmt: cst.For | cst.While, loop_id: int = 0, carried: dict[str, tuple] | None = None) -> None:
        """Entering a loop: a name it binds anywhere may hold last iteration's value at its top
        (``pending = None`` before the loop, ``pending = work`` at its end): unknown. What the body
        leaves a name bound to for the next iteration (``carried``) is kept apart: the branches and
        calls of later iterations see it (:meth:`later`)."""
        outer, rebound = dict(self.carried), set()
        for node in statement_binders(stmt):
            for name in bound_names(node.target):
                self.assigns[name] = None
                self.carried.pop(name, None)  # an outer loop's literal no longer holds here
                rebound.add(name)
        dictkeys.entering_loop(self, stmt, rebound)
        # a state handed back by the same call in an outer loop still is in an inner one: the outer
        # loop's second iteration decides (:mod:`.handback`)
        self.carried.update((name, outer[name] if outer.get(name, (0, None))[1] == value else (loop_id, value))
                            for name, value in {**carried_results(stmt), **(carried or {})}.items())

    def end_loop(self, loop_id: int) -> None:
        self.carried = {name: c for name, c in self.carried.items() if c[0] != loop_id}

    def later(self, loop_id: int, compute, call: int = 0, counters: tuple = ()):
        """``compute()`` with the names ``loop_id`` carries bound to their literal: what a branch
        or a call sees from that loop's second iteration on (a result handed back only in the
        arguments of the ``call`` that returns it; its ``counters`` past their first value)."""
        values = {name: v[:2] for name, (lid, v) in self.carried.items() if lid == loop_id and (v[0] != "hb" or v[2] == call)}
        values.update((c[1], ("pf",)) for c in counters if c[0] == loop_id and c[2] == ("int", 0) and c[1] not in values)
        swapped = {name: self.assigns.get(name, _ABSENT) for name in values}
        for name, value in values.items():
            self.assigns[name] = ((value, ()),)
        past, self.past = self.past, {c[1]: c[2] for c in counters if c[0] == loop_id}
        try:
            return compute()
        finally:
            self.past = past
            for name, old in swapped.items():
                if old is _ABSENT:
                    self.assigns.pop(name, None)
                else:
                    self.assigns[name] = old

    def later_args(self, call: cst.Call, args: tuple, counters: tuple = ()) -> tuple | None:
        """(loop id, the arguments from the outermost carrying loop's second iteration on), when
        they differ from ``args``; without carried names, the outermost loop with a counter
        (:func:`.iterations.past_first`: ``images if step == 0 else None`` is ``None`` there)."""
        if not self.carried and not counters:
            return None
        loop_id = min(lid for lid, _ in self.carried.values()) if self.carried else min(c[0] for c in counters)
        later = self.later(loop_id, lambda: self.args(call), id(call), counters)
        return (loop_id, later) if later != args else None

    def first_iteration(self, test: cst.BaseExpression, shapes: set[str], never_true) -> int | None:
        """The innermost loop from whose second iteration on ``if <test>:`` cannot take its body."""
        for loop_id in sorted({lid for lid, _ in self.carried.values()}, reverse=True):
            cond = self.later(loop_id, lambda: self.condition(test, shapes))
            if cond != UNKNOWN and never_true(cond):
                return loop_id
        return None

    def branch(self) -> dict:
        """Entering a branch: its bindings are its own until both sides are merged (:meth:`merge`)."""
        return dict(self.assigns)

    def merge(self, before: dict, sides: list[dict]) -> None:
        merged = dict(before)
        for side in sides:
            for name, found in side.items():
                old = merged.get(name, ((("p", name), ()),) if name in self.params else ())
                if found is None or old is None:
                    merged[name] = None
                elif found != old:
                    extra = tuple(p for p in found if p not in old)
                    merged[name] = None if len(old) + len(extra) > 4 else (*old, *extra)
        self.assigns = merged

    # -- values and conditions -------------------------------------------------------
    def value(self, node: cst.BaseExpression) -> tuple | None:
        found = literal(node)
        if found is not None:
            return found
        tested = tested_class(node)  # ``isinstance(self.backbone, Fused)`` (:mod:`.classtests`)
        if tested is not None:
            return tested
        if type(node) in NEVER_NONE or (type(node) is cst.UnaryOperation and literal(node) is None):
            return ("o",)
        if type(node) in (cst.IfExp, cst.BooleanOperation):
            return compound_value(self, node)  # ``mask if c else None``, ``mask or None``
        if type(node) is cst.Call and not (type(node.func) is cst.Name and node.func.value == "getattr"):
            if not node.args and backend_value(node) is not None:
                return backend_value(node)  # ``torch.npu.is_available()`` (:mod:`.backends`)
            if _constructs(node.func):  # ``Positions(...)``; ``Batch(mode=Mode.DECODE)`` (:mod:`.modetests`)
                return built(self, node, called_name(node.func).rpartition(".")[2])
            if self.is_tensor(node):
                return ("o",)  # ``torch.arange(...)``, ``x.view(...)``
            expr = self.call_exprs.get(id(node))
            found = ("r", expr) if expr is not None else None  # what the call graph's targets return
            if found is not None and not node.args and type(node.func) is cst.Attribute:
                recv = receiver(self, node.func.value)  # ``batch.mode.is_decode()`` (:mod:`.modetests`)
                return ("mc", recv, node.func.attr.value, found) if recv is not None else found
            return found
        if type(node) is cst.Name:
            if node.value == "self":
                return ("self",)
            if node.value not in self.assigns:  # a module-level ``use_torch_npu`` (:mod:`.backends`)
                if node.value in self.params:
                    return ("p", node.value)
                return self.closure.get(node.value) or backend_value(node)
            known = self.assigns[node.value]
            return ("l", known) if known and len(repr(known)) < 400 else None
        if type(node) is cst.Attribute and node.attr.value == MODE_FLAG:  # ``self.training``: a decode step's
            return ("c", False)  # modules are in eval mode, as :mod:`.guards` reads ``if self.training:``
        attr = config_field(node)
        if attr is not None:  # ``self.x``: the reading method's class's field (:mod:`.selffields`)
            return ("f", attr, "self") if type(node.value) is cst.Name and node.value.value == "self" else ("f", attr)
        if (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "getattr"
                and len(node.args) == 3 and type(node.args[1].value) is cst.SimpleString):
            default = literal(node.args[2].value)
            key = node.args[1].value.evaluated_value
            if default is not None and isinstance(key, str) and config_field(cst.Attribute(node.args[0].value, cst.Name(key))):
                return ("g", key, default[1])
        if type(node) is not cst.Attribute:
            return None
        return backend_value(node) or member(node)  # ``utils.USE_NPU``; ``Mode.DECODE`` (:mod:`.modetests`)

    def condition(self, test: cst.BaseExpression, shapes: set[str]) -> tuple:
        decided = past_first(test, self.past) if self.past else None  # a counter on a later iteration
        if decided is not None:
            return decided
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self.condition(test.expression, shapes)
            return UNKNOWN if inner == UNKNOWN else NONEMPTY if inner == EMPTY else ("not", inner)
        if type(test) is cst.IfExp:
            return compound_condition(self, test, shapes)
        if type(test) is cst.BooleanOperation:
            left, right = self.condition(test.left, shapes), self.condition(test.right, shapes)
            return ("and" if type(test.operator) is cst.And else "or", left, right)
        tested = tested_class(test)
        if tested is not None:
            return ("t", tested)
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            op, other = test.comparisons[0].operator, test.comparisons[0].comparator
            empty = emptiness(test.left, op, other)
            if empty is not None:
                return empty
            if shape_test(test.left, other, shapes):
                return SHAPE
            value, const = self.value(test.left), literal(other)
            if const is None or value is None:
                value, const = self.value(other), literal(test.left)
            if type(op) in (cst.In, cst.NotIn):
                return self._membership(test.left, op, other)
            against = member_const(other) or member_const(test.left)
            if against is not None and type(op) in (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual):
                return member_test(self, test.left, op, other, against)
            flipped = const is not None and literal(other) is None  # ``0 < top_k``: ``top_k > 0``
            if value is None or const is None or value[0] == "c":
                return UNKNOWN
            if type(op) in (cst.Is, cst.IsNot):
                base = ("is", value, const[1])
            elif type(op) in (cst.Equal, cst.NotEqual):
                base = ("eq", value, const[1])
            elif type(op) in ORDERED:
                name = ORDERED[type(op)]
                return ("cmp", value, FLIPPED[name] if flipped else name, const[1])
            else:
                return UNKNOWN
            return ("not", base) if type(op) in (cst.IsNot, cst.NotEqual) else base
        if size_read(test):  # ``if x.shape[0]:``
            return NONEMPTY
        value = self.value(test)
        return ("t", value) if value is not None and value[0] != "self" else UNKNOWN

    def _membership(self, left: cst.BaseExpression, op: cst.BaseCompOp, options: cst.BaseExpression) -> tuple:
        """``mode in ("a", "b")``: a value against a display of literals only (anything else in
        the display, or a starred element, decides nothing)."""
        if not isinstance(options, (cst.Tuple, cst.List, cst.Set)):
            return UNKNOWN
        consts = [None if isinstance(el, cst.StarredElement) else literal(el.value) or member_literal(el.value)
                  for el in options.elements]
        if not consts or any(c is None for c in consts):
            return UNKNOWN
        members = any(not isinstance(c[1], (str, int, float, bool, type(None))) for c in consts)
        value = receiver(self, left) if members else self.value(left)
        if value is None or value[0] == "c" or value[0] == "self" and not members:
            return UNKNOWN
        base = ("in", value, tuple(c[1] for c in consts))
        return ("not", base) if isinstance(op, cst.NotIn) else base

    def handed_on(self, name: str) -> bool:
        """Whether ``name`` is the function's own ``**kwargs`` / ``*args``, never rebound nor changed
        in place (:func:`.splats.changed_in_place`, scanned once, at its first splat)."""
        if name not in (self.kwarg, self.vararg) or name in self.assigns or self.body is None:
            return False
        if name not in self.unchanged:
            self.unchanged[name] = not changed_in_place(self.body, name)
        return self.unchanged[name]

    def args(self, call: cst.Call) -> tuple:
        """(positional, keywords, star, double): ``star``/``double`` False, True (unknown) or what
        the splat hands over (:func:`.splats.splat_of`)."""
        positional, keywords, star, double = [], [], False, False
        for arg in call.args:
            if arg.star == "**":
                double = splat_of(self, arg.value) if double is False else True
            elif arg.star == "*":
                star = star_of(self, arg.value) if star is False else True
            elif arg.keyword is not None:
                keywords.append((arg.keyword.value, self.value(arg.value)))
            elif not star:
                positional.append(self.value(arg.value))
            else:
                star = True  # a positional argument after ``*args``: positions unknown
        return (tuple(positional), tuple(keywords), star, double)


def _constructs(func: cst.BaseExpression) -> bool:
    """``Config(...)``, ``mod.Cache(...)``: a class built, never None (a capitalised callee)."""
    name = called_name(func)
    return name[:1].isupper() and not name.isupper()

