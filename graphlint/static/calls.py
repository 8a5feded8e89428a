"""Call sites, object paths and sub-module types: what the linker needs to build the call graph.

Kept apart from :class:`graphlint.static.walker.Walker` because it is about *naming* callees
(descriptors, see :mod:`graphlint.static.facts`), not about walking statements; the walker asks
its :class:`CallRecorder` and tells it where it is (:class:`Position`). The recorder in turn owns
two collaborators that use its names: a :class:`.bindings.BindingRecorder` (what assignments bind)
and a :class:`.returned.ReturnRecorder` (the class a function returns).
"""

from __future__ import annotations

import builtins
from typing import Protocol

import libcst as cst

from graphlint.static.bindings import BindingRecorder
from graphlint.static.facts import CallSite, ClassInfo, Descriptor, FunctionInfo, ModuleInfo, RegionDecl, Site
from graphlint.static.names import dotted_name, is_imported_root, resolve
from graphlint.static.passed import note_captured_param, record_passes
from graphlint.static.regions import COMPILE_CALLS, GRAPHED_CALLS, SET_DEVICE
from graphlint.static.returned import ReturnRecorder
from graphlint.static.tensors import TensorOracle

BUILTIN_NAMES = frozenset(dir(builtins))
REGION_CLASS = "graphlint.dynamic.target.Region"
GRAPH_CALLS = frozenset((*GRAPHED_CALLS, *COMPILE_CALLS))


#: methods of Python's containers, strings and tensors: calling one is no call into the project
COMMON_METHODS = frozenset(
    "append extend insert remove pop popleft appendleft clear copy count index sort reverse get items keys "
    "values update setdefault add discard format join split rsplit strip lstrip rstrip startswith endswith "
    "replace lower upper encode decode read write close item tolist numpy cpu cuda to size dim view reshape "
    "contiguous float half bfloat16 long int bool detach clone fill_ zero_ copy_ unsqueeze squeeze permute "
    "transpose expand flatten sum mean max min argmax softmax masked_fill_ index_select narrow split chunk "
    "numel type_as new_empty new_zeros new_ones new_full record_stream synchronize wait put join is_set set "
    "acquire release qsize empty full exists mkdir open sub match group info debug warning error exception "
    "eval train parameters named_parameters buffers named_modules modules state_dict load_state_dict "
    "register_buffer register_forward_hook apply requires_grad_".split())


#: annotations of containers whose element type types what indexing them gives
CONTAINERS = frozenset(("list", "sequence", "mutablesequence", "tuple", "iterable", "collection"))


