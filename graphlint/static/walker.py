"""One pass over a libcst module: functions, classes, call sites, hazard candidates.

Statements are walked explicitly (so we know the enclosing function, class, loop, guard and
capture region); expressions with a flat pre-order walk that hands each node to the matchers
that asked for its type. Tensor facts are updated in source order as assignments are passed.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable, Sequence

import libcst as cst

from graphlint.rules import Rule
from graphlint.static.api import StaticOptions
from graphlint.static.cstwalk import preorder
from graphlint.static.matchers import Matcher
from graphlint.static.model import CallSite, ClassInfo, Descriptor, FunctionInfo, ModuleInfo
from graphlint.static.names import dotted_name, is_imported_root, record_import, resolve
from graphlint.static.tensors import (
    MODULE_CONTAINERS,
    POSITION_NAMES,
    ClassFacts,
    FunctionFacts,
    TensorOracle,
    is_tensor_annotation,
    param_is_tensor,
)

BUILTIN_NAMES = frozenset(dir(builtins))
COMPREHENSIONS = frozenset(("ListComp", "SetComp", "GeneratorExp", "DictComp"))
CAPTURE_CONTEXTS = ("torch.cuda.graph", "torch.cuda.graphs.graph")
CAPTURE_CALLS = ("torch.cuda.make_graphed_callables",)
CAPTURING_PREDICATE = "torch.cuda.is_current_stream_capturing"


@dataclass
class RawCandidate:
    rule: Rule
    path: tuple[tuple[str, int], ...]
    stmt: cst.CSTNode
    anchor: cst.CSTNode
    name: str
    function: str
    in_capture: bool


class Walker:
    """Also the ``MatchContext`` the matchers see."""

    def __init__(self, path: str, matchers: Sequence[Matcher], options: StaticOptions):
        self.info = ModuleInfo(path=path)
        self.imports = self.info.imports
        self.oracle = TensorOracle(self.imports)
        self.options = options
        self.matchers = list(matchers)
        self.dispatch: dict[str, list[Matcher]] = {}
        #: Call matchers that only care about some callee names / method names, looked up per call
        self.by_callee: dict[str, list[Matcher]] = {}
        self.by_method: dict[str, list[Matcher]] = {}
        for m in self.matchers:
            index = m.call_index()
            for node_type in m.node_types:
                if node_type == "Call" and index is not None:
                    table = self.by_callee if index[0] == "callee" else self.by_method
                    for key in index[1]:
                        table.setdefault(key, []).append(m)
                else:
                    self.dispatch.setdefault(node_type, []).append(m)
        self._call_keys: dict[str, set] = {}
        self.raw: list[RawCandidate] = []
        self.errors: list[tuple[int, int, str]] = []
        self.local_names: set[str] = set()
        self.loop_depth = 0
        self.setup_depth = 0  # inside ``if self.x is None: self.x = ...`` (lazy initialisation)
        self.in_capture = False
        self.class_stack: list[ClassInfo] = []
        self.local_defs: list[dict[str, str]] = []
        self.func = self._new_function("<module>", "<module>", "")
        self.path: list[tuple[str, int]] = []
        self.stmt: cst.CSTNode | None = None
        self.store_targets: set[int] = set()
        self.call_name: str | None = None  # resolved callee of the Call being visited

    # -- MatchContext ------------------------------------------------------------------
    @property
    def class_name(self) -> str:
        return self.class_stack[-1].qualname if self.class_stack else ""

    @property
    def function_name(self) -> str:
        return self.func.name

    def defer(self, rule: Rule, anchor: cst.CSTNode, name: str = "") -> RawCandidate:
        return RawCandidate(rule, tuple(self.path), self.stmt, anchor, name, self.func.qualname, self.in_capture)

    def emit(self, raw: RawCandidate) -> None:
        self.raw.append(raw)

    def report(self, rule: Rule, anchor: cst.CSTNode, name: str = "") -> None:
        if self.setup_depth and not self.in_capture:
            return  # lazy one-time initialisation: setup, not the step
        self.raw.append(self.defer(rule, anchor, name))

    def is_store_target(self, node: cst.CSTNode) -> bool:
        return id(node) in self.store_targets

    # -- entry point -------------------------------------------------------------------
    def run(self, module: cst.Module) -> ModuleInfo:
        self.body(module.body, "body")
        return self.info

    def _new_function(self, qualname: str, name: str, cls: str) -> FunctionInfo:
        fn = FunctionInfo(qualname=qualname, name=name, cls=cls)
        self.info.functions[qualname] = fn
        self._call_keys[qualname] = set()
        return fn

    # -- statements --------------------------------------------------------------------
    def body(self, stmts: Iterable[cst.CSTNode], field: str) -> None:
        index = 0
        for stmt in stmts:
            smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else (stmt,)
            for small in smalls:
                self.path.append((field, index))
                try:
                    if isinstance(small, cst.BaseSmallStatement):
                        self.small(small)
                    else:
                        self.compound(small)
                finally:
                    self.path.pop()
                index += 1

    def suite(self, suite: cst.BaseSuite, field: str = "body") -> None:
        self.body(suite.body, field)

    def small(self, stmt: cst.BaseSmallStatement) -> None:
        self.stmt = stmt
        if isinstance(stmt, (cst.Import, cst.ImportFrom)):
            record_import(stmt, self.imports)
            return
        if isinstance(stmt, cst.Assign):
            self.store_targets = {id(t.target) for t in stmt.targets}
            self.expr(stmt)
            self.store_targets = set()
            for target in stmt.targets:
                self.bind(target.target, stmt.value)
        elif isinstance(stmt, cst.AnnAssign):
            self.store_targets = {id(stmt.target)}
            self.expr(stmt)
            self.store_targets = set()
            if stmt.value is not None:
                self.bind(stmt.target, stmt.value)
        elif isinstance(stmt, cst.AugAssign):
            self.store_targets = {id(stmt.target)}
            self.expr(stmt)
            self.store_targets = set()
            if isinstance(stmt.target, cst.Name) and self.oracle.is_tensor(stmt.value):
                self.oracle.fn.tensors.add(stmt.target.value)
            if isinstance(stmt.target, cst.Name) and self.oracle.uses_position(stmt.value):
                if not self.oracle.is_tensor(stmt.value):
                    self.oracle.fn.positions.add(stmt.target.value)
        else:
            self.expr(stmt)
            if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
                self.record_module_call(stmt.value)

    def compound(self, stmt: cst.CSTNode) -> None:
        self.stmt = stmt
        if isinstance(stmt, cst.FunctionDef):
            self.function(stmt)
        elif isinstance(stmt, cst.ClassDef):
            self.klass(stmt)
        elif isinstance(stmt, cst.If):
            self.if_(stmt)
        elif isinstance(stmt, (cst.For, cst.While)):
            self.loop(stmt)
        elif isinstance(stmt, cst.With):
            self.with_(stmt)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self.suite(stmt.body)
            for i, handler in enumerate(stmt.handlers):
                self.suite(handler.body, f"handlers.{i}")
            if stmt.orelse is not None:
                self.suite(stmt.orelse.body, "orelse")
            if stmt.finalbody is not None:
                self.suite(stmt.finalbody.body, "finalbody")
        elif isinstance(stmt, cst.Match):
            self.expr(stmt.subject)
            for i, case in enumerate(stmt.cases):
                self.suite(case.body, f"cases.{i}")

    def if_(self, stmt: cst.If) -> None:
        self.visit_node(stmt)
        self.expr(stmt.test)
        guarded = self.guarded_branch(stmt.test)
        if guarded != "body" and self.is_lazy_init(stmt):
            self.setup_depth += 1
            try:
                self.suite(stmt.body)
            finally:
                self.setup_depth -= 1
        elif guarded != "body":
            self.suite(stmt.body)
        if stmt.orelse is None or guarded == "orelse":
            return
        if isinstance(stmt.orelse, cst.If):
            self.path.append(("orelse", 0))
            try:
                self.stmt = stmt.orelse
                self.if_(stmt.orelse)
            finally:
                self.path.pop()
        else:
            self.suite(stmt.orelse.body, "orelse")

    def is_lazy_init(self, stmt: cst.If) -> bool:
        """``if self._runner is None: self._runner = build()``: runs once, on the first (eager) step."""
        test = stmt.test
        if not (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Is)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None"
        ):
            return False
        attr = self.oracle.is_self_attr(test.left)
        if attr is None:
            return False
        for node in preorder(stmt.body):
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign)) and self.oracle.is_self_attr(node.target) == attr:
                return True
        return False

    def guarded_branch(self, test: cst.BaseExpression) -> str | None:
        """Which branch of ``if test`` never runs in a captured decode step: "body", "orelse" or None."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.guarded_branch(test.expression)
            return {"body": "orelse", "orelse": "body"}.get(inner or "")
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            if "body" in (self.guarded_branch(test.left), self.guarded_branch(test.right)):
                return "body"
            return None
        if isinstance(test, cst.Call):
            return "orelse" if resolve(test.func, self.imports) == CAPTURING_PREDICATE else None
        last = test.attr.value if isinstance(test, cst.Attribute) else test.value if isinstance(test, cst.Name) else None
        if last is not None and any(fnmatchcase(last, pat) for pat in self.options.guards):
            return "body"
        return None

    def loop(self, stmt: cst.For | cst.While) -> None:
        self.visit_node(stmt)
        if isinstance(stmt, cst.For):
            self.store_targets = {id(stmt.target)}
            self.expr(stmt.target)
            self.store_targets = set()
            self.expr(stmt.iter)
            self.bind_loop_target(stmt.target, stmt.iter)
        else:
            self.expr(stmt.test)
        self.loop_depth += 1
        try:
            self.suite(stmt.body)
        finally:
            self.loop_depth -= 1
        if stmt.orelse is not None:
            self.suite(stmt.orelse.body, "orelse")

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        self.oracle.taint_positions(target, iterable)
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate":
            if iterable.args and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self.oracle.bind(target.elements[0].value, None)
                self.oracle.taint_positions(target.elements[0].value, None)
                self.bind_loop_target(target.elements[1].value, iterable.args[0].value)
                return
        source = self.oracle.module_source(iterable)
        if source is not None and isinstance(target, cst.Name):
            self.oracle.fn.module_aliases[target.value] = source
            return
        path = self.object_path(iterable)
        if path is not None and path[1] and isinstance(target, cst.Name):
            self.oracle.fn.objects[target.value] = path
            return
        tensor = self.oracle.is_tensor(iterable)
        for name in preorder(target):
            if isinstance(name, cst.Name):
                (self.oracle.fn.tensors.add if tensor else self.oracle.fn.tensors.discard)(name.value)
                self.oracle.fn.module_aliases.pop(name.value, None)

    def with_(self, stmt: cst.With) -> None:
        captures = False
        for item in stmt.items:
            self.expr(item.item)
            call = item.item
            if isinstance(call, cst.Call) and resolve(call.func, self.imports) in CAPTURE_CONTEXTS:
                captures = True
        if captures:
            self.func.captures = True
        outer = self.in_capture
        self.in_capture = outer or captures
        try:
            self.suite(stmt.body)
        finally:
            self.in_capture = outer

    # -- scopes ------------------------------------------------------------------------
    def function(self, stmt: cst.FunctionDef) -> None:
        name = stmt.name.value
        if self.func.qualname != "<module>":
            qualname = f"{self.func.qualname}.{name}"
            self.local_defs[-1][name] = qualname
        elif self.class_stack:
            qualname = f"{self.class_name}.{name}"
            self.class_stack[-1].methods.add(name)
        else:
            qualname = name
            self.local_names.add(name)
        if stmt.returns is not None and is_tensor_annotation(stmt.returns.annotation, self.imports):
            if self.class_stack and self.func.qualname == "<module>" and self.oracle.cls is not None:
                self.oracle.cls.tensor_methods.add(name)
            elif not self.class_stack and self.func.qualname == "<module>":
                self.oracle.tensor_functions.add(name)
        saved = (self.func, self.oracle.fn, self.loop_depth, self.in_capture, self.setup_depth)
        self.func = self._new_function(qualname, name, self.class_name)
        self.oracle.fn = FunctionFacts()
        self.loop_depth, self.in_capture, self.setup_depth = 0, False, 0
        implicit = name == "forward" or (name != "__call__" and any(fnmatchcase(name, p) for p in self.options.hot_names))
        params = stmt.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value in ("self", "cls"):
                continue
            if param_is_tensor(param, self.imports, implicit):
                self.oracle.fn.tensors.add(param.name.value)
            elif any(fnmatchcase(param.name.value, pat) for pat in POSITION_NAMES):
                self.oracle.fn.positions.add(param.name.value)
            elif param.annotation is not None:
                cls = self.class_annotation(param.annotation.annotation)
                if cls is not None:
                    self.oracle.fn.objects[param.name.value] = (cls, ())
        self.local_defs.append({})
        try:
            self.suite(stmt.body)
        finally:
            self.local_defs.pop()
            self.func, self.oracle.fn, self.loop_depth, self.in_capture, self.setup_depth = saved

    def klass(self, stmt: cst.ClassDef) -> None:
        name = stmt.name.value
        qualname = f"{self.class_name}.{name}" if self.class_stack else name
        if not self.class_stack and self.func.qualname == "<module>":
            self.local_names.add(name)
        info = ClassInfo(qualname=qualname)
        for arg in stmt.bases:
            desc = self.descriptor(arg.value)
            if desc is not None:
                info.bases.append(desc)
        self.info.classes[qualname] = info
        saved_cls = self.oracle.cls
        self.class_stack.append(info)
        self.oracle.cls = ClassFacts()
        try:
            self.suite(stmt.body)
            for m in self.matchers:
                self.guard_matcher(m, lambda m=m: m.end_class(self))
        finally:
            self.class_stack.pop()
            self.oracle.cls = saved_cls

    # -- expressions -------------------------------------------------------------------
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
        self.errors.append((1, 0, f"internal error in rule {m.rule.code} ({m.rule.name}): {exc!r}"))
        self.matchers.remove(m)
        for table in (self.dispatch, self.by_callee, self.by_method):
            for handlers in table.values():
                if m in handlers:
                    handlers.remove(m)

    def expr(self, root: cst.CSTNode) -> None:
        dispatch = self.dispatch
        for node in preorder(root):
            name = type(node).__name__
            if name == "Name":
                self.name_reference(node)
            elif name in COMPREHENSIONS and self.oracle.fn.positions:
                comp = node.for_in  # before the element is visited: ``[ring[p % W] for p in range(start, end)]``
                while comp is not None:
                    self.oracle.taint_positions(comp.target, comp.iter)
                    comp = comp.inner_for_in
            elif name == "Call":
                func = node.func
                self.call_name = resolve(func, self.imports) if type(func) in (cst.Name, cst.Attribute) else None
                self.call_site(node)
                extra = self.by_callee.get(self.call_name, ()) if self.call_name else ()
                if type(func) is cst.Attribute:
                    extra = (*extra, *self.by_method.get(func.attr.value, ()))
                if extra or name in dispatch:
                    self.visit_node(node, extra)
            elif name in dispatch:
                self.visit_node(node)

    def descriptor(self, func: cst.BaseExpression) -> Descriptor | None:
        """A class or function reference, for the linker to resolve."""
        if isinstance(func, cst.Name):
            if func.value in self.imports:
                return ("dotted", self.imports[func.value])
            for scope in reversed(self.local_defs):
                if func.value in scope:
                    return ("local", scope[func.value])
            return None if func.value in BUILTIN_NAMES else ("name", func.value)
        if isinstance(func, cst.Attribute) and is_imported_root(func, self.imports):
            return ("dotted", resolve(func, self.imports))
        return None

    def class_annotation(self, node: cst.BaseExpression) -> Descriptor | None:
        """``model: DSV4Model`` / ``Optional[Cache]`` / ``"Cache"`` -> a class descriptor."""
        if isinstance(node, cst.SimpleString):
            text = node.raw_value
            return ("name", text) if text.isidentifier() and text[:1].isupper() else None
        if isinstance(node, cst.BinaryOperation):
            return self.class_annotation(node.left) or self.class_annotation(node.right)
        if isinstance(node, cst.Subscript):
            name = dotted_name(node.value) or ""
            if name.rsplit(".", 1)[-1] == "Optional" and node.slice and isinstance(node.slice[0].slice, cst.Index):
                return self.class_annotation(node.slice[0].slice.value)
            return None
        name = dotted_name(node)
        if name is None or not name.rsplit(".", 1)[-1][:1].isupper():
            return None
        return self.descriptor(node)

    def object_path(self, node: cst.BaseExpression) -> tuple | None:
        """``self.model.blocks[i]`` -> ("self", ("model", "blocks")); subscripts are transparent."""
        attrs: list[str] = []
        while True:
            if isinstance(node, cst.Attribute):
                attrs.append(node.attr.value)
                node = node.value
            elif isinstance(node, cst.Subscript):
                node = node.value
            else:
                break
        if not isinstance(node, cst.Name):
            return None
        if node.value == "self":
            root, base = "self", ()
        elif node.value in self.oracle.fn.objects:
            root, base = self.oracle.fn.objects[node.value]
        else:
            return None
        return (root, (*base, *reversed(attrs)))

    def name_reference(self, node: cst.Name) -> None:
        """A nested def used as a value (returned, passed, stored) will be called by whoever gets it."""
        for scope in reversed(self.local_defs):
            if node.value in scope:
                self.add_call(("local", scope[node.value]))
                return

    def argument_references(self, call: cst.Call) -> None:
        """``Region("embed", self._embed)``, ``partial(self._layer, i)``: a bound method or module
        function passed as an argument is a callback, called later on the caller's behalf."""
        for arg in call.args:
            value = arg.value
            if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
                self.add_call(("ref", ("member", ("self", ()), value.attr.value)))
            elif isinstance(value, cst.Name) and value.value in self.local_names:
                self.add_call(("ref", ("name", value.value)))

    def add_call(self, desc: Descriptor) -> None:
        if self.setup_depth and not self.in_capture:
            return
        key = (desc, self.in_capture)
        seen = self._call_keys[self.func.qualname]
        if key not in seen:
            seen.add(key)
            self.func.calls.append(CallSite(desc, self.in_capture))

    def call_site(self, call: cst.Call) -> None:
        if call.args:
            self.argument_references(call)
        func = call.func
        desc: Descriptor | None = None
        oracle = self.oracle
        if isinstance(func, cst.Name) and func.value in oracle.fn.module_aliases:
            desc = ("member", ("self", (oracle.fn.module_aliases[func.value],)), None)
        elif isinstance(func, cst.Attribute):
            base, method = func.value, func.attr.value
            path = self.object_path(base)
            if isinstance(base, cst.Name) and base.value in oracle.fn.module_aliases:
                desc = ("member", ("self", (oracle.fn.module_aliases[base.value],)), method)
            elif path is not None:
                desc = ("member", path, method)
            elif isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value == "super":
                desc = ("super", method)
            else:
                desc = self.descriptor(func)
                if method in ("capture_begin", "capture_end"):  # manual capture: a region until capture_end
                    self.func.captures = True
                    self.in_capture = method == "capture_begin"
                elif desc and desc[1] in CAPTURE_CALLS:
                    self.func.captures = True
        elif isinstance(func, cst.Subscript):
            source = oracle.module_source(func)
            path = self.object_path(func)
            if source is not None:
                desc = ("member", ("self", (source,)), None)
            elif path is not None and path[1]:
                desc = ("member", path, None)
        elif isinstance(func, cst.Name) and func.value in oracle.fn.objects and oracle.fn.objects[func.value][1]:
            desc = ("member", oracle.fn.objects[func.value], None)
        else:
            desc = self.descriptor(func)
        if desc is not None:
            self.add_call(desc)

    # -- bindings ----------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
            if len(target.elements) == len(value.elements):
                for t, v in zip(target.elements, value.elements):
                    self.bind(t.value, v.value)
                return
        self.oracle.bind(target, value)
        self.oracle.taint_positions(target, value)
        if isinstance(target, cst.Name):
            path = self.object_path(value) if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) else None
            if path is not None and path != ("self", ()):
                self.oracle.fn.objects[target.value] = path
            else:
                self.oracle.fn.objects.pop(target.value, None)
        attr = self.oracle.is_self_attr(target)
        if attr is not None and self.class_stack:
            types = self.module_types(value)
            if not types and isinstance(value, cst.Name) and value.value in self.oracle.fn.objects:
                root, attrs = self.oracle.fn.objects[value.value]
                types = [root] if root != "self" and not attrs else []
            if types:
                self.add_submodule(attr, types)

    def add_submodule(self, attr: str, types: list[Descriptor]) -> None:
        known = self.class_stack[-1].submodules.setdefault(attr, [])
        known.extend(t for t in types if t not in known)
        if self.oracle.cls is not None:
            self.oracle.cls.module_attrs.add(attr)

    def module_types(self, value: cst.BaseExpression) -> list[Descriptor]:
        """``Attention(...)`` -> [Attention]; ``nn.ModuleList([Block(...) for _ in ...])`` -> [Block]."""
        if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.module_types(value.elt)
        if isinstance(value, cst.DictComp):
            return self.module_types(value.value)
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return [t for el in value.elements for t in self.module_types(el.value)]
        if isinstance(value, cst.Dict):
            return [t for el in value.elements if isinstance(el, cst.DictElement) for t in self.module_types(el.value)]
        if not isinstance(value, cst.Call):
            return []
        name = dotted_name(value.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last in MODULE_CONTAINERS:
            types = [t for arg in value.args for t in self.module_types(arg.value)]
            return types or [("dotted", "torch.nn." + last)]
        if last[:1].isupper():
            desc = self.descriptor(value.func)
            return [desc] if desc is not None else []
        return []

    def record_module_call(self, call: cst.Call) -> None:
        """``self.layers.append(Block())`` and ``self.register_buffer("cache", t)``."""
        func = call.func
        if not isinstance(func, cst.Attribute) or not self.class_stack or self.oracle.cls is None:
            return
        method = func.attr.value
        if method == "register_buffer" and self.oracle.is_self_attr(func) is not None:
            if call.args and isinstance(call.args[0].value, cst.SimpleString):
                self.oracle.cls.tensor_attrs.add(call.args[0].value.raw_value)
        elif method in ("append", "extend") and call.args:
            attr = self.oracle.is_self_attr(func.value)
            types = self.module_types(call.args[0].value)
            if attr is not None and types:
                self.add_submodule(attr, types)
