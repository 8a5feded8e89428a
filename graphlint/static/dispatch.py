"""Which matcher sees which node: the part of :class:`graphlint.static.walker.Walker` that walks
expressions. Statements are walked explicitly (the walker knows the enclosing function, loop,
guard and capture region); an expression is walked flat, in pre-order, each node handed to the
matchers that asked for its type -- a call only to those that asked for its callee or method name
(looked up per call: most matchers care about a few names, and a call is the commonest node). On
the way, each call is named and recorded for the call graph (:mod:`.calls`, :mod:`.flows`).

A rule that raises is dropped for the rest of the file with an internal-error note; the file goes
on (never crash, never lose data).
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from graphlint.static.compound import guarded_operands
from graphlint.static.cstwalk import preorder
from graphlint.static.lambdabodies import body_calls
from graphlint.static.listrows import list_indexed
from graphlint.static.matchers.base import Matcher
from graphlint.static.readbacks import READBACK_METHODS, is_readback
from graphlint.static.scalars import reduced_name
from graphlint.static.typetests import type_test
from graphlint.static.stepflow import record_slice_reads
from graphlint.static.weightargs import cast_root

COMPREHENSIONS = frozenset(("ListComp", "SetComp", "GeneratorExp", "DictComp"))
#: the operands of an expression that run only when another decides so (or later, a lambda's body)
CONDITIONAL = {"BooleanOperation": lambda n: (n.right,), "IfExp": lambda n: (n.body, n.orelse),
               "Lambda": lambda n: (n.body,)}


class MatcherDispatch:
    def init_dispatch(self, matchers: Sequence[Matcher]) -> None:
        self.matchers = list(matchers)
        self.dispatch: dict[str, list[Matcher]] = {}
        #: Call matchers that only care about some callee names / method names, looked up per call
        self.by_callee: dict[str, list[Matcher]] = {}
        self.by_method: dict[str, list[Matcher]] = {}
        for m in self.matchers:
            index = m.call_index()
            for node_type in m.node_types:
                if node_type == "Call" and index is not None:
                    for kind, keys in index.items():
                        table = self.by_callee if kind == "callee" else self.by_method
                        for key in keys:
                            table.setdefault(key, []).append(m)
                else:
                    self.dispatch.setdefault(node_type, []).append(m)

    def lambda_params(self) -> set[str]:
        """Names a lambda of the current function binds: ``lambda x: x.item()`` says nothing of another
        lambda's ``x`` (``lambda x: int(x)``), nor of the function's own ``x``."""
        fn = self.oracle.fn
        if getattr(self, "_lambda_fn", None) is not fn:
            self._lambda_fn, self._lambda_names = fn, set()
        return self._lambda_names

    def visit_node(self, node: cst.CSTNode, extra: tuple[Matcher, ...] = ()) -> None:
        for m in (*self.dispatch.get(type(node).__name__, ()), *extra):
            try:
                m.visit(node, self)
            except Exception as exc:  # one broken rule must not stop the file
                self.drop_matcher(m, exc)

    def guard_matcher(self, m: Matcher, action) -> None:
        try:
            action()
        except Exception as exc:
            self.drop_matcher(m, exc)

    def drop_matcher(self, m: Matcher, exc: Exception) -> None:
        if isinstance(exc, (RecursionError, MemoryError)):
            raise exc  # the file is over the budget, not the rule broken: see graphlint.static.budget
        self.errors.append((tuple(self.path), f"internal error in rule {m.rule.code} ({m.rule.name}): {exc!r}"))
        self.matchers.remove(m)
        for table in (self.dispatch, self.by_callee, self.by_method):
            for handlers in table.values():
                if m in handlers:
                    handlers.remove(m)

    def tested(self, test: cst.BaseExpression) -> None:
        """Note the names a truth test reads (:attr:`.facts.FunctionInfo.test_names`)."""
        self.func.test_names.update(node.value for node in preorder(test) if type(node) is cst.Name)
        typed = type_test(test, self.oracle.imports)
        if typed is not None:
            self.func.type_tested.add(typed[0])

    def expr(self, root: cst.CSTNode) -> None:
        """Every node of ``root`` to its matchers; an operand that runs only when an earlier one
        decides so (``b`` in ``a and b``, the sides of ``x if c else y``) is walked with that
        conjunct added to the branch conditions (:mod:`.compound`)."""
        dispatch, skip, pending, called = self.dispatch, set(), {}, set()
        for node in preorder(root):
            if skip and id(node) in skip:
                continue  # inside ``... if DEBUG else ...``'s guarded branch, or a guarded operand
            first = self.first_operands.get(id(node)) if self.first_operands else None
            if first is not None and first not in self.first_iters:  # ``b`` of ``i == 0 and b`` (:mod:`.iterations`)
                skip.update(map(id, preorder(node)))
                outer_first, self.first_iters = self.first_iters, self.first_iters + (first,)
                try:
                    self.expr(node)
                finally:
                    self.first_iters = outer_first
                continue
            if pending and id(node) in pending:
                skip.update(map(id, preorder(node)))
                outer = self.values.cond
                self.values.cond = outer + (pending.pop(id(node)),)
                try:
                    self.expr(node)
                finally:
                    self.values.cond = outer
                continue
            name = type(node).__name__
            if name in CONDITIONAL:
                self.cond_calls.update(id(n) for sub in CONDITIONAL[name](node) for n in preorder(sub) if type(n) is cst.Call)
            if name == "BooleanOperation" or name == "IfExp":
                if name == "BooleanOperation" and self.counters:
                    self.note_first_operands(node)
                pending.update((id(sub), conj) for sub, conj in guarded_operands(self.values, node, self.oracle.fn.shapes))
            if name == "Subscript":  # a slice bounded by a device tensor: a read-back (:mod:`.stepflow`)
                record_slice_reads(self.func, self.order, self.path, self.loop_ids, node, self.oracle)
                self.func.index_names.update(el.slice.value.value for el in node.slice if type(el.slice) is cst.Index
                                             and type(el.slice.value) is cst.Name)
                if list_indexed(node, self.oracle):  # ``lp[i, list(ids)]``: an upload if callers pass a device tensor
                    self.func.reduced_names.add(node.value.value)
                used = [n.value for el in node.slice for n in preorder(el.slice) if type(n) is cst.Name]
                self.func.step_uses.update(used)
                if self.oracle.fn.calls:
                    self.oracle.slice_names(used)
            elif name == "Call" and type(node.func) is cst.Attribute and node.func.attr.value in READBACK_METHODS \
                    and type(node.func.value) is cst.Name:
                self.func.read_names.add(node.func.value.value)  # ``ids.item()``: no list's method (:mod:`.overrules`)
            elif name == "IfExp" or name == "CompIf":
                self.tested(node.test)
            if name == "Name":
                self.calls.name_reference(node, id(node) in called)
            elif name in COMPREHENSIONS:
                self.oracle.taint_comprehension(node.for_in)
                self.oracle.iterated(node.for_in)
            elif name == "Lambda":
                self.lambda_params().update(p.name.value for p in (*node.params.posonly_params, *node.params.params,
                                                                    *node.params.kwonly_params))
                for call in body_calls(node):  # its body's calls are deferred (:mod:`.lambdabodies`)
                    self.calls.deferred.setdefault(id(call), None)
            elif name == "Call":
                func = node.func
                if type(func) is cst.Name:
                    called.add(id(func))  # its callee, visited next: no value handed on (:meth:`.calls.CallRecorder.name_reference`)
                cast = cast_root(node)
                if cast is not None:
                    self.func.cast_names.add(cast)
                reduced = reduced_name(node)
                if reduced is not None and reduced not in self.oracle.fn.tensors:  # a tensor already: nothing to learn
                    self.func.reduced_names.add(reduced)
                self.call_name = self.calls.callee_name(func)
                if not self.oracle.readback_seen and is_readback(node, self.oracle):
                    self.oracle.readback_seen = True
                self.call_expr = self.values.call_exprs[id(node)] = self.flows.call(node)
                self.flows.unless.called(self.flows, self.call_expr)  # ``if isinstance(p, C): p.m()`` (:mod:`.typenarrow`)
                self.always_call = not self.branching and id(node) not in self.cond_calls
                self.calls.call_site(node)
                self.always_call = False
                extra = self.by_callee.get(self.call_name, ()) if self.call_name else ()
                if type(func) is cst.Attribute:
                    extra = (*extra, *self.by_method.get(func.attr.value, ()))
                if extra or name in dispatch:
                    self.visit_node(node, extra)
                if type(func) is cst.Attribute and type(func.value) is cst.Name and func.attr.value == "item" \
                        and not node.args and func.value.value not in self.lambda_params():
                    self.oracle.read_back(func.value.value)
            elif name == "IfExp":
                hidden = list(self.guards.skipped_ifexp(node))
                if not hidden and name in dispatch:
                    self.visit_node(node)
                skip.update(map(id, hidden))
            elif name in dispatch:
                self.visit_node(node)
