"""How the walker walks an ``if``: which of its branches run per step, once, or only in a loop's
first iteration.

A branch's body is set-up (walked with ``setup_depth`` raised, its findings dropped) when its guard
runs once -- a flag the class sets, a field default filled, a countdown over a literal budget, a
guard the body disarms (:mod:`.guards`). Otherwise the body is walked under the branch's facts: the
one-time flag and needed attributes it tests, the first iteration its test picks (a loop counter,
or a value the loop carries: :mod:`.iterations`, :class:`.valuefacts.ValueFacts`), and its condition
for the value facts of what follows. An ``except`` handler that ends in ``raise`` is set-up too: it
runs only on a step that fails (:meth:`BranchWalker.handler`). A mixin of :class:`.walker.Walker`,
which owns the state.
"""

from __future__ import annotations

from dataclasses import fields

import libcst as cst

from graphlint.static.argvalues import never_true
from graphlint.static.compileswitch import FIELD, field_switch
from graphlint.static.cstwalk import ends_in_jump, last_statement, preorder
from graphlint.static.devicenarrow import narrow_body, widen
from graphlint.static.fieldstores import lacked_attrs
from graphlint.static.guards import GIVEN, fills_default, fills_field_default, main_test, needed_attrs
from graphlint.static.armedcalls import armed_call
from graphlint.static.lazyfields import armed_flag, lazy_field
from graphlint.static.pynarrow import held_python, narrow as python_narrow, widen as python_widen
from graphlint.static.retiredrows import retires_row
from graphlint.static.memoguards import object_miss
from graphlint.static.runonce import counts_down, once_flag, own_lazy_field
from graphlint.static.iterations import first_iteration_loop, first_operands, flag_loop
from graphlint.static.loopexits import left_loops
from graphlint.static.optin import COMPILE_SWITCHES
from graphlint.static.timingswitch import switch_name, timing_switches
from graphlint.static.typetests import type_test


