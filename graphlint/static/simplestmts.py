"""What each simple statement (assignment, import, ``assert``, ``return``, an expression) teaches
the walker: the tensor oracle's and value facts' updates, the flows, call bindings and field stores
an assignment makes, what a function returns. :class:`.walker.Walker` inherits it; kept apart from
the walk over compound statements (control flow: loops, branches, ``with``, ``try``), which is
where the enclosing context changes, while here it only is read.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import EXPRESSIONS
from graphlint.static.dictkeys import ABSENT_VALUE, called as dict_called, stored as dict_stored
from graphlint.static.bindings import annotates_object
from graphlint.static.fieldstores import record_stores
from graphlint.static.guards import written_attrs
from graphlint.static.runonce import note_constant
from graphlint.static.listrows import note_rows
from graphlint.static.names import callee_key, record_import
from graphlint.static.params import is_host_list_annotation
from graphlint.static.valuekinds import UNKNOWN, join, may_be_ours, shape_of


class SimpleStatements:
    """The simple-statement half of :class:`.walker.Walker` (whose state and helpers it uses)."""

    def small(self, stmt: cst.BaseSmallStatement) -> None:
        self.stmt = stmt
        self.values.call_exprs.clear()
        self.oracle.readback_seen = False
        self.flows.statement()
        if type(stmt) in (cst.Import, cst.ImportFrom):
            record_import(stmt, self.imports)
            self.flows.imported(stmt)
            return
        if type(stmt) in (cst.Global, cst.Nonlocal):
            self.flows.globals_([n.name.value for n in stmt.names], type(stmt) is cst.Nonlocal)
            return
        if type(stmt) is cst.Assign:
            if self.oracle.cls is not None:
                written = {a for t in stmt.targets if (a := self.oracle.is_self_attr(t.target))}
                if type(stmt.value) is cst.Name and stmt.value.value == "True":
                    self.oracle.cls.set_true.update(written)
                if written:
                    self.oracle.cls.method_writes.setdefault(self.func.name, set()).update(written)
            self.store_targets = {id(t.target) for t in stmt.targets}
            self.expr(stmt)
            self.store_targets = set()
            for target in stmt.targets:
                self.values.stored(target.target, stmt.value)
                record_stores(self, target.target, stmt.value)
                self.calls.bind(target.target, stmt.value)
                self.info.attr_writes.update(written_attrs(target.target, stmt.value, self.class_name))
            self.note_assignment([t.target for t in stmt.targets], stmt.value)
            note_constant(self.constant_locals, self.func.qualname, stmt)
            self.note_compile_options([t.target for t in stmt.targets], stmt.value)
            self.flows.use(stmt.value, top=False)
        elif type(stmt) is cst.AnnAssign:
            self.flows.annotated(stmt.target, stmt.annotation.annotation)
            self.store_targets = {id(stmt.target)}
            self.expr(stmt)
            self.store_targets = set()
            self.values.stored(stmt.target, stmt.value)
            record_stores(self, stmt.target, stmt.value)
            if stmt.value is not None:
                self.calls.bind(stmt.target, stmt.value)
                self.info.attr_writes.update(written_attrs(stmt.target, stmt.value, self.class_name))
                self.note_assignment([stmt.target], stmt.value)
                note_constant(self.constant_locals, self.func.qualname, stmt)
            if self.annotates_tensor(stmt.annotation.annotation):
                self.oracle.declare_tensor(stmt.target)
            elif type(stmt.target) is cst.Name and stmt.value is not None \
                    and is_host_list_annotation(stmt.annotation.annotation):
                self.oracle.fn.hosts.add(stmt.target.value)  # ``ids: List[int] = batch["ids"]``: Python data
            elif self.class_stack and self.oracle.is_self_attr(stmt.target) is not None \
                    and annotates_object(stmt.annotation.annotation):  # ``self.model: Model = model``
                self.calls.bindings.add_submodule(stmt.target.attr.value)
        elif type(stmt) is cst.AugAssign:
            written = self.oracle.is_self_attr(stmt.target) if self.oracle.cls is not None else None
            if written:  # ``self.size *= 2`` assigns the field too (a growth that disarms its guard)
                self.oracle.cls.method_writes.setdefault(self.func.name, set()).add(written)
            self.values.stored(stmt.target)
            record_stores(self, stmt.target, None)
            self.store_targets = {id(stmt.target)}
            self.expr(stmt)
            self.store_targets = set()
            if type(stmt.target) is cst.Name and self.oracle.is_tensor(stmt.value):
                self.oracle.fn.tensors.add(stmt.target.value)
            self.oracle.taint_augmented(stmt.target, stmt.value)
            self.note_assignment([stmt.target], stmt.value, augmented=True)
            target = stmt.target
            if type(target) is cst.Attribute and type(stmt.operator) is not cst.AddAssign:
                self.info.advanced_attrs.add("-" + target.attr.value)  # ``n -= 1``: no counter
            elif type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value != "self" \
                    and self.loop_ids:  # ``params.offset += n`` in a loop: a counter advanced from outside
                self.info.advanced_attrs.add("+" + target.attr.value)
        elif type(stmt) is cst.Raise:
            return  # the error path: a sync in its message runs only once the step has failed anyway
        elif type(stmt) is cst.Assert:
            self.visit_node(stmt)
            self.expr(stmt.test)  # not ``msg``: it is evaluated only when the assertion fails
            self.tested(stmt.test)
            self.flows.use(stmt.test)
        else:
            self.expr(stmt)
            if type(stmt) in (cst.Expr, cst.Return) and stmt.value is not None:
                self.flows.use(stmt.value)
                self.note_handover(stmt)
            if type(stmt) is cst.Del:
                for target in (stmt.target.elements if type(stmt.target) is cst.Tuple else ()):
                    dict_stored(self.values, target.value, ABSENT_VALUE)
                dict_stored(self.values, stmt.target, ABSENT_VALUE)
            if type(stmt) is cst.Expr and type(stmt.value) is cst.Call:
                dict_called(self.values, stmt.value)
                self.calls.bindings.record_module_call(stmt.value)
                note_rows(self.oracle, stmt.value)
            elif type(stmt) is cst.Expr and type(stmt.value) in (cst.Yield, cst.Await):
                inner = stmt.value.value if type(stmt.value) is cst.Yield else None
                if type(stmt.value) is cst.Yield:
                    self.values.hands_back.items = {}  # a generator: its call returns no tuple
                self.flows.returns(inner if type(inner) in EXPRESSIONS else None)
                self.func.returns = UNKNOWN  # a generator: its caller gets the generator
                self.func.forwards = False
            elif type(stmt) is cst.Return:
                if type(stmt.value) is cst.Call:  # ``return f(x)``: what ``f`` returns, if a host tensor
                    key = callee_key(stmt.value.func, self.oracle.cls_name)
                    if key is not None and may_be_ours(key, self.oracle):
                        self.func.passed_back.add(key)
                self.flows.returns(stmt.value, keyed=True)
                self.values.returned(stmt.value)
                if self.func.returns != UNKNOWN:
                    self.func.returns = join(self.func.returns, shape_of(stmt.value, self.oracle))
