"""Graph regions, seen while a file is walked: what gets captured, compiled or replayed.

The linker turns these records into the decode step's entries (:mod:`.entries`); this module
only notices them, in source order, without libcst metadata:

- ``with torch.cuda.graph(g):`` bodies and ``g.capture_begin()`` ... ``g.capture_end()``: the
  calls inside are captured (``CallSite.in_capture``), the function is a capturer;
- ``torch.cuda.make_graphed_callables(fn_or_module, ...)``: ``fn`` is graphed;
- ``@torch.compile`` / ``torch.compile(fn, ...)``: ``fn`` is compiled; with a CUDA-graph mode
  (``mode="reduce-overhead"`` or ``"max-autotune"``, ``backend="cudagraphs"``,
  ``options={"triton.cudagraphs": True}``) it is graph code, and calling it replays;
- ``g.replay()``: the function replays a graph (the host step's core) -- not a replay in a loop
  that also captures (``for bs in sizes: capture; g.replay()``: a check right after each capture);
- a branch of an ``if`` that captures and does not replay (``if bs not in self.graphs: <warm
  up, capture>``, the second call of a capture-on-second-call wrapper) runs once per graph:
  capture-time code, like lazy initialisation. Its calls outside the capture and its per-step
  candidates are forgotten, and the function is no capture routine for them (``captures`` stays
  false unless it also captures outside such a branch); what the function does outside them -- staging into the
  static inputs and replaying on every later call -- is its host step. A branch that captures and
  also replays is the same when the function replays instead of it too (``if self.graph is None:
  capture; g.replay(); return out`` / ``else: stage; g.replay()``, a wrapper that captures on its
  first call): its replay runs the fresh graph once. Otherwise it is kept, taken for the step
  (``if use_graphs: [if bs not in graphs: capture]; g.replay()``);
- ``with torch.get_device_module(dev).graph(g):`` is ``torch.cuda.graph`` spelled for any device
  (the module torch hands back for a CUDA device is ``torch.cuda``); so is ``.graph(g)`` of a name or
  ``self`` field the file binds to ``torch.get_device_module(...)`` (:func:`device_modules`,
  ``self.device_module = torch.get_device_module(self.device)`` in ``__init__``);
- which device a capture runs on, for GL501 (``torch.cuda.graph`` without ``stream=`` uses one
  side stream per process, made on the device current at its first use): a capture (or
  ``set_device``) inside a loop over devices (``for dev in devices:``, a loop whose target or
  iterable is named like a device or GPU) or under ``torch.cuda.device(x)`` with ``x`` bound by
  an enclosing loop captures on several devices from one process -- reports there carry the flag
  "multi-device", and so do calls made there (``for d in devs: self._capture_on(d)``, followed
  when linking); a capture after ``set_device(x)`` or under ``torch.cuda.device(x)`` in its own
  function picks its device from a value ("device-selected"); a capture that selects no device
  runs on the process's one current device, where the default side stream is right.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.compileconfigs import splat_captures
from graphlint.static.compileswitch import disabled_by
from graphlint.static.cstwalk import called_name, ends_in_jump, preorder
from graphlint.static.symbolic import dynamic_compile
from graphlint.static.facts import ClassInfo, FunctionInfo, ModuleInfo, RegionDecl, Site
from graphlint.static.names import dotted_name, name_matcher, resolve
from graphlint.static.positions import anchor_rank
from graphlint.static.replaybranches import records_lazily, replays, replays_in_loop, replays_instead

CAPTURE_CONTEXTS = ("torch.cuda.graph", "torch.cuda.graphs.graph")
#: ``torch.get_device_module(device)``: ``torch.cuda`` for a CUDA device (its ``graph`` captures)
DEVICE_MODULE = "torch.get_device_module"
GRAPHED_CALLS = ("torch.cuda.make_graphed_callables", "torch.cuda.graphs.make_graphed_callables")
COMPILE_CALLS = ("torch.compile",)
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
DEVICE_CONTEXTS = ("torch.cuda.device",)
SET_DEVICE = frozenset(("torch.cuda.set_device",))
#: loop targets / iterables that enumerate devices (``for dev in self.devices``, ``for gpu in range(n_gpus)``)
DEVICE_LOOP_NAMES = ("dev", "devs", "device", "devices", "*_device", "*_devices", "device_*", "gpu", "gpus",
                     "*_gpu", "*_gpus", "gpu_*", "num_gpus", "n_gpus")


def _string(node: cst.BaseExpression | None) -> str | None:
    return node.raw_value if isinstance(node, cst.SimpleString) else None


def _graph_mode(node: cst.BaseExpression, graph_names: frozenset[str] = frozenset()) -> bool:
    """A ``mode=`` value asking for CUDA graphs: the literal, either branch of a conditional
    (``"reduce-overhead" if cuda else "default"``: on the GPU it captures), or a local name the
    function binds to one."""
    if type(node) is cst.IfExp:
        return _graph_mode(node.body, graph_names) or _graph_mode(node.orelse, graph_names)
    if type(node) is cst.Name:
        return node.value in graph_names
    return _string(node) in CUDAGRAPH_MODES


def graph_options(value: cst.BaseExpression, graph_names: frozenset[str] = frozenset()) -> bool:
    """A value bound to a name that ``torch.compile(f, **name)`` or ``mode=name`` asks for CUDA
    graphs through: a mode string, or a dict literal / ``dict(...)`` whose ``"mode"`` is one."""
    if type(value) is cst.IfExp:
        return graph_options(value.body, graph_names) or graph_options(value.orelse, graph_names)
    if type(value) is cst.Dict:
        return any(type(el) is cst.DictElement and _string(el.key) == "mode"
                   and _graph_mode(el.value, graph_names) for el in value.elements)
    if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value == "dict":
        return any(arg.keyword is not None and arg.keyword.value == "mode" and _graph_mode(arg.value, graph_names)
                   for arg in value.args)
    return _graph_mode(value, graph_names)


def compile_kind(call: cst.Call | None, graph_names: frozenset[str] = frozenset(),
                 imports: dict[str, str] | None = None) -> str:
    """"graph" when ``torch.compile(...)``'s arguments ask for CUDA graphs, else "compile".
    ``graph_names``: the calling function's locals bound to CUDA-graph options (``kwargs =
    {"mode": "reduce-overhead"}`` on one branch, then ``torch.compile(f, **kwargs)``): any binding
    counts, as everywhere in the flow-insensitive analysis -- the branch that captures is the
    one the decode path is about."""
    if call is None:
        return "compile"
    for arg in call.args:
        key = arg.keyword.value if arg.keyword is not None else ""
        if arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value in graph_names:
            return "graph"
        if arg.star == "**" and splat_captures(arg.value, imports or {}, lambda v: _graph_mode(v, graph_names)):
            return "graph"
        if key == "mode" and _graph_mode(arg.value, graph_names):
            return "graph"
        if key == "backend" and _string(arg.value) == "cudagraphs":
            return "graph"
        if key == "options" and isinstance(arg.value, cst.Dict):
            for el in arg.value.elements:
                if (isinstance(el, cst.DictElement) and _string(el.key) == "triton.cudagraphs"
                        and isinstance(el.value, cst.Name) and el.value.value == "True"):
                    return "graph"
    return "compile"


def mode_name(call: cst.Call) -> str:
    """The name a ``torch.compile`` call reads its mode through (``mode=args.compile_mode``:
    "compile_mode"), decided when linking (:mod:`.compilemodes`); "" for a literal or none."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "mode":
            node = arg.value
            if isinstance(node, cst.Name):
                return node.value
            if isinstance(node, cst.Attribute):
                return node.attr.value
    return ""


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in preorder(node) if type(n) is cst.Name}