class BranchWalker:
    #: (function body, its timing switches): computed once per function, at its first ``if flag:``
    timing_cache: tuple | None = None
    #: inside ``if not hasattr(obj, name):``: (obj, name) pairs (:func:`.fieldstores.lacked_attrs`)
    lacking: tuple[tuple[str, str], ...] = ()

    def handler(self, suite: cst.BaseSuite, field: str) -> None:
        """An ``except`` handler's body. One that ends in ``raise`` (a debug dump of a failed kernel launch,
        then ``raise``) runs only on a step that fails, and the failure goes on up: no working step runs
        it, so it is walked as set-up -- its findings and calls dropped. A handler that recovers (a
        fallback, a retry) may run on every step where the first way always fails, and stays hot."""
        failing = type(last_statement(suite)) is cst.Raise
        self.setup_depth += failing
        try:
            self.suite(suite, field)
        finally:
            self.setup_depth -= failing

    def if_(self, stmt: cst.If) -> None:
        guarded = self.guards.branch(stmt.test)
        if guarded is None and self.func.qualname != "<module>" and main_test(stmt.test):
            guarded = "body"
        fallback = guarded is None and given_none_test(stmt, self.oracle.fn, self.oracle.imports) is not None
        guarded = "body" if fallback else guarded
        if self.counters and type(stmt.test) is cst.BooleanOperation:
            self.note_first_operands(stmt.test)
        if guarded is None:  # a guard's own test (``if seqlen > 1:``) picks no branch of a captured step
            self.visit_node(stmt)
        self.expr(stmt.test)
        self.tested(stmt.test)
        self.flows.use(stmt.test)
        test = self.guards.compiling(stmt.test) or self.values.condition(stmt.test, self.oracle.fn.shapes)
        outer_cond = self.values.cond
        before, sides = self.values.branch(), []
        self.branching += 1
        try:
            if fallback:
                self._fallback_body(stmt, before)
            self.if_branches(stmt, guarded, test, outer_cond, before, sides)
        finally:
            self.branching -= 1
            self.values.merge(before, [*sides, self.values.assigns])
        if guarded is None:
            self.values.early_exit(stmt, test)

    def if_branches(self, stmt: cst.If, guarded: str | None, test: tuple, outer_cond: tuple, before: dict,
                    sides: list) -> None:
        after = self.following
        # what runs instead of the body (its ``else``), or after it when it jumps out (``return``)
        instead = (*((stmt.orelse,) if stmt.orelse is not None else ()), *(after if ends_in_jump(stmt.body) else ()))
        compiles = self.compile_opt_in
        if guarded != "body":  # ``if use_torch_compile:``, a parameter off by default: the default runs eagerly
            switch = self.switches.guard(stmt.test, self.class_name, self.func.defaults, COMPILE_SWITCHES)
            # the function's own parameter (an API's default every caller gets), not a script's option
            # or a module flag, which the operator picks per run (the run that captures is the one labelled)
            # or a configuration field whose every stored value is off (decided when linking: :mod:`.compileswitch`)
            field = field_switch(stmt.test) if switch not in self.func.defaults else ""
            field = field if field and COMPILE_SWITCHES.match(field[len(FIELD):]) else ""
            self.compile_opt_in += (switch,) if switch in self.func.defaults else (field,) if field else ()
        keyed = self.flows.keyed_begin(stmt.test)  # ``if kind == Op.X: return XBuilder`` (:mod:`.keyedreturns`)
        unless = self.flows.unless.begin(self.flows, stmt.test)  # ``if not isinstance(p, C):`` (:mod:`.typenarrow`)
        arms, at = self.arms, self.order
        try:
            self.arms = (*arms, (at, 0))
            self._if_body(stmt, guarded, test, outer_cond, instead)
        finally:
            self.compile_opt_in, self.arms = compiles, arms
            self.flows.unless.end(unless)
            if keyed:
                self.flows.keyed_end()
        if stmt.orelse is None or guarded == "orelse":
            return
        try:
            self.arms = (*arms, (at, 1))
            self._if_orelse(stmt, test, outer_cond, before, sides, after)
        finally:
            self.arms = arms

    def _if_body(self, stmt: cst.If, guarded: str | None, test: tuple, outer_cond: tuple, instead: tuple) -> None:
        lacking = self.lacking  # ``if not hasattr(obj, name):``: a ``setattr`` there only adds (:mod:`.fieldstores`)
        self.lacking += lacked_attrs(stmt.test)
        narrowed = narrow_body(self.oracle.fn, stmt.test)  # ``if x.device.type == "cpu":`` (:mod:`.devicenarrow`)
        typed = python_narrow(self.oracle.fn, held_python(stmt.test, self.oracle.imports))  # ``if isinstance(n, int):``
        try:
            self._if_suite(stmt, guarded, test, outer_cond, instead)
        finally:
            self.lacking = lacking
            widen(self.oracle.fn, narrowed)  # also a name rebound in the body from the narrowed one
            python_widen(self.oracle.fn, typed)  # (:mod:`.pynarrow`)

    def _if_suite(self, stmt: cst.If, guarded: str | None, test: tuple, outer_cond: tuple, instead: tuple) -> None:
        filled = guarded != "body" and fills_default(stmt, self.oracle.fn.optional)
        if filled and test[:1] == ("is",):  # decided when linking, by what hot callers pass (:data:`.guards.GIVEN`)
            test, filled = (GIVEN, test), False
        per_object = guarded != "body" and bool(self.func.cls) and object_miss(stmt, self.preceding, self.oracle.fn)
        if guarded != "body" and (filled or per_object or self.guards.runs_once(stmt, self.oracle.fn)
                                  or fills_field_default(stmt, test) or counts_down(stmt, self.is_constant_local)
                                  or self.timing_switch(stmt) or self.loop_frames and retires_row(stmt, self.loop_frames[-1].stmt)):
            self.setup_depth += 1
            lazy_at = self.lazy_at
            if self.setup_depth == 1 and self.func.cls and (per_object or own_lazy_field(stmt)):
                self.lazy_at = 1  # once per object: per step for an object built every step (:mod:`.perstep`)
            try:
                self.capture_branch(lambda: self.suite(stmt.body), stmt.body, instead)
            finally:
                self.setup_depth -= 1
                self.lazy_at = lazy_at
        elif guarded != "body":
            outer = (self.once, self.needs, self.first_iters, self.opt_in)
            self.once, self.needs = once_flag(stmt) or lazy_field(stmt, self.oracle.fn.params) or armed_flag(
                stmt, self.item_names, self.values.body) or armed_call(stmt) or self.once, self.needs + needed_attrs(stmt.test)
            switch = self.switches.guard(stmt.test, self.class_name, self.func.defaults)
            self.opt_in += (switch,) if switch else ()
            first = (first_iteration_loop(stmt.test, self.counters) or flag_loop(stmt, self.counters)) \
                if self.counters else None
            if first is None and self.values.carried:  # ``if image is not None:`` with ``image = None`` at the body's end
                first = self.values.first_iteration(stmt.test, self.oracle.fn.shapes, never_true)
            self.first_iters += ((first,) if first is not None else ()) + self.exits(stmt.body)
            self.values.cond = outer_cond + (test,) if test[0] != "?" else outer_cond
            try:
                self.capture_branch(lambda: self.suite(stmt.body), stmt.body, instead)
            finally:
                self.once, self.needs, self.first_iters, self.opt_in = outer
                self.values.cond = outer_cond

    def _fallback_body(self, stmt: cst.If, before: dict) -> None:
        """The body of an ``if p is None:`` fallback no caller takes (:func:`given_none_test`): not on
        the decode path, yet code that may run (another caller, later), so it is walked as set-up --
        its points-to flows kept for the whole program, its findings and call sites dropped -- and
        what it bound for the rules (``p`` a tensor, the value facts) is forgotten after it."""
        facts = self.oracle.fn
        kept = {f.name: getattr(facts, f.name).copy() for f in fields(facts)
                if isinstance(getattr(facts, f.name), (set, dict))}
        capture, self.in_capture = self.in_capture, False
        self.setup_depth += 1
        try:
            self.suite(stmt.body)
        finally:
            self.setup_depth -= 1
            self.in_capture = capture
            for name, value in kept.items():
                setattr(facts, name, value)
            self.values.assigns = dict(before)

    def _if_orelse(self, stmt: cst.If, test: tuple, outer_cond: tuple, before: dict, sides: list, after) -> None:
        sides.append(self.values.assigns)
        self.values.assigns = dict(before)
        self.values.cond = outer_cond + (("not", test),) if test[0] != "?" else outer_cond
        try:
            if isinstance(stmt.orelse, cst.If):
                self.path.append(("orelse", 0))
                try:
                    self.stmt, self.following, self.preceding = stmt.orelse, after, None
                    self.if_(stmt.orelse)
                finally:
                    self.path.pop()
            else:
                self.once_block(lambda: self.capture_branch(
                    lambda: self.suite(stmt.orelse.body, "orelse"), stmt.orelse.body,
                    (stmt.body, *(after if ends_in_jump(stmt.orelse.body) else ()))), stmt.orelse.body)
        finally:
            self.values.cond = outer_cond

    def note_first_operands(self, test: cst.BooleanOperation) -> None:
        """``b`` of ``i == 0 and b`` runs only when ``i == 0`` holds: on the loop's first iteration
        alone (short-circuit), so every node of it maps to that loop (:attr:`first_operands`)."""
        for sub, loop in first_operands(test, self.counters):
            self.first_operands.update(dict.fromkeys(map(id, preorder(sub)), loop))

    def exits(self, suite: cst.BaseSuite) -> tuple[int, ...]:
        """The loops ``suite`` leaves at its end: it runs at most once per run of each (:mod:`.loopexits`)."""
        return left_loops(suite, self.loop_ids, self.shelters, self.func) if self.loop_ids else ()

    def once_block(self, walk, suite: cst.BaseSuite) -> None:
        """``walk()`` over ``suite`` with the loops it leaves among :attr:`first_iters`."""
        outer = self.first_iters
        self.first_iters += self.exits(suite)
        try:
            walk()
        finally:
            self.first_iters = outer

    def timing_switch(self, stmt: cst.If) -> bool:
        """``if self.log_time:`` where a branch of that switch reads a clock (:mod:`.timingswitch`)."""
        name = switch_name(stmt)
        if name is None:
            return False
        body = self.values.body
        if self.timing_cache is None or self.timing_cache[0] is not body:
            self.timing_cache = (body, timing_switches(body, self.imports))
        return name in self.timing_cache[1]

    def is_constant_local(self, name: str) -> bool:
        return self.constant_locals.get((self.func.qualname, name), False)