def _members(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The alternatives of ``A | B`` (flattened); else [node]."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return _members(node.left) + _members(node.right)
    return [node]


class Position(Protocol):
    """Where the walker is, and the records it keeps besides calls: everything the recorder reads of
    it (:class:`graphlint.static.walker.Walker` is one)."""

    imports: dict[str, str]
    oracle: TensorOracle
    info: ModuleInfo
    module: str
    local_names: set[str]  # module-level defs and classes
    local_defs: list[dict[str, str]]  # nested defs of the enclosing functions
    class_stack: list[ClassInfo]
    by_callee: dict[str, list]  # callee names some rule asks about
    func: FunctionInfo
    in_capture: bool
    setup_depth: int
    once: str
    order: int
    loop_ids: list[int]
    call_name: str | None
    selecting: set[str]

    @property
    def multi_device(self) -> bool: ...

    def place_later(self, record: object, node: cst.CSTNode) -> None: ...

    def graph_call(self, call: cst.Call, name: str) -> None: ...

    def replay_call(self, call: cst.Call) -> None: ...

    def note_call(self, call: cst.Call, desc: Descriptor | None) -> None: ...


class CallRecorder:
    """Names the callees of the function the walker is in and records its call sites. A
    collaborator of the walker, not a part of it: it reads the walker's :class:`Position` through
    ``at`` and keeps only its own record of the calls seen so far. ``bindings`` and ``returns``
    are its own collaborators; the walker reaches them through it."""

    def __init__(self, at: Position) -> None:
        self.at = at
        # the walker's per-file records, never rebound: kept here for brevity (and a lookup less per call)
        self.imports, self.oracle, self.info, self.module = at.imports, at.oracle, at.info, at.module
        self.local_names, self.local_defs, self.class_stack = at.local_names, at.local_defs, at.class_stack
        self.by_callee = at.by_callee
        self.keys: dict[str, dict] = {}  # function -> {(descriptor, in_capture, once): CallSite}
        self.bindings = BindingRecorder(self, at.oracle, at.class_stack)
        self.returns = ReturnRecorder(self.descriptor, at.class_stack)

    def begin_function(self, qualname: str) -> None:
        self.keys[qualname] = {}

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """An assignment, pair by pair for ``a, b = x, y``: what it binds for the call graph, and
        the instances a ``return`` may give back."""
        if (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))
                and len(target.elements) == len(value.elements)):
            for t, v in zip(target.elements, value.elements):
                self.bind(t.value, v.value)
            return
        self.bindings.bind(target, value)
        self.returns.note_binding(self.at.func, target, value)
        self.at.flows.assign(target, value)

    # -- callees -----------------------------------------------------------------------
    def callee_name(self, func: cst.BaseExpression) -> str | None:
        """The qualified name a rule pack would use for this callee. A def of this very module is
        qualified with the module name, and the longest suffix some rule names is used
        (``mylib.kernels.sync_launch`` also when called as ``sync_launch()`` inside mylib/kernels.py)."""
        if type(func) is cst.Name and func.value in self.local_names and func.value not in self.imports:
            parts = f"{self.module}.{func.value}".split(".")
            for i in range(len(parts) - 1):
                if ".".join(parts[i:]) in self.by_callee:
                    return ".".join(parts[i:])
            return func.value
        return resolve(func, self.imports) if type(func) in (cst.Name, cst.Attribute) else None

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

    def local_callable(self, node: cst.Name) -> Descriptor | None:
        """A def or class of this file (module level or an enclosing function) named by ``node``."""
        if node.value in self.local_names or any(node.value in scope for scope in self.local_defs):
            return self.descriptor(node)
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

    def element_classes(self, node: cst.BaseExpression) -> list[Descriptor]:
        """``list[Layer | Other] | None``, ``Sequence[Layer]`` -> the classes the container holds."""
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
            return self.element_classes(node.left) + self.element_classes(node.right)
        if not isinstance(node, cst.Subscript):
            return []
        wrapper = (dotted_name(node.value) or "").rsplit(".", 1)[-1]
        elements = [el.slice.value for el in node.slice if isinstance(el.slice, cst.Index)]
        if wrapper in ("Optional", "Union"):
            return [d for el in elements for d in self.element_classes(el)]
        if wrapper.lower() not in CONTAINERS:
            return []
        return [d for el in elements for m in _members(el) if (d := self.class_annotation(m)) is not None]

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
                self.add_call(("ref", ("local", scope[node.value])), ("n", node.value))
                return

    def argument_references(self, call: cst.Call) -> None:
        """``Region("embed", self._embed)``, ``partial(self._layer, i)``: a bound method or module
        function passed as an argument is a callback, called later on the caller's behalf."""
        via = self.at.call_expr or (("i", self.at.call_name) if self.at.call_name else None)
        for arg in call.args:
            value = arg.value
            if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
                self.add_call(("ref", ("member", ("self", ()), value.attr.value)),
                              ("a", ("n", "self"), value.attr.value), via=via)
            elif isinstance(value, cst.Name) and value.value in self.local_names:
                self.add_call(("ref", ("name", value.value)), ("n", value.value), via=via)

    def add_call(self, desc: Descriptor, expr: tuple | None = None, plain: bool = False,
                 via: tuple | None = None) -> None:
        """A call site (``expr``: the callee in flow IR, what the call graph resolves; ``via``: for
        a reference, the callee it is passed to)."""
        if self.at.setup_depth and not self.at.in_capture:
            return
        key = (desc, expr, self.at.in_capture, self.at.once, via)
        seen = self.keys[self.at.func.qualname]
        if key not in seen:
            seen[key] = CallSite(desc, self.at.in_capture, reference=desc[0] == "ref", once=self.at.once,
                                 expr=expr, plain=plain, via=via)
            self.at.func.calls.append(seen[key])
        site = seen[key]
        site.order = site.order or self.at.order  # the first call: what comes after it saw its effect
        site.multi_device = site.multi_device or self.at.multi_device
        if self.at.loop_ids:
            site.loops = site.loops | frozenset(self.at.loop_ids)

    def region_declaration(self, call: cst.Call) -> None:
        """``Region("embed", self._embed)``: the target protocol says ``fn`` runs every step."""
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        fn = keywords.get("fn", positional[1] if len(positional) > 1 else None)
        capturable = keywords.get("capturable")
        target = self.callable_descriptor(fn) if fn is not None else None
        if target is not None:
            eager = isinstance(capturable, cst.Name) and capturable.value == "False"
            decl = RegionDecl(self.at.func.qualname, self.at.func.cls, target, not eager)
            self.info.regions.append(decl)
            self.at.place_later(decl, call)

    def callable_descriptor(self, node: cst.BaseExpression) -> Descriptor | None:
        """What calling ``node()`` later runs: a method, a def, ``partial(f, ...)``'s ``f``, or the
        closures a factory call returns."""
        if isinstance(node, cst.Call):
            if resolve(node.func, self.imports) in ("functools.partial", "partial") and node.args:
                return self.callable_descriptor(node.args[0].value)
            inner = self.callable_descriptor(node.func)
            return ("returns", inner) if inner is not None else None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            return ("member", ("self", ()), node.attr.value)
        if isinstance(node, cst.Name) and node.value in self.oracle.fn.objects:  # ``block: Block`` -> its forward
            return ("member", self.oracle.fn.objects[node.value], None)
        return self.descriptor(node)

    def call_site(self, call: cst.Call) -> None:
        if call.args:
            self.argument_references(call)
            if self.at.call_name == REGION_CLASS:
                self.region_declaration(call)
            elif self.at.call_name in GRAPH_CALLS:
                self.at.graph_call(call, self.at.call_name)
        func = call.func
        if self.at.call_name in SET_DEVICE:
            self.at.selecting.add(self.at.func.qualname)
        elif self.at.call_name == "setattr" and len(call.args) >= 2:  # see ``guards.written_attrs``
            owner, name = call.args[0].value, call.args[1].value
            key = name.raw_value if isinstance(name, cst.SimpleString) else "*"
            if isinstance(owner, cst.Name) and owner.value == "self" and self.class_stack:
                self.info.attr_writes.add(f"{self.class_stack[-1].qualname}:{key}")
            elif key != "*":
                self.info.attr_writes.add(key)
        if (type(func) is cst.Attribute and func.attr.value == "backward") or (
                self.at.call_name or "").startswith(("torch.autograd.backward", "torch.autograd.grad")):
            self.at.func.trains = True
        if not self.at.func.device_work and self.does_device_work(call):
            self.at.func.device_work = True
        desc: Descriptor | None = None
        oracle = self.oracle
        if isinstance(func, cst.Name) and func.value in oracle.fn.module_aliases:
            desc = ("member", ("self", (oracle.fn.module_aliases[func.value],)), None)
        elif isinstance(func, cst.Attribute):
            base, method = func.value, func.attr.value
            if method in ("capture_begin", "capture_end"):  # manual capture: a region until capture_end
                self.at.func.captures = True
                self.at.in_capture = method == "capture_begin"
                if self.at.in_capture:
                    self.info.sites.append(site := Site("capture", self.at.func.qualname))
                    self.at.place_later(site, call)
            elif method == "replay":
                self.at.replay_call(call)
            path = self.object_path(base)
            if isinstance(base, cst.Name) and base.value in oracle.fn.module_aliases:
                desc = ("member", ("self", (oracle.fn.module_aliases[base.value],)), method)
            elif path is not None:
                desc = ("member", path, method)
            elif isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value == "super":
                desc = ("super", method)
            elif isinstance(base, cst.Name) and base.value in self.local_names and base.value[:1].isupper():
                desc = ("member", (("name", base.value), ()), method)  # ``Criteria._has_type(x)``: a static method
            else:
                desc = self.descriptor(func)
        elif isinstance(func, cst.Call):
            desc = self.getattr_descriptor(func)
        elif isinstance(func, cst.Subscript):
            source = oracle.module_source(func)
            path = self.object_path(func)
            if source is not None:
                desc = ("member", ("self", (source,)), None)
            elif path is not None and path[1]:
                desc = ("member", path, None)
            elif isinstance(func.value, cst.Name) and func.value.value in oracle.fn.callables:
                refs = oracle.fn.callables[func.value.value]  # ``fns = (self._a, self._b); fns[i](x)``
                for ref in refs[1:]:
                    self.add_call(ref, self.at.call_expr)
                desc = refs[0]
        elif isinstance(func, cst.Name) and func.value in oracle.fn.objects:  # ``model(x)``, ``model: TinyLM``
            desc = ("member", oracle.fn.objects[func.value], None)
        elif isinstance(func, cst.Name) and func.value in oracle.fn.callables:
            for ref in oracle.fn.callables[func.value][1:]:
                self.add_call(ref, self.at.call_expr)
            desc = oracle.fn.callables[func.value][0]
        else:
            desc = self.descriptor(func)
        expr = self.at.call_expr
        if desc is None and expr is not None:
            desc = ("ir", expr)  # nothing the name resolution knows: the points-to graph may
        if desc is not None:
            self.add_call(desc, expr, self.looks_like_project_call(func))
            if call.args:
                record_passes(self, call, desc)
        if self.at.in_capture:
            note_captured_param(self, call)
        self.at.note_call(call, desc)

    def looks_like_project_call(self, func: cst.BaseExpression) -> bool:
        """A callee the project should define: a local, a parameter, ``self``'s or another
        object's attribute, a relative import -- not a builtin, an absolute import (``torch.*``,
        the standard library), a tensor's method or a common method of Python's containers and
        strings (see :attr:`graphlint.static.callgraph.CallGraph.unresolved`)."""
        root = func
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        name = root.value
        if name in self.imports:
            return self.imports[name].startswith(".")
        if name in BUILTIN_NAMES and func is root:
            return False
        if isinstance(func, cst.Attribute):
            if func.attr.value in COMMON_METHODS or func.attr.value.startswith("__"):
                return False
            if self.oracle.is_tensor(func.value):
                return False
        return True

    def does_device_work(self, call: cst.Call) -> bool:
        """A torch op, a sub-module call, a tensor method, ``.cuda()``/``.to()``: this function
        touches the device (a scheduler loop named ``decode()`` does not)."""
        func, oracle = call.func, self.oracle
        if self.at.call_name is not None and self.at.call_name.startswith("torch."):
            return True
        if type(func) is cst.Attribute:  # cheap checks only: this runs on every call until one says yes
            receiver = func.value
            if func.attr.value in ("cuda", "to") or (type(receiver) is cst.Name and receiver.value in oracle.fn.tensors):
                return True
        return oracle.is_module_call(func)

    def getattr_descriptor(self, call: cst.Call) -> Descriptor | None:
        """``getattr(self, "attn")(x)``: that member; ``getattr(self, name)(x)`` / ``getattr(self,
        f"layer{i}")(x)``: every sub-module of the class (whose attribute starts with the literal
        prefix), resolved when linking."""
        if not (isinstance(call.func, cst.Name) and call.func.value == "getattr" and len(call.args) >= 2):
            return None
        owner, name = call.args[0].value, call.args[1].value
        if not (isinstance(owner, cst.Name) and owner.value == "self"):
            return None
        if isinstance(name, cst.SimpleString):
            return ("member", ("self", ()), name.raw_value)
        prefix = ""
        if isinstance(name, cst.FormattedString) and name.parts and isinstance(name.parts[0], cst.FormattedStringText):
            prefix = name.parts[0].value
        return ("getattr", prefix)