def _attr_names(node: cst.CSTNode) -> set[str]:
    """Every name and attribute name in ``node`` (``self.devices`` -> {"self", "devices"})."""
    out = set()
    for n in preorder(node):
        if type(n) is cst.Name:
            out.add(n.value)
        elif type(n) is cst.Attribute:
            out.add(n.attr.value)
    return out


def loops_over_devices(stmt: cst.For) -> bool:
    names = _attr_names(stmt.target) | _attr_names(stmt.iter)
    matcher = name_matcher(DEVICE_LOOP_NAMES, ignore_case=True)
    return any(matcher.match(name) for name in names)


def device_modules(text: str, module: cst.Module) -> dict[str, cst.BaseExpression]:
    """The names and ``self`` fields (``"self.device_module"``) this file binds to a call of
    ``get_device_module`` anywhere (a text search first), each with the function called: resolved
    when a ``with`` uses it, once the file's imports are read (:func:`is_capture`)."""
    if "get_device_module" not in text:
        return {}
    out = {}
    for node in preorder(module):
        if type(node) is cst.Assign and type(node.value) is cst.Call \
                and called_name(node.value.func) == "get_device_module":
            out.update((name, node.value.func) for t in node.targets if (name := dotted_name(t.target)) is not None)
    return out


def is_capture(call: cst.Call, imports: dict[str, str], devices: dict[str, cst.BaseExpression] | None = None) -> bool:
    """``torch.cuda.graph(g)``, or ``graph(g)`` of the module ``torch.get_device_module`` returns --
    called in place or through a name ``devices`` holds (:func:`device_modules`)."""
    func = call.func
    if resolve(func, imports) in CAPTURE_CONTEXTS:
        return True
    if type(func) is not cst.Attribute or func.attr.value != "graph":
        return False
    owner = func.value
    if type(owner) is cst.Call:
        return resolve(owner.func, imports) == DEVICE_MODULE
    bound = (devices or {}).get(dotted_name(owner) or "")
    return bound is not None and resolve(bound, imports) == DEVICE_MODULE