def given_none_test(stmt: cst.If, fn, imports: dict[str, str]) -> str | None:
    """``if p is None:`` on a parameter every caller passes a value of a known kind, not rebound yet
    (``FunctionFacts.given``), whose body only binds ``p`` (a fallback): the body never runs on the
    decode path ("body"), so what it would bind (``pad = torch.any(...)``) never makes ``p`` a tensor
    (its flows stay: :meth:`BranchWalker._fallback_body`). The same for a type test a tensor fails
    (``if not torch.is_tensor(p):``) on a parameter every caller passes a tensor (:mod:`.typetests`),
    and for one only a tensor passes (``if isinstance(f, torch.Tensor): f = f.item()``) on a local the
    walk holds as Python data (``f = 1.0 + 1.0 * (x.shape[2] > 1)``): its conversion reads nothing back."""
    test = stmt.test
    typed = type_test(test, imports)
    if typed is not None:  # ``if not torch.is_tensor(p): p = torch.tensor(...)``, every caller passing a tensor
        name, verdict = typed
        local_host = verdict and name in fn.hosts and name not in fn.tensors and name not in fn.params
        given = not verdict and name in fn.given_tensors and name in fn.params
        return "body" if (given or local_host) and _fills(stmt, name) else None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)):
        return None
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    name = test.left.value
    if not (isinstance(right, cst.Name) and right.value == "None" and name in fn.given and name in fn.params):
        return None
    return "body" if isinstance(op, cst.Is) and _fills(stmt, name) else None


def _fills(stmt: cst.If, name: str) -> bool:
    """The body only binds the parameter (``pad = torch.any(...)``), and there is no ``else``: a
    fallback, whose skipping drops nothing of the walk but that binding (no flow of another name,
    no call statement; skipping a larger body lost flows the call graph then guessed around)."""
    if stmt.orelse is not None:
        return False
    for line in stmt.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            return False
        for small in line.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name):
                return False
    return True
