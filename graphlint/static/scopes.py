"""Functions, parameters and classes, as the walker enters them.

A mixin of :class:`graphlint.static.walker.Walker`: everything that starts a new scope (a new
:class:`FunctionInfo` with fresh tensor facts, a new :class:`ClassInfo`) and saves the walker's
per-function state around it, so nested defs and classes never leak into their parent.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Sequence

import libcst as cst

from graphlint.static.classtests import false_members
from graphlint.static.closurefacts import inherit
from graphlint.static.modetests import enum_members
from graphlint.static.cstwalk import COMPOUND_STATEMENTS
from graphlint.static.bindings import annotated_class, annotates_object
from graphlint.static.armedcalls import answered, arms_first
from graphlint.static.runonce import disarmed, property_fields
from graphlint.static.losscode import every_path_loss, spine_calls, top_level_loss_calls
from graphlint.static.facts import CallSite, ClassInfo, FunctionInfo
from graphlint.static.frameworkhooks import subscript_args
from graphlint.static.hostbuilders import host_builders
from graphlint.static.inherited import seed_inherited
from graphlint.static.distchecks import turns_validation_off
from graphlint.static.kindfacts import parse_facts, seed_params
from graphlint.static.valuekinds import TENSOR, UNKNOWN, learn_returns
from graphlint.static.names import dotted_name, is_device_code, resolve
from graphlint.static.nnlayers import layer_tensors
from graphlint.static.params import POSITION_NAMES, is_int_param, is_tensor_annotation, param_is_tensor
from graphlint.static.placedreturns import placed_shape
from graphlint.static.scalars import arith_helpers
from graphlint.static.restaged import mark_restaged_calls
from graphlint.static.stepflow import finish_function
from graphlint.static.syncpending import mark_idle_syncs
from graphlint.static.quietcalls import note_launches
from graphlint.static.tensors import ClassFacts, FunctionFacts
from graphlint.static.tensornames import LEGACY_TENSORS
from graphlint.static.typealiases import ALIAS, imported_spellings, module_aliases, own_aliases


class ScopeWalker:
    """Mixin of :class:`graphlint.static.walker.Walker` (which provides the attributes used here)."""

    #: names bound to a tensor type, this module's and imported ones (:mod:`.typealiases`)
    tensor_aliases: frozenset[str] = frozenset()

    #: (function body, the ids of the calls named like a loss it always runs): computed at the
    #: function's first loss-named call (:mod:`.losscode`)
    loss_cache: tuple | None = None
    spine_cache: tuple | None = None  # the same for :meth:`on_spine`
    every_loss: tuple | None = None  # (body, :meth:`loss_on_every_path`)

    def always_runs_loss(self, call: cst.Call) -> bool:
        """Whether ``call``, named like a loss, is in a statement the walked function always runs."""
        body = self.values.body
        if self.loss_cache is None or self.loss_cache[0] is not body:
            self.loss_cache = (body, top_level_loss_calls(body) if body is not None else set())
        return id(call) in self.loss_cache[1]

    def loss_on_every_path(self) -> bool:
        """Whether every path through the walked function computes a library loss (:func:`.losscode.every_path_loss`)."""
        body = self.values.body
        if self.every_loss is None or self.every_loss[0] is not body:
            self.every_loss = (body, body is not None and every_path_loss(body, self.imports))
        return self.every_loss[1]

    def on_spine(self, call: cst.Call) -> bool:
        """Whether ``call`` always runs with the walked function or a loop it always runs (:func:`.losscode.spine_calls`)."""
        body = self.values.body
        if self.spine_cache is None or self.spine_cache[0] is not body:
            self.spine_cache = (body, spine_calls(body) if body is not None else set())
        return id(call) in self.spine_cache[1]

    def module_facts(self, body: Sequence[cst.CSTNode], imported_tensor_functions: frozenset[str]) -> None:
        """What the module's functions return, known before any call to them is walked."""
        imported = frozenset(n[len(ALIAS):] for n in imported_tensor_functions if n.startswith(ALIAS))
        self.tensor_aliases = module_aliases(body, self.imports, imported, is_tensor_annotation)
        self.info.tensor_aliases = own_aliases(self.tensor_aliases)
        self.info.tensor_functions = self.tensor_returning(body)
        self.oracle.returns, self.param_facts = parse_facts(imported_tensor_functions)
        self.oracle.tensor_functions = self.info.tensor_functions | {n for n in imported_tensor_functions if ":" not in n}
        self.oracle.host_builders = host_builders(body, in_class=False)
        self.oracle.arith_helpers = arith_helpers(body)
        self.validation_off = turns_validation_off(body)  # distributions built here check nothing (GL109)
        # a table of commands or hooks (``COMMANDS = {"generate": generate_main}``) handed to a library
        # (``CLI(COMMANDS)``) hands over every function it holds (:meth:`.calls.CallRecorder.argument_references`)
        self.tables.update(t.target.value for stmt in body if isinstance(stmt, cst.SimpleStatementLine)
                           for small in stmt.body if isinstance(small, (cst.Assign, cst.AnnAssign))
                           and isinstance(small.value, (cst.Dict, cst.List, cst.Tuple))
                           for t in (small.targets if isinstance(small, cst.Assign) else (small,))
                           if isinstance(t.target, cst.Name))

    def tensor_returning(self, stmts: Sequence[cst.CSTNode]) -> set[str]:
        """Functions of this body annotated ``-> Tensor``, known before any call to them is seen."""
        return {
            stmt.name.value
            for stmt in stmts
            if isinstance(stmt, cst.FunctionDef)
            and stmt.returns is not None
            and self.annotates_tensor(stmt.returns.annotation)
        }

    def annotates_tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor annotation, through this file's aliases; else its imported spellings are kept
        (an imported alias arrives for them in the second round, :mod:`.typealiases`)."""
        if is_tensor_annotation(node, self.imports, self.tensor_aliases):
            return True
        self.info.annotated_imports.update(imported_spellings(node, self.imports))
        return False

    def prescan(self, stmts: Sequence[cst.CSTNode]) -> tuple[set[str], set[str]]:
        """Fields known before any method is walked (statements only, no expression is walked):
        ``self.x: torch.Tensor = ...`` in any method (a tensor field, also for a method above the
        annotating one), ``self.x = torch.empty(...)`` in any method (a placeholder a lazy set-up below the step
        makes, written before that set-up is walked), and ``self.n += k`` in a method other than ``__init__`` (a counter; not one a
        method also decreases, ``self.size -= 1``: the size of a collection that shrinks, a batch's
        count of sequences, changes when requests come and go, not every step)."""
        found: set[str] = set()
        counters: set[str] = set()
        shrunk: set[str] = set()
        stack: list = [(s, s.name.value == "__init__") for s in stmts if type(s) is cst.FunctionDef]
        while stack:
            node, init = stack.pop()
            if type(node) is cst.AnnAssign:
                target = node.target
                if type(target) is cst.Attribute and type(target.value) is cst.Name \
                        and target.value.value == "self" and self.annotates_tensor(node.annotation.annotation):
                    found.add(target.attr.value)
            elif type(node) is cst.Assign and type(node.value) is cst.Call \
                    and self.oracle.torch_call_kind(node.value.func) == "tensor" \
                    and resolve(node.value.func, self.imports) not in LEGACY_TENSORS:  # a host tensor: no field
                found.update(t.target.attr.value for t in node.targets if type(t.target) is cst.Attribute
                             and type(t.target.value) is cst.Name and t.target.value.value == "self")
            elif type(node) is cst.AugAssign:
                target = node.target
                if type(node.operator) in (cst.AddAssign, cst.SubtractAssign) \
                        and type(target) is cst.Attribute and type(target.value) is cst.Name \
                        and target.value.value == "self":
                    if type(node.operator) is cst.SubtractAssign:
                        shrunk.add(target.attr.value)
                    elif not init:
                        counters.add(target.attr.value)
            elif type(node) is cst.SimpleStatementLine:
                stack.extend((n, init) for n in node.body)
            elif (type(node) in COMPOUND_STATEMENTS or type(node) is cst.Else) and type(node) is not cst.ClassDef:
                body = getattr(node, "body", None)  # ``match`` has cases, not a body: not looked into
                stack.extend((n, init) for n in (body.body if type(body) in (cst.IndentedBlock, cst.SimpleStatementSuite) else ()))
                for part in (getattr(node, "orelse", None), getattr(node, "finalbody", None), *getattr(node, "handlers", ())):
                    if part is not None:
                        stack.append((part, init))
        return found, counters - shrunk

    def _new_function(self, qualname: str, name: str, cls: str) -> FunctionInfo:
        fn = FunctionInfo(qualname=qualname, name=name, cls=cls)
        self.info.functions[qualname] = fn
        self.calls.begin_function(qualname)
        return fn


    def lambda_function(self, qualname: str, callees: list) -> None:
        """A lambda's own function (:meth:`.flows.FlowRecorder.lambda_scope`): its body's calls
        (:mod:`.lambdabodies`) are its call sites, resolved with the parameters each call of the lambda
        binds. Its hazards stay the enclosing function's (the body is walked there, where its calls
        are deferred references)."""
        fn = FunctionInfo(qualname=qualname, name="<lambda>")
        for callee, call, whole in callees:  # the body's own call: plain, as before its nested ones were
            fn.calls.append(CallSite(callee, plain=whole or self.calls.looks_like_project_call(call.func), order=1))
        self.info.functions[qualname] = fn

    def function(self, stmt: cst.FunctionDef) -> None:
        name = stmt.name.value
        if self.func.qualname != "<module>":
            qualname = f"{self.func.qualname}.{name}"
            self.local_defs[-1][name] = qualname
        elif self.class_stack:
            qualname = f"{self.class_name}.{name}"
            self.class_stack[-1].methods.add(name)
            accessor = property_accessor(stmt, name)
            if accessor:  # ``@flag.setter def flag``: its own function, the getter keeps ``Config.flag``
                qualname = f"{qualname}.{accessor}"
        else:
            qualname = name
            self.local_names.add(name)
        saved = (self.func, self.oracle.fn, self.loop_depth, self.loop_target, self.in_capture, self.setup_depth,
                 self.order, self.loop_ids, self.loop_frames, self.tracking, self.loop_nodes, self.loop_bound,
                 self.device_loops, self.device_contexts, self.item_loops, self.item_names, self.module_loops,
                 self.counters, self.first_iters, self.branching, self.lazy_at, self.arms, self.admitting)
        self.flows.function(stmt, qualname, self.class_name)
        self.func = self._new_function(qualname, name, self.class_name)
        saved_values = self.values.begin(stmt, self.func)
        self.func.device_code = is_device_code(stmt.decorators, self.imports)
        self.func.compiled = self.compiled_decorator(stmt)
        self.func.abstract = bool(self.class_stack) and is_abstract(stmt, self.imports)
        if self.class_stack and saved[0].qualname == "<module>":  # a method: the flags it sets first (:mod:`.armedcalls`)
            self.info.armed_first.setdefault(name, []).append(frozenset(arms_first(stmt)))
        self.oracle.fn = FunctionFacts(defn=stmt)
        if saved[0].qualname != "<module>":
            inherit(saved[1], self.oracle.fn)  # a closure's free names: what the enclosing function holds
        self.loop_depth, self.loop_target, self.in_capture, self.setup_depth = 0, None, False, 0
        self.order, self.loop_ids, self.loop_frames, self.tracking = 0, [], [], 0
        self.loop_nodes, self.loop_bound, self.device_loops, self.device_contexts = [], [], 0, 0
        self.item_loops, self.item_names, self.module_loops = 0, set(), 0
        self.counters, self.first_iters, self.branching, self.lazy_at = (), (), 0, 0
        self.arms = ()  # its ``if`` ordinals restart: the enclosing function's arms are not its own
        self.admitting = ()  # nor are the enclosing function's admission loops (:mod:`.admitloops`)
        hot_named = any(fnmatchcase(name, p) for p in self.options.hot_names)
        implicit = name == "forward" or (name != "__call__" and hot_named)
        params = stmt.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value not in ("self", "cls"):
                self.declare_parameter(param, implicit)
        self.oracle.fn.star_params = (params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None,
                                      params.star_kwarg.name.value if params.star_kwarg is not None else None)
        seed_params(self.param_facts.get(qualname, ()), self.oracle)
        self.local_defs.append({})
        protocol = self.push_protocol_step(stmt)  # ``__next__``: one pass of the iteration protocol's loop
        first_raw = len(self.raw)
        depth = self.steady.begin()
        try:
            self.suite(stmt.body)
            if self.func.returns in (None, UNKNOWN, TENSOR) and stmt.asynchronous is None and \
                    (placed := placed_shape(stmt, bool(self.func.cls), self.oracle.returned)):
                self.func.returns = placed  # on the device a parameter names (:mod:`.placedreturns`)
            elif self.func.returns == UNKNOWN and stmt.asynchronous is None and stmt.returns is not None \
                    and self.annotates_tensor(stmt.returns.annotation):
                self.func.returns = TENSOR  # returns that disagree (a library's result): the annotation's word
            pending = self.steady.end(stmt, self.oracle, depth)
            finish_function(self.func, self.raw, first_raw, stmt)
            mark_idle_syncs(self.raw, first_raw, stmt.body, self.oracle, self.imports, self.func, self.calls.project)
            note_launches(self.func, stmt.body, self.oracle, self.imports, self.calls.project)  # before the oracle leaves
            mark_restaged_calls(pending, self.raw, first_raw, stmt, self.oracle, self.steady)
            self.func.field_reads = tuple(sorted(self.oracle.fn.reads)) if self.oracle.fn.reads else ()
            # only an annotation a truth test, an index or a read-back reads is ever overruled (:mod:`.overrules`):
            # kept whole, they were a set for most functions of the project in the planning's memory
            self.func.annotated_tensors &= self.func.test_names
            self.func.annotated_lists &= self.func.index_names | self.func.read_names
            self.func.annotated_ints &= self.func.index_names
        finally:
            if protocol:
                self.loop_ids.pop()
                self.pop_loop()
            learn_returns(qualname, self.func.cls, self.func.returns, self.oracle)
            self.flows.end()
            self.values.end(saved_values, stmt, self.func)
            self.local_defs.pop()
            (self.func, self.oracle.fn, self.loop_depth, self.loop_target, self.in_capture, self.setup_depth,
             self.order, self.loop_ids, self.loop_frames, self.tracking, self.loop_nodes, self.loop_bound,
             self.device_loops, self.device_contexts, self.item_loops, self.item_names, self.module_loops,
             self.counters, self.first_iters, self.branching, self.lazy_at, self.arms, self.admitting) = saved

    def declare_parameter(self, param: cst.Param, implicit: bool) -> None:
        """What a parameter is: a tensor, a position, an object of a known class, or host data."""
        name, facts = param.name.value, self.oracle.fn
        facts.params.add(name)
        if isinstance(param.default, cst.Name) and param.default.value == "None":
            facts.optional.add(name)
        if self.annotates_tensor(param.annotation.annotation) if param.annotation is not None \
                else param_is_tensor(param, self.imports, implicit):
            facts.tensors.add(name)
            self.func.device_work |= param.annotation is not None  # ``x: Tensor``: device data comes in
            if param.annotation is None:
                self.func.presumed_tensors.add(name)
                facts.presumed.add(name)
            else:
                self.func.annotated_tensors.add(name)
            return
        if is_int_param(param) and any(fnmatchcase(name, pat) for pat in POSITION_NAMES):
            facts.positions.add(name)
            if param.annotation is not None:
                self.func.annotated_ints.add(name)
        elif param.annotation is not None or param.default is not None:
            facts.hosts.add(name)
        if param.annotation is not None and _annotates_list(param.annotation.annotation):
            facts.lists.add(name)  # ``ids: list[int]``: indexing a device tensor with it copies it (GL208)
            self.func.annotated_lists.add(name)
        if param.annotation is not None and annotates_object(param.annotation.annotation):
            facts.modules.add(name)  # ``model: Llama``, ``layers: list[Layer] | None``
            named = annotated_class(param.annotation.annotation)
            if named is not None:
                facts.param_classes[name] = named

    def klass(self, stmt: cst.ClassDef) -> None:
        name = stmt.name.value
        qualname = f"{self.class_name}.{name}" if self.class_stack else name
        if not self.class_stack and self.func.qualname == "<module>":
            self.local_names.add(name)
        info = ClassInfo(qualname=qualname)
        for arg in stmt.bases:
            desc = self.calls.base_descriptor(arg.value)
            if desc is not None:
                info.bases.append(desc)
        info.base_args = subscript_args(stmt, self.calls.base_descriptor)
        for arg in stmt.keywords:
            if arg.keyword is not None and arg.keyword.value == "metaclass":
                info.metaclass = self.calls.base_descriptor(arg.value)
        info.dataclass = any((dotted_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                              or "").rsplit(".", 1)[-1] == "dataclass" for d in stmt.decorators)
        if info.dataclass:
            info.fields = dataclass_fields(stmt)
        info.false_members = false_members(stmt, info.dataclass)
        info.members = enum_members(stmt)
        self.info.classes[qualname] = info
        self.flows.klass(stmt, qualname)
        saved_cls, saved_name = self.oracle.cls, self.oracle.cls_name
        self.oracle.cls_name = qualname
        self.class_stack.append(info)
        self.steady.enter_class(stmt)
        self.oracle.cls = facts = ClassFacts(tensor_methods=self.tensor_returning(stmt.body.body),
                                             host_builders=host_builders(stmt.body.body, True, self.oracle.host_builders))
        info.tensor_methods = set(facts.tensor_methods)
        annotated, facts.counters = self.prescan(stmt.body.body)
        facts.tensor_attrs.update(annotated)
        seed_inherited(facts, self.inherited.get(qualname, ()))
        for desc in info.bases:  # ``class Linear(nn.Linear)``: ``self.weight`` is the library's parameter
            owned = layer_tensors(desc[1]) if desc[0] == "dotted" else ()
            facts.weight_attrs.update(owned)
            facts.tensor_attrs.update(owned)
        try:
            self.suite(stmt.body)
            self.resolve_state_calls(stmt, qualname)  # loops calling a method that reads their ``self`` state
            for m in self.matchers:
                self.guard_matcher(m, lambda m=m: m.end_class(self))
            # ``self._ready = True`` set in a base of this file counts too (``if not self.is_initialized:``)
            flags = facts.set_true.union(*(self.once_flags.get(b[1], ()) for b in info.bases if b[0] == "name"))
            writes = dict(facts.method_writes)
            for b in info.bases:  # a base of this file's methods run on ``self`` too
                for method, attrs in self.method_writes.get(b[1], {}).items() if b[0] == "name" else ():
                    writes.setdefault(method, set()).update(attrs)
            self.method_writes[qualname] = writes
            info.late_writes = tuple(sorted({a for m, attrs in facts.method_writes.items()
                                             if m not in ("__init__", "__post_init__") for a in attrs}))
            self.once_flags[qualname] = flags
            flags = flags | disarmed(self.raw, self.info.functions, qualname, writes, property_fields(stmt.body))
            flags |= answered(self.raw, self.info.functions, qualname, stmt)  # ``if R.needs_x(k): self._x(k)``
            self.drop_one_time_steps(qualname, flags)
        finally:
            self.flows.end()
            self.steady.exit_class()
            self.class_stack.pop()
            self.oracle.cls, self.oracle.cls_name = saved_cls, saved_name
        info.weight_attrs, info.tensor_attrs = set(facts.weight_attrs), set(facts.tensor_attrs)
        counters = facts.counters - facts.tensor_attrs
        info.counters = tuple(sorted(counters)) if counters else ()

    def drop_one_time_steps(self, cls: str, flags: set[str]) -> None:
        """``if not self._prepared: self._prepare(x)`` where the class sets ``self._prepared = True``:
        what that branch reports or calls runs once, not every step."""
        if not flags:
            return
        once = {f"once:{flag}" for flag in flags}
        functions = {q for q, fn in self.info.functions.items() if fn.cls == cls}
        self.raw = [r for r in self.raw if r.function not in functions or not (r.flags & once)]
        for qual in functions:
            fn = self.info.functions[qual]
            fn.calls = [c for c in fn.calls if c.once not in flags]


def _annotates_list(node: cst.BaseExpression) -> bool:
    """``list``, ``list[int]``, ``List[int]``, ``typing.List[int]`` (not ``Optional[...]``: it may be None)."""
    if isinstance(node, cst.Subscript):
        node = node.value
    return (dotted_name(node) or "").rsplit(".", 1)[-1] in ("list", "List")


def is_abstract(stmt: cst.FunctionDef, imports: dict[str, str]) -> bool:
    """``@abstractmethod``, or a body that is only a docstring, ``...``, ``pass`` or
    ``raise NotImplementedError``: an interface whose overrides are what runs."""
    if any(resolve(d.decorator, imports) in ("abc.abstractmethod", "abstractmethod") for d in stmt.decorators):
        return True
    body = stmt.body.body if type(stmt.body) is cst.IndentedBlock else [stmt.body]
    smalls = [s for line in body for s in (line.body if type(line) is cst.SimpleStatementLine else (line,))]
    for small in smalls:
        if type(small) is cst.Expr and type(small.value) in (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis):
            continue
        if type(small) is cst.Pass:
            continue
        if type(small) is cst.Raise and small.exc is not None and "NotImplementedError" in (
                resolve(small.exc.func if type(small.exc) is cst.Call else small.exc, imports) or ""):
            continue
        return False
    return True


def property_accessor(stmt: cst.FunctionDef, name: str) -> str:
    """``setter``/``deleter`` for ``@name.setter``/``@name.deleter`` (a property's other accessors,
    which Python binds to the same name as the getter), else ""."""
    for dec in stmt.decorators:
        node = dec.decorator
        if isinstance(node, cst.Attribute) and node.attr.value in ("setter", "deleter") \
                and isinstance(node.value, cst.Name) and node.value.value == name:
            return node.attr.value
    return ""


def dataclass_fields(stmt: cst.ClassDef) -> tuple[str, ...]:
    """``model_type: str`` / ``implementation: str = ""`` at class level, in order; ``ClassVar``
    annotations are class attributes, not fields."""
    found = []
    for line in stmt.body.body:
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.AnnAssign) or not isinstance(small.target, cst.Name):
                continue
            note = small.annotation.annotation
            note = note.value if isinstance(note, cst.Subscript) else note
            if (dotted_name(note) or "").rsplit(".", 1)[-1] != "ClassVar":
                found.append(small.target.value)
    return tuple(found)