def contains_capture(node: cst.CSTNode, imports: dict[str, str], devices: dict[str, cst.BaseExpression] | None = None) -> bool:
    """A ``with torch.cuda.graph(...)`` or ``capture_begin()`` anywhere inside ``node``."""
    for n in preorder(node):
        if type(n) is cst.WithItem and isinstance(n.item, cst.Call) and is_capture(n.item, imports, devices):
            return True
        if type(n) is cst.Attribute and n.attr.value == "capture_begin":
            return True
    return False


class RegionRecorder:
    """Mixin of :class:`graphlint.static.walker.Walker`: notices captures, compiles and replays."""

    imports: dict[str, str]
    info: ModuleInfo
    func: FunctionInfo
    class_stack: list[ClassInfo]
    in_capture: bool
    order: int
    loop_ids: list[int]
    path: list
    stmt: cst.CSTNode | None
    flows: Any  # the walker's graphlint.static.flows.FlowRecorder (its ``ir`` names a callable)
    raw: list  # the walker's candidates
    calls: Any  # the walker's graphlint.static.calls.CallRecorder

    def init_regions(self) -> None:
        self.device_loops = 0  # enclosing ``for`` loops over devices, in this function
        self.device_contexts = 0  # enclosing ``with torch.cuda.device(<loop variable>)``
        self.selecting: set[str] = set()  # functions seen calling set_device / entering torch.cuda.device(x)
        self.devices_set: set[tuple[str, str]] = set()  # see :func:`.calls.note_device_selection`
        self.reselected: set[int] = set()
        self.loop_nodes: list[cst.CSTNode] = []  # enclosing loops, for :meth:`capture_loop`
        self.loop_bound: list[set[str]] = []  # names the enclosing ``for`` loops bind
        self.lazy_captures: set[int] = set()  # capture sites inside capture branches (:meth:`capture_branch`)
        self.frozen_loops: set[int] = set()  # loops whose per-step numbers a capture in them takes (:mod:`.frozenargs`)
        #: function -> its locals bound to CUDA-graph compile options (:func:`compile_kind`)
        self.graph_option_names: dict[str, set[str]] = {}
        self.device_modules: dict[str, cst.BaseExpression] = {}  # :func:`device_modules`, set before the walk

    def note_compile_options(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """``kwargs = {"mode": "reduce-overhead"}``, ``mode = "reduce-overhead"``: remembered for a
        later ``torch.compile(f, **kwargs)`` / ``mode=mode`` in the same function."""
        names = [t.value for t in targets if isinstance(t, cst.Name)]
        if not names:
            return
        known = self.graph_option_names.setdefault(self.func.qualname, set())
        if graph_options(value, frozenset(known)):
            known.update(names)

    def place_later(self, record: object, anchor: cst.CSTNode | None) -> None:
        """Record where ``record`` is, to be looked up only if ``graphlint entries`` prints it."""
        cls, rank = anchor_rank(self.stmt, anchor) if anchor is not None else ("", 0)
        record.where = (tuple(self.path), cls, rank)

    @property
    def multi_device(self) -> bool:
        return bool(self.device_loops or self.device_contexts)

    def device_flags(self) -> tuple[str, ...]:
        """Which devices a report made here may capture on (see the module docstring)."""
        if self.multi_device:
            return ("multi-device",)
        return ("device-selected",) if self.func.qualname in self.selecting else ()

    def capture_loop(self) -> bool:
        """Inside a loop (of this function) whose body also captures: ``set_device`` there switches
        the device the next capture runs on."""
        return any(map(self.holds_capture, self.loop_nodes))

    def holds_capture(self, node: cst.CSTNode) -> bool:
        return contains_capture(node, self.imports, self.device_modules)

    # -- statements ----------------------------------------------------------------------
    def enter_loop(self, stmt: cst.For | cst.While) -> None:
        self.loop_nodes.append(stmt)
        bound = _names(stmt.target) if isinstance(stmt, cst.For) else set()
        self.loop_bound.append(bound)
        if isinstance(stmt, cst.For) and loops_over_devices(stmt):
            self.device_loops += 1

    def exit_loop(self, stmt: cst.For | cst.While) -> None:
        self.loop_nodes.pop()
        self.loop_bound.pop()
        if isinstance(stmt, cst.For) and loops_over_devices(stmt):
            self.device_loops -= 1

    def with_contexts(self, stmt: cst.With) -> tuple[bool, bool]:
        """(captures, selects a loop-varying device) for a ``with`` statement's items."""
        captures = varying = False
        for item in stmt.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            name = resolve(call.func, self.imports)
            if is_capture(call, self.imports, self.device_modules):
                captures = True
                self.info.sites.append(site := Site("capture", self.func.qualname))
                self.place_later(site, call)
            elif name in DEVICE_CONTEXTS and call.args:
                self.selecting.add(self.func.qualname)
                bound = set().union(*self.loop_bound) if self.loop_bound else set()
                varying = varying or bool(_names(call.args[0].value) & bound)
        return captures, varying

    # -- definitions and calls -------------------------------------------------------------
    def compiled_decorator(self, stmt: cst.FunctionDef) -> str:
        for decorator in stmt.decorators:
            node = decorator.decorator
            call = node if isinstance(node, cst.Call) else None
            if resolve(call.func if call else node, self.imports) in COMPILE_CALLS:
                if compile_kind(call, imports=self.imports) != "graph":
                    return "compile"
                return "graph-dynamic" if dynamic_compile(call) else "graph"
        return ""

    def graph_call(self, call: cst.Call, name: str | None) -> None:
        """``torch.compile(fn, ...)`` / ``make_graphed_callables(fn, ...)``: ``fn`` becomes graph code."""
        if not call.args or call.args[0].keyword is not None:
            return
        first = call.args[0].value
        own, mode = None, ""
        if name in COMPILE_CALLS:
            graph_names = frozenset(self.graph_option_names.get(self.func.qualname, ()))
            kind = "compiled-graph" if compile_kind(call, graph_names, self.imports) == "graph" else "compiled"
            own = self.flows.ir.expr(call)  # the compiled callable: marked in the points-to when it captures
            mode = mode_name(call) if kind == "compiled" else ""
        else:
            kind = "graphed"
            self.func.captures = True
        targets = [el.value for el in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
        for node in targets:
            expr = self.flows.ir.expr(node)
            if expr is None:
                continue
            opt_in = (self.compile_opt_in[0] if self.compile_opt_in else disabled_by(call, self.func.defaults)) \
                if own is not None else ""
            decl = RegionDecl(self.func.qualname, self.func.cls, expr, True, kind, call=own, mode=mode, opt_in=opt_in,
                              dynamic=own is not None and dynamic_compile(call))
            self.info.regions.append(decl)
            self.place_later(decl, call)

    def capture_branch(self, walk, suite: cst.BaseSuite | None = None, instead: tuple = ()) -> None:
        """Walks one branch of an ``if`` (``walk()``, over ``suite``); a branch that captures is
        capture-time code (see the module docstring): forget what it did for the step. So is one
        that captures and replays once (``if self.graph is None: capture; g.replay(); return out``)
        when what runs ``instead`` of it -- the ``if``'s other branch, or the code after it when the
        branch jumps out -- replays too: that is the step of every later call, and the branch's
        replay only runs the fresh graph once. A branch that ends in a jump never reaches the code
        after the ``if``: the tensor facts it bound are dropped after it (``else: tok = pick(p);
        break`` leaves ``tok`` the tensor the body made); one that ends in ``break`` reaches the code
        after its loop, where they hold again (:meth:`.walker.Walker.loop`)."""
        fn, sites = self.func, self.info.sites
        n_raw, n_calls, n_sites = len(self.raw), len(fn.calls), len(sites)
        replayed = (fn.replay_order, fn.replay_loops, fn.replay_conds)
        facts = self.oracle.fn
        kept = (set(facts.tensors), set(facts.bools), set(facts.scalars)) \
            if suite is not None and ends_in_jump(suite) else None
        walk()
        if kept is not None:
            if self.loop_breaks and _ends_in_break(suite):  # reaches the code after the loop instead
                self.loop_breaks[-1].append((facts.tensors - kept[0], facts.bools - kept[1], facts.scalars - kept[2]))
            facts.tensors, facts.bools, facts.scalars = kept
        # a branch that also replays is the step itself (``if use_graphs: [if bs not in graphs:
        # capture]; replay``), not the capture's -- unless the step replays elsewhere
        mine = [s.kind for s in sites[n_sites:] if s.function == fn.qualname]
        if "capture" not in mine or ("replay" in mine and not any(replays(n) for n in instead)) \
                or replays_in_loop(fn.replay_loops[len(replayed[1]):], self.loop_ids):
            return
        qual = fn.qualname
        if "replay" in mine:  # the first call's replay of its fresh graph: the step's replay is elsewhere
            fn.replay_order, fn.replay_loops, fn.replay_conds = replayed
            sites[n_sites:] = [s for s in sites[n_sites:] if s.kind != "replay" or s.function != qual]
        self.lazy_captures.update(id(s) for s in sites[n_sites:] if s.function == qual)
        # only a capture outside such branches makes the function a capture routine (never the step)
        fn.captures = any(s.kind == "capture" and s.function == qual and id(s) not in self.lazy_captures
                          for s in sites) or any(r.kind == "graphed" and r.function == qual for r in self.info.regions)
        self.raw[n_raw:] = [r for r in self.raw[n_raw:] if r.function != qual or r.in_capture
                            or r.rule.params.get("scope", "hot") != "hot"]
        dropped = {id(site) for site in fn.calls[n_calls:] if not site.in_capture}
        if dropped:
            fn.calls[n_calls:] = [site for site in fn.calls[n_calls:] if id(site) not in dropped]
            seen = self.calls.keys[qual]
            for key in [k for k, site in seen.items() if id(site) in dropped]:
                del seen[key]

    def replay_call(self, call: cst.Call) -> None:
        capturing = [loop for loop in self.loop_nodes if self.holds_capture(loop)]
        if not call.args and not (capturing and not replays_instead(capturing[-1], call, self.holds_capture)
                                  and not records_lazily(capturing[-1], call, self.holds_capture)):
            self.func.replay_order = self.func.replay_order or self.order
            self.func.replay_loops += ((tuple(self.loop_ids), self.arms),)
            self.func.replay_conds += ((self.order, self.values.cond),)
            self.info.sites.append(site := Site("replay", self.func.qualname))
            self.place_later(site, call)


def _ends_in_break(suite: cst.BaseSuite) -> bool:
    """``...; break`` as the block's last statement."""
    last = suite.body[-1] if suite.body else None
    body = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
    return bool(body) and isinstance(body[-1], cst.Break)
