"""Call sites: what the walker records of each call for the linker, the rules and the call graph.

Kept apart from :class:`graphlint.static.walker.Walker` because it is about calls, not about
walking statements; the walker asks its :class:`CallRecorder` and tells it where it is
(:class:`Position`). A call site records its callee as a :mod:`.flowir` expression (what the
whole-program points-to analysis resolves when linking, :mod:`.callgraph`), where it sits (inside a
capture, which loops, its statement ordinal), and what the call itself says: a capture begins or
ends, a graph replays, a device is selected, training runs, a ``Region``/``torch.compile``/
``make_graphed_callables`` declares graph code. The recorder owns a :class:`.bindings.BindingRecorder`
(what assignments tell the tensor facts).
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol

import libcst as cst

from graphlint.static.bindings import BindingRecorder
from graphlint.static.cstwalk import called_name, preorder, self_attr
from graphlint.static.facts import CallSite, ClassInfo, Descriptor, FunctionInfo, ModuleInfo, RegionDecl, Site
from graphlint.static.losscode import library_loss
from graphlint.static.names import callee_key, is_imported_root, resolve
from graphlint.static.regions import COMPILE_CALLS, GRAPHED_CALLS, SET_DEVICE
from graphlint.static.tensors import TensorOracle
from graphlint.static.unresolved import KNOWN_METHODS
from graphlint.static.fieldstores import record_construction, store_field
from graphlint.static.hostconversions import note_conversion
from graphlint.static.lambdabodies import body_calls
from graphlint.static.denorm import note_call as note_denorm
from graphlint.static.frozenargs import SIZED_FACTORIES, captured_step_kinds
from graphlint.static.callkinds import join_args
from graphlint.static.carriedparams import carried_slots
from graphlint.static.graphconsts import arg_sources, join_sources
from graphlint.static.argkinds import arg_kinds
from graphlint.static.valuekinds import may_be_ours

BUILTIN_NAMES = frozenset(dir(builtins))
REGION_CLASS = "graphlint.dynamic.target.Region"
GRAPH_CALLS = frozenset((*GRAPHED_CALLS, *COMPILE_CALLS))
#: keywords that hand over data, never a callback: torch's placement and layout arguments
DATA_KEYWORDS = frozenset(("device", "dtype", "layout", "memory_format", "pin_memory", "requires_grad", "non_blocking"))


class Position(Protocol):
    """Where the walker is, and the records it keeps besides calls: everything the recorder reads of
    it (:class:`graphlint.static.walker.Walker` is one)."""

    imports: dict[str, str]
    oracle: TensorOracle
    info: ModuleInfo
    module: str
    local_names: set[str]  # module-level defs and classes
    tables: set[str]  # module-level names bound to a container literal
    local_defs: list[dict[str, str]]  # nested defs of the enclosing functions
    class_stack: list[ClassInfo]
    by_callee: dict[str, list]  # callee names some rule asks about
    func: FunctionInfo
    in_capture: bool
    setup_depth: int
    once: str
    branching: int
    loop_depth: int
    first_iters: tuple[int, ...]  # the loops whose first iteration alone runs this code
    order: int
    loop_ids: list[int]
    call_name: str | None
    call_expr: tuple | None
    selecting: set[str]
    #: (function, name) of ``set_device(name)`` calls made before a capture and not rebound since;
    #: ids of ``set_device`` calls inside a capture that select that device again (no switch)
    devices_set: set[tuple[str, str]]
    reselected: set[int]
    values: Any  # the walker's graphlint.static.valuefacts.ValueFacts
    flows: Any  # the walker's graphlint.static.flows.FlowRecorder

    @property
    def multi_device(self) -> bool: ...

    def place_later(self, record: object, node: cst.CSTNode) -> None: ...

    def graph_call(self, call: cst.Call, name: str) -> None: ...

    def replay_call(self, call: cst.Call) -> None: ...

    def note_call(self, call: cst.Call, expr: tuple | None) -> None: ...


def note_device_selection(at, call: cst.Call) -> None:
    """``set_device(dev)`` outside a capture records ``dev``; inside one, ``set_device(dev)`` with
    ``dev`` recorded and not rebound since selects the device already current: it switches no
    stream (ktransformers' runner re-selects its device after the captured forward)."""
    if len(call.args) != 1 or type(call.args[0].value) is not cst.Name:
        return
    key = (at.func.qualname, call.args[0].value.value)
    if not at.in_capture:
        at.devices_set.add(key)
    elif key in at.devices_set:
        at.reselected.add(id(call))


class CallRecorder:
    """Records the call sites of the function the walker is in. A collaborator of the walker, not
    a part of it: it reads the walker's :class:`Position` through ``at`` and keeps only its own
    record of the calls seen so far. ``bindings`` is its own collaborator; the walker reaches it
    through it."""

    def __init__(self, at: Position) -> None:
        self.at = at
        # the walker's per-file records, never rebound: kept here for brevity (and a lookup less per call)
        self.imports, self.oracle, self.info, self.module = at.imports, at.oracle, at.info, at.module
        self.local_names, self.local_defs, self.class_stack = at.local_names, at.local_defs, at.class_stack
        self.tables = at.tables
        self.by_callee = at.by_callee
        self.keys: dict[str, dict] = {}  # function -> {(expr, in_capture, once, via): CallSite}
        self.bindings = BindingRecorder(at.oracle, at.class_stack)
        #: id of a lambda body's call -> the call the lambda is passed to (None: assigned, stored): the
        #: body runs when the lambda is called, not here -- a reference, like a callback (the call is
        #: the lambda's own function's: :meth:`.flows.FlowRecorder.lambda_scope`)
        self.deferred: dict[int, tuple | None] = {}
        self.project: dict[int, tuple] = {}  # id of a call that looks like the project's -> its callee (flow IR)

    def begin_function(self, qualname: str) -> None:
        self.keys[qualname] = {}

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """An assignment, pair by pair for ``a, b = x, y``: what it binds for the tensor facts and
        for the points-to analysis."""
        if (type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List)
                and len(target.elements) == len(value.elements)):
            for t, v in zip(target.elements, value.elements):
                self.bind(t.value, v.value)
            return
        self.bindings.bind(target, value, self.at.func.bound_calls)
        at = self.at  # a field converted by its own read, before every later statement (:mod:`.hostconversions`)
        note_conversion(target, value, self.oracle.fn,
                        bool(at.setup_depth or at.once) or not (at.branching or at.loop_depth))
        self.at.flows.assign(target, value)

    # -- names -------------------------------------------------------------------------
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

    def base_descriptor(self, node: cst.BaseExpression) -> Descriptor | None:
        """A class's base, for name resolution to find (see :mod:`graphlint.static.facts`). A
        generic base (``StreamingModule[StateT]``, ``Base[int]``) is its class: subscripting a
        generic class only parameterises its type, Python's MRO holds the class itself."""
        if isinstance(node, cst.Subscript):
            node = node.value
        if isinstance(node, cst.Name):
            if node.value in self.imports:
                return ("dotted", self.imports[node.value])
            return None if node.value in BUILTIN_NAMES else ("name", node.value)
        if isinstance(node, cst.Attribute) and is_imported_root(node, self.imports):
            return ("dotted", resolve(node, self.imports))
        return None

    # -- call sites --------------------------------------------------------------------
    def name_reference(self, node: cst.Name, called: bool = False) -> None:
        """A nested def used as a value (returned, passed, stored) will be called by whoever gets it;
        one only called (``called``: the callee of a call) is noted so as well, for the call graph, and
        :mod:`.valueflow` sees its calls' arguments (``FunctionInfo.handed_defs`` lacks it)."""
        for scope in reversed(self.local_defs):
            if node.value in scope:
                self.add_call(("n", node.value), reference=True)
                if not called:
                    self.at.func.handed_defs.add(node.value)
                return

    def argument_references(self, call: cst.Call) -> None:
        """``threading.Thread(target=self._loop)``, ``partial(self._layer, i)``: a bound method or
        module function passed as an argument is a callback, called later on the caller's behalf
        (``via`` says by what: see :attr:`CallSite.via`); so is every function a module-level table
        passed as an argument holds (``CLI(COMMANDS)``: the call graph resolves its elements)."""
        via = self.at.call_expr or (("i", self.at.call_name) if self.at.call_name else None)
        for arg in call.args:
            value = arg.value
            if arg.keyword is not None and arg.keyword.value in DATA_KEYWORDS:
                continue  # ``torch.zeros(n, device=self.device)``: a placement, never called back
            if type(value) is cst.Attribute and type(value.value) is cst.Name and value.value.value == "self":
                self.add_call(("a", ("n", "self"), value.attr.value), reference=True, via=via)
            elif type(value) is cst.Name and (value.value in self.local_names or value.value in self.tables):
                self.add_call(("n", value.value), reference=True, via=via)

    def add_call(self, expr: tuple, plain: bool = False, reference: bool = False, via: tuple | None = None,
                 args: tuple | None = None, kinds: tuple | None = None, later: tuple | None = None,
                 steady: cst.Call | None = None, carried: tuple = (), consts: tuple | None = None) -> None:
        """A call site (``expr``: the callee in flow IR, what the call graph resolves; ``args``: its
        arguments as :mod:`.valuefacts` values; ``steady``: the call whose arguments
        :mod:`.steadyargs` settles when the function ends)."""
        if self.at.setup_depth and not self.at.in_capture:
            return
        cond = self.at.values.cond
        # inside or outside a loop apart: the prompt's pass before a per-token loop is not the loop's
        # call (:mod:`.argvalues` counts only the calls in a loop function's per-token loops)
        first = self.at.first_iters  # a call on the first iteration only is another site (:mod:`.iterations`)
        retire = self.at.func.retire_loops  # in a loop retiring its element: another site (:mod:`.retiring`)
        retiring = bool(retire) and any(loop in retire for loop in self.at.loop_ids)
        key = (expr, reference, self.at.in_capture, self.at.once, via, cond, bool(self.at.loop_ids), first, retiring)
        seen = self.keys[self.at.func.qualname]
        fresh = key not in seen
        if fresh:
            seen[key] = CallSite(expr, self.at.in_capture, reference=reference, once=self.at.once, plain=plain, via=via,
                                 cond=cond, first_iter=first, args=(args,) if args is not None else None, kinds=kinds)
            self.at.func.calls.append(seen[key])
        else:
            seen[key].kinds = join_args(seen[key].kinds, kinds)
        seen[key].always = seen[key].always or (self.at.always_call and not reference)
        site = seen[key]
        if steady is not None and not reference:
            self.at.steady.note(site, steady)
        if args is not None:
            note_later(site, args, later, fresh)
        if site.args is not None and args not in site.args:  # another spelling of the same call
            site.args = site.args + (args,) if args is not None and len(site.args) < 4 else None
        site.order = site.order or self.at.order  # the first call: what comes after it saw its effect
        site.multi_device = site.multi_device or self.at.multi_device
        if self.at.loop_ids:
            site.loops = site.loops | frozenset(self.at.loop_ids)
        if consts is not None:  # every call of the spelling: the slots all pass known sources (:mod:`.graphconsts`)
            site.consts = consts if fresh else join_sources(site.consts, consts)
        if carried and not set(carried) <= set(site.carried):
            site.carried = tuple(dict.fromkeys(site.carried + carried))

    def region_declaration(self, call: cst.Call) -> None:
        """``Region("embed", self._embed)``: the target protocol says ``fn`` runs every step."""
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        fn = keywords.get("fn", positional[1] if len(positional) > 1 else None)
        capturable = keywords.get("capturable")
        while isinstance(fn, cst.Call) and isinstance(fn.func, cst.Call) and fn.args:  # ``torch.no_grad()(fn)``:
            fn = fn.args[0].value  # a decorator applied in place runs the function it wraps
        expr = self.at.flows.ir.expr(fn) if fn is not None else None
        if expr is not None:
            eager = isinstance(capturable, cst.Name) and capturable.value == "False"
            decl = RegionDecl(self.at.func.qualname, self.at.func.cls, expr, not eager)
            self.info.regions.append(decl)
            self.at.place_later(decl, call)

    def call_site(self, call: cst.Call) -> None:
        at = self.at
        if call.args:
            self.argument_references(call)
            for arg in call.args:  # ``sorted(xs, key=lambda r: r.rank())``: called back by the callee
                if type(arg.value) is cst.Lambda:
                    for inner in body_calls(arg.value):
                        self.deferred[id(inner)] = at.call_expr or (("i", at.call_name) if at.call_name else None)
            if at.call_name == REGION_CLASS:
                self.region_declaration(call)
            elif at.call_name in GRAPH_CALLS:
                at.graph_call(call, at.call_name)
        func = call.func
        if at.call_name in SIZED_FACTORIES:  # ``torch.arange(offset, offset + n)``: a position's use (valueflow._stepped)
            at.func.sized_uses.update(n.value for a in call.args for n in preorder(a.value) if type(n) is cst.Name)
        if at.call_name in SET_DEVICE:
            at.selecting.add(at.func.qualname)
            note_device_selection(at, call)
        elif at.call_name == "setattr" and len(call.args) >= 2:  # see ``guards.written_attrs``
            owner, name = call.args[0].value, call.args[1].value
            key = name.raw_value if type(name) is cst.SimpleString else "*"
            store_field(self.at, key, call.args[2].value if len(call.args) > 2 else None, owner, name)
            if type(owner) is cst.Name and owner.value == "self" and self.class_stack:
                self.info.attr_writes.add(f"{self.class_stack[-1].qualname}:{key}")
            elif key != "*":
                self.info.attr_writes.add(key)
        if (type(func) is cst.Attribute and func.attr.value == "backward") or (
                at.call_name or "").startswith(("torch.autograd.backward", "torch.autograd.grad")):
            at.func.trains = "backward"
        elif "loss" in called_name(func).lower() or library_loss(at.call_name):  # (:mod:`.losscode`)
            if at.always_runs_loss(call) and library_loss(at.call_name) or at.loss_on_every_path():
                at.func.trains = at.func.trains or "loss"
            elif at.always_runs_loss(call) and at.call_expr is not None and at.call_expr not in at.func.loss_calls:
                at.func.loss_calls = (*at.func.loss_calls, at.call_expr)
        if at.call_expr is not None and at.call_expr not in at.func.spine_calls and at.on_spine(call):
            at.func.spine_calls = (*at.func.spine_calls, at.call_expr)
        if not at.func.device_work and self.does_device_work(call):
            at.func.device_work = True
        if type(func) is cst.Attribute:
            method = func.attr.value
            if method in ("capture_begin", "capture_end"):  # manual capture: a region until capture_end
                at.func.captures = True
                at.in_capture = method == "capture_begin"
                if at.in_capture:
                    self.info.sites.append(site := Site("capture", at.func.qualname))
                    at.place_later(site, call)
            elif method == "replay":
                at.replay_call(call)
        if type(func) is cst.Attribute and type(func.value) is cst.Call:  # ``f(x).to(dev)``: a method of f's result
            key = callee_key(func.value.func, self.oracle.cls_name)
            if key is not None and may_be_ours(key, self.oracle):
                at.func.bound_calls.add(key)
        expr = at.call_expr
        if expr is not None:
            kinds, steady = None, None
            if type(func) is cst.Name or (type(func) is cst.Attribute and _name_chain(func.value)) or (
                    type(func) is cst.Attribute and type(func.value) is cst.Subscript
                    and self_attr(func.value.value) is not None):  # what valueflow resolves (``self.layers[j].f``;
                # ``obj.m``, ``self.a.b.m``, ``g_ctx.cache.m`` through :mod:`.receivers`)
                kinds, steady = arg_kinds(call, self.oracle, at.func.name), call
                if at.in_capture and at.loop_frames:  # a per-step number frozen into the recording (:mod:`.frozenargs`)
                    kinds = captured_step_kinds(call, kinds, at)
                at.func.step_uses.update(a.value.value for a in call.args if type(a.value) is cst.Name)
            args = self.at.values.args(call)
            if id(call) in self.deferred:
                self.add_call(expr, reference=True, via=self.deferred.pop(id(call)))
            else:
                plain = self.looks_like_project_call(func)
                if plain:  # what a synchronize's flow may follow at link time (:mod:`.quietcalls`)
                    self.project[id(call)] = expr
                self.add_call(expr, plain, args=args, kinds=kinds,
                              later=self.at.values.later_args(call, args, self.at.counters), steady=steady,
                              carried=carried_slots(call, at), consts=arg_sources(call, self.oracle, at.in_capture))
        if call.args:
            record_construction(self.at, call)
            note_denorm(at, call)
        at.note_call(call, expr)

    def looks_like_project_call(self, func: cst.BaseExpression) -> bool:
        """A callee the project should define: a local, a parameter, ``self``'s or another
        object's attribute, a relative import -- not a builtin, an absolute import (``torch.*``,
        the standard library), a tensor's method or a common method of Python's containers and
        strings (see :attr:`graphlint.static.callgraph.CallGraph.unresolved`)."""
        if (type(func) is cst.Call and type(func.func) is cst.Name and func.func.value == "getattr"
                and "getattr" not in self.imports and func.args):  # ``getattr(self, name)(x)``
            return self.looks_like_project_call(func.args[0].value)
        root = func
        while type(root) in (cst.Attribute, cst.Subscript):
            root = root.value
        if type(root) is not cst.Name:
            return False
        name = root.value
        if type(func) is cst.Attribute and (func.attr.value in KNOWN_METHODS or func.attr.value.startswith("__")):
            return False  # ``logger.info``, ``self.queue.append``, ``x.view``: whatever holds it
        if name in self.imports:
            return self.imports[name].startswith(".")
        if name in BUILTIN_NAMES and func is root:
            return False
        return not (type(func) is cst.Attribute and self.oracle.is_tensor(func.value))

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


def note_later(site: CallSite, args: tuple, later: tuple | None, fresh: bool) -> None:
    """One more call of ``args``' spelling: keep what a loop's later iterations pass instead only
    while every call of that spelling is made under that loop with the same carried names."""
    known = [entry for entry in site.later if entry[0] == args]
    seen_plain = not fresh and site.args is not None and args in site.args and not known
    if later is None or seen_plain or (known and known[0][1:] != later):
        site.later = tuple(entry for entry in site.later if entry[0] != args)
    elif not known:
        site.later = (*site.later, (args, *later))


def _name_chain(node: cst.BaseExpression, depth: int = 0) -> bool:
    """``x``, ``x.a``, ``x.a.b``: a receiver :mod:`.valueflow` may resolve (a local, a global, a field chain)."""
    while type(node) is cst.Attribute and depth < 2:
        node, depth = node.value, depth + 1
    return type(node) is cst.Name
