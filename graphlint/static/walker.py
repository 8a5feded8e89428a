"""One pass over a libcst module: functions, classes, call sites, hazard candidates.

Statements are walked explicitly (so we know the enclosing function, class, loop, guard and capture region; simple
statements in :mod:`.simplestmts`); expressions with a flat pre-order walk that hands each node to the matchers that
asked for its type (:mod:`.dispatch`). Tensor facts are updated in source order as assignments are passed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import libcst as cst

from graphlint.rules import Rule
from graphlint.static.grownnames import note_grown
from graphlint.static.admitloops import FLAG as PER_ELEMENT, admits_element
from graphlint.static.calls import CallRecorder
from graphlint.static.branchwalk import BranchWalker
from graphlint.static.defaultdevice import device_context
from graphlint.static.derefs import deref_conditions
from graphlint.static.cstwalk import SMALL_STATEMENTS, bound_names, jumps_out
from graphlint.static.perstep import LAZY
from graphlint.static.devicenarrow import narrow, widen
from graphlint.static.dispatch import MatcherDispatch
from graphlint.static.facts import ClassInfo, ModuleInfo
from graphlint.static.flows import FlowRecorder, catches_import_error
from graphlint.static.guards import Guards, predicates
from graphlint.static.hostparams import param_flags
from graphlint.static.handback import set_binding
from graphlint.static.inherited import inherited_by_class
from graphlint.static.iterations import EXITS, carried_literals, loop_counter, note_exit, stepped_counters
from graphlint.static.loopnames import feeds_back_a_call
from graphlint.static.loops import LoopTracker, eligible as is_step_loop
from graphlint.static.matchers.base import Matcher
from graphlint.static.names import module_name
from graphlint.static.optin import OptInFlags
from graphlint.static.options import StaticOptions
from graphlint.static.params import object_method
from graphlint.static.readbacks import iterations_chosen, only_skips
from graphlint.static.regions import RegionRecorder
from graphlint.static.retiring import retires_element
from graphlint.static.runonce import rest_is_setup
from graphlint.static.scopes import ScopeWalker
from graphlint.static.simplestmts import SimpleStatements
from graphlint.static.staging import is_pinned_staging
from graphlint.static.liftedconst import LIFTED, lifted_call
from graphlint.static.tensors import TensorOracle
from graphlint.static.valueatoms import literal
from graphlint.static.valuefacts import ValueFacts
from graphlint.static.steadyargs import SteadyArgs
from graphlint.static.callkinds import settle_advanced
from graphlint.static.stepflow import finish_module

@dataclass
class RawCandidate:
    rule: Rule
    path: tuple[tuple[str, int], ...]
    stmt: cst.CSTNode
    anchor: cst.CSTNode
    name: str
    function: str
    in_capture: bool
    order: int = 0
    loops: tuple[int, ...] = ()
    flags: frozenset[str] = frozenset()
    cond: tuple = ()


class Walker(SimpleStatements, ScopeWalker, RegionRecorder, LoopTracker, MatcherDispatch, BranchWalker):
    """Also the ``MatchContext`` the matchers see."""

    admitting: tuple[int, ...] = ()  # the loops admitting the element they take around here (:mod:`.admitloops`)

    def __init__(self, path: str, matchers: Sequence[Matcher], options: StaticOptions):
        self.info = ModuleInfo(path=path)
        self.module = module_name(path)
        self.imports = self.info.imports
        self.oracle = TensorOracle(self.imports)
        self.options = options
        self.guards = Guards(self.imports, options.guards, options.prefill_guards)
        self.init_dispatch(matchers)
        self.raw: list[RawCandidate] = []
        self.errors: list[tuple[tuple, str]] = []  # (statement path, message): placed like candidates
        self.local_names: set[str] = set()
        self.validation_off = False  # the module turns distributions' argument checks off (``module_facts``)
        self.tables: set[str] = set()  # module-level names bound to a container literal (see ``module_facts``)
        self.param_facts: dict[str, list] = {}  # qualname -> what every caller passes (static.valuekinds)
        self.loop_depth = 0
        self.item_loops = 0  # enclosing ``for`` loops over a collection (layers, experts, devices)
        self.item_names: set[str] = set()  # the names those loops bind (``layer`` in ``for layer in ...``)
        self.module_loops = 0  # enclosing loops over sub-modules (``for layer in self.layers``)
        #: the innermost ``for``'s target and the read-backs before it, for :func:`iterations_chosen`
        self.loop_target: tuple | None = None
        self.setup_depth = 0  # inside ``if self.x is None: self.x = ...`` (lazy initialisation)
        #: inside a branch of the function (an ``if``'s arms, after an early exit, a handler, a case), and the calls
        #: of conditional operands (``b`` of ``a and b``, an ``IfExp``'s arms, a lambda): :attr:`.facts.CallSite.always`
        self.branching, self.cond_calls, self.always_call = 0, set(), False
        self.lazy_at = 0  # the set-up depth of a ``self`` field's lazy initialisation (:mod:`.perstep`)
        self.once = ""  # inside ``if not self.<flag>:`` (a one-time step if the class sets the flag True)
        self.needs: tuple[str, ...] = ()  # inside ``if self.<attr> is not None:`` (see ``guards.needed_attrs``)
        self.opt_in: tuple[str, ...] = ()  # inside ``if benchmark:``, a measurement switch off by default (:mod:`.optin`)
        self.compile_opt_in: tuple[str, ...] = ()  # inside ``if use_torch_compile:``, off by default (:mod:`.optin`)
        self.counters: tuple = ()  # the enclosing loops' counters; first_iters: the loops whose first
        self.first_iters: tuple[int, ...] = ()  # iteration alone runs this code (:mod:`.iterations`)
        #: id of a node in ``b`` of ``i == 0 and b`` -> the loop whose first iteration alone evaluates it
        self.first_operands: dict[int, int] = {}
        self.once_flags: dict[str, set[str]] = {}  # class -> the flags it (or a base in this file) sets True
        self.method_writes: dict[str, dict[str, set[str]]] = {}  # class -> method -> ``self`` attrs it assigns
        self.in_capture = False
        self.values = ValueFacts()  # parameters, rebindings, the enclosing branches' conditions
        self.values.is_tensor = lambda node: self.oracle.is_tensor(node)
        self.values.shapes = lambda: self.oracle.fn.shapes
        self.order = 0  # statement ordinal within the current function
        self.following, self.preceding = (), None  # the statements after the compound statement walked, the one before
        #: (function, local) -> every assignment so far binds it to a literal (:func:`.runonce.counts_down`)
        self.constant_locals: dict[tuple[str, str], bool] = {}
        self.loop_ids: list[int] = []  # ordinals of the enclosing loop statements
        #: the ``try`` / ``with`` statements being walked, as (node, the loop ids around it, its function):
        #: a ``finally`` may cancel a loop's exit, a handler swallow a raise (:mod:`.loopexits`)
        self.shelters: list[tuple] = []
        #: per enclosing loop: the tensor facts its ``... ; break`` branches bound (live after the loop)
        self.loop_breaks: list[list[tuple[set[str], set[str], set[str]]]] = []
        self.init_regions()
        self.init_loops()
        self.class_stack: list[ClassInfo] = []
        self.local_defs: list[dict[str, str]] = []
        self.flows = FlowRecorder(self.info.flows, self.imports, self.oracle.is_tensor,  # what each scope binds, for the points-to analysis
                                  lambda func: object_method(func, self.func.presumed_tensors))
        self.flows.optional_imports = self.info.optional_imports
        self.flows.keyed_returns = self.info.keyed_returns
        self.flows.on_lambda = self.lambda_function
        self.flows.looping = lambda: bool(self.loop_ids)
        self.calls = CallRecorder(self)  # reads where this walker is; names callees, records call sites
        self.steady = SteadyArgs()  # which arguments are the same on every call (:mod:`.steadyargs`)
        self.func = self._new_function("<module>", "<module>", "")
        self.path: list[tuple[str, int]] = []
        self.arms: tuple[tuple[int, int], ...] = ()  # (``if`` statement ordinal, 0 body / 1 else) around here
        self.stmt: cst.CSTNode | None = None
        self.store_targets: set[int] = set()
        self.call_name: str | None = None  # resolved callee of the Call being visited
        self.call_expr: tuple | None = None  # its callee in flow IR (see :mod:`.flowir`)

    # -- MatchContext ------------------------------------------------------------------
    @property
    def class_name(self) -> str:
        return self.class_stack[-1].qualname if self.class_stack else ""

    @property
    def function_name(self) -> str:
        return self.func.name

    def defer(self, rule: Rule, anchor: cst.CSTNode, name: str = "") -> RawCandidate | None:
        """A report to ``emit`` now or later; None in lazy one-time initialisation (setup, not the
        step) and import-time code outside a loop (never a decode step; skipping it saves the ast
        parse). A module-level loop may be a script's per-token loop (:mod:`.loops`): what its body
        does is reported only if the linker takes the loop for one."""
        in_capture = self.in_capture
        if in_capture and id(anchor) in self.reselected:
            return None  # ``set_device(dev)`` of the device the function selected before capturing
        anywhere = rule.params.get("scope") == "anywhere"
        # a self field's lazy set-up: kept, flagged, decided when linking (:mod:`.perstep`)
        lazy = not in_capture and not anywhere and bool(self.setup_depth) and self.setup_depth == self.lazy_at
        if not in_capture and not anywhere and not lazy and (
                self.setup_depth or (self.func.qualname == "<module>" and not self.loop_ids)):
            return None
        if not in_capture and rule.params.get("scope") == "capture" and self.loop_nodes:
            in_capture = self.capture_loop()  # ``set_device(d)`` in the loop that captures on each device
        flags = [f"once:{self.once}"] if self.once else []
        flags.extend((LAZY,) if lazy else ())
        flags.extend(f"first-iter:{loop_id}" for loop_id in self.first_iters)
        flags.extend(f"{PER_ELEMENT}{loop_id}" for loop_id in self.admitting)
        operand = self.first_operands.get(id(anchor)) if self.first_operands else None
        if operand is not None and operand not in self.first_iters:  # ``if i == 0 and done.any():``
            flags.append(f"first-iter:{operand}")
        flags.extend(f"needs:{attr}" for attr in self.needs)
        flags.extend(f"opt-in:{name}" for name in self.opt_in)
        flags.extend((*self.device_flags(), *param_flags(rule.code, anchor, self.oracle)))  # (:mod:`.hostparams`)
        if isinstance(anchor, cst.Call) and is_pinned_staging(anchor, self.oracle):
            flags.append("pinned")
        flags.extend((LIFTED,) if rule.params.get("lifted_ok") and lifted_call(anchor, self.func, self.oracle) else ())
        return RawCandidate(rule, tuple(self.path), self.stmt, anchor, name, self.func.qualname, in_capture,
                            self.order, tuple(self.loop_ids), frozenset(flags), self.values.cond)

    def emit(self, raw: RawCandidate | None) -> None:
        self.raw.extend((raw,) if raw is not None else ())

    def report(self, rule: Rule, anchor: cst.CSTNode, name: str = "") -> None:
        self.emit(self.defer(rule, anchor, name))

    def callee_ir(self, call: cst.Call) -> tuple | None:
        ir = self.flows.ir.expr(call)
        return ir[1] if ir is not None and ir[0] == "c" else None

    def is_store_target(self, node: cst.CSTNode) -> bool:
        return id(node) in self.store_targets

    # -- entry point -------------------------------------------------------------------
    def run(self, module: cst.Module, imported_tensor_functions: frozenset[str] = frozenset()) -> ModuleInfo:
        """``imported_tensor_functions``: local names of imported functions another file annotates
        ``-> Tensor`` (found by :mod:`graphlint.static.crossfile`), and facts this file's classes
        inherit from their bases (``Cls.weight:gate``, see :mod:`graphlint.static.inherited`)."""
        self.inherited = inherited_by_class(imported_tensor_functions)
        self.switches = OptInFlags(module, self.imports)
        self.guards.tests = predicates(module)
        self.module_facts(module.body, imported_tensor_functions)
        self.body(module.body, "body")
        finish_module(self.func, self.raw, 0, module)  # a script's per-token loop at module level
        return self.info

    # -- statements --------------------------------------------------------------------
    def body(self, stmts: Iterable[cst.CSTNode], field: str) -> None:
        outer_cond = self.values.cond
        try:
            self._body(stmts, field)
        finally:
            self.values.cond = outer_cond  # an early exit's condition holds to the end of its block only

    def _body(self, stmts: Iterable[cst.CSTNode], field: str) -> None:
        index = 0
        stmts = tuple(stmts)
        setup, branching, lazy_at, narrowed = self.setup_depth, self.branching, self.lazy_at, set()
        try:
            for position, stmt in enumerate(stmts):
                smalls = stmt.body if type(stmt) is cst.SimpleStatementLine else (stmt,)
                for small in smalls:
                    self.order += 1
                    if self.cond_calls:
                        self.cond_calls.clear()
                    if type(small) in EXITS:
                        note_exit(self.func, self.loop_ids, small)
                    self.path.append((field, index))
                    try:
                        if type(small) in SMALL_STATEMENTS:
                            setting = set_binding(small, self.values.cond) if self.values.cond and type(small) is cst.Assign else None
                            self.values.cond += (("set", setting),) if setting else ()  # to the block's end
                            derefs = deref_conditions(self.values, small, self.oracle.fn.optional)  # read before the statement rebinds
                            self.small(small)
                            self.values.cond += tuple(c for c in derefs if c not in self.values.cond)
                        else:
                            # what runs after an ``if`` (:meth:`capture_branch`), what ran before (:func:`.memoguards.object_miss`)
                            self.following, self.preceding = stmts[position + 1:], stmts[position - 1] if position else None
                            self.compound(small)
                    finally:
                        self.path.pop()
                    self.values.cond += self.values.take_exits()
                    index += 1
                if self.guards.ends_block(stmt):
                    return  # the rest of this block never runs while capturing (or only with a guard on)
                if type(stmt) is cst.If and jumps_out(stmt):
                    self.branching += 1  # the rest of the block runs only when the ``if`` lets it
                    narrowed |= narrow(self.oracle.fn, stmt, stmts[position + 1:])  # no CUDA tensor after (:mod:`.devicenarrow`)
                rest = rest_is_setup(stmt, stmts[position + 1:], self.oracle.fn) if type(stmt) is cst.If else ""
                if rest:  # the rest refreshes a table, fills a memo or arms a ``self`` flag (:mod:`.runonce`)
                    self.setup_depth += 1
                    self.lazy_at = 1 if rest == "lazy" and self.setup_depth == 1 and self.func.cls else self.lazy_at
        finally:
            self.setup_depth, self.lazy_at = setup, lazy_at  # raised for the rest of this block by a table refresh
            self.branching = branching
            widen(self.oracle.fn, narrowed)

    def suite(self, suite: cst.BaseSuite, field: str = "body") -> None:
        self.body(suite.body, field)

    def compound(self, stmt: cst.CSTNode) -> None:
        self.stmt = stmt
        self.values.call_exprs.clear()
        self.oracle.readback_seen = False
        self.flows.statement()
        if type(stmt) is cst.FunctionDef:
            self.function(stmt)
        elif type(stmt) is cst.ClassDef:
            self.klass(stmt)
        elif type(stmt) is cst.If:
            chosen = iterations_chosen(stmt, self.loop_target, self.oracle)
            self.oracle.fn.readbacks.update(chosen)
            self.if_(stmt)
            if chosen and not only_skips(stmt):
                self.oracle.fn.readbacks.difference_update(chosen)
        elif type(stmt) in (cst.For, cst.While):
            self.loop(stmt)
        elif type(stmt) is cst.With:
            self.with_(stmt)
        elif type(stmt) in (cst.Try, cst.TryStar):
            self.values.in_try += 1
            optional = catches_import_error(stmt)  # ``try: import ext`` / ``except ImportError``: optional
            self.shelters.append((stmt, tuple(self.loop_ids), self.func))
            try:
                self.flows.optional += optional
                try:
                    self.suite(stmt.body)
                finally:
                    self.flows.optional -= optional
                self.branching += 1
                try:
                    for i, handler in enumerate(stmt.handlers):
                        self.handler(handler.body, f"handlers.{i}")
                finally:
                    self.branching -= 1
                if stmt.orelse is not None:
                    self.suite(stmt.orelse.body, "orelse")
                if stmt.finalbody is not None:
                    self.suite(stmt.finalbody.body, "finalbody")
            finally:
                self.values.in_try -= 1
                self.shelters.pop()
        elif type(stmt) is cst.Match:
            self.expr(stmt.subject)
            self.branching += 1
            for i, case in enumerate(stmt.cases):
                self.suite(case.body, f"cases.{i}")
            self.branching -= 1

    def loop(self, stmt: cst.For | cst.While) -> None:
        loop_id = self.order
        if isinstance(stmt, cst.While):  # its test runs every iteration: a part of the loop's body
            self.loop_ids.append(loop_id)
            try:
                self.visit_node(stmt)
            finally:
                self.loop_ids.pop()
        else:
            self.visit_node(stmt)
        counter = loop_counter(stmt, loop_id) if isinstance(stmt, cst.For) else None
        stepped = stepped_counters(stmt, loop_id, self.values.assigns, counter)  # before the loop forgets them
        self.values.loop(stmt, loop_id, carried_literals(stmt, literal))
        if isinstance(stmt, cst.For):
            self.store_targets = {id(stmt.target)}
            self.expr(stmt.target)
            self.store_targets = set()
            self.expr(stmt.iter)
            self.bind_loop_target(stmt.target, stmt.iter, (stmt, loop_id))
            self.values.stored(stmt.target)
            self.flows.loop_target(stmt.target, stmt.iter)
        self.push_loop(stmt, loop_id)
        admits = isinstance(stmt, cst.While) and admits_element(stmt, self.values.body)  # once per element (:mod:`.admitloops`)
        if admits or isinstance(stmt, cst.For) and retires_element(stmt):
            self.func.retire_loops += (loop_id,)
        self.loop_ids.append(loop_id)
        advanced = self.oracle.fn.advanced
        outer_advanced = dict(advanced)
        if is_step_loop(stmt):
            advanced.update(dict.fromkeys(self.oracle.step_loop(stmt, loop_id), loop_id))  # (:mod:`.looppositions`)
        counters, self.counters = self.counters, self.counters + ((counter,) if counter else ()) + tuple(stepped)
        admitting, self.admitting = self.admitting, self.admitting + ((loop_id,) if admits else ())
        self.enter_loop(stmt)
        note_grown(stmt, self.oracle)  # ``ids = torch.cat([ids, tok])`` in it: a tensor from the head on
        if isinstance(stmt, cst.While):
            self.expr(stmt.test)  # evaluated every iteration: part of the loop
            self.tested(stmt.test)
            self.flows.use(stmt.test)
        outer_target, self.loop_target = self.loop_target, (stmt.target, frozenset(self.oracle.fn.readbacks)) \
            if isinstance(stmt, cst.For) else None
        over_items = isinstance(stmt, cst.For) and not is_step_loop(stmt)  # ``for layer in self.layers``
        outer_names, outer_modules = self.item_names, self.module_loops
        if over_items:
            bound = set(bound_names(stmt.target))
            self.item_names = outer_names | bound
            self.module_loops += bool(bound & self.oracle.fn.module_aliases.keys())  # ``for layer in self.layers``
        self.loop_depth += 1
        self.item_loops += over_items
        self.loop_breaks.append([])
        try:
            self.suite(stmt.body)
        finally:
            facts = self.oracle.fn
            for tensors, bools, scalars in self.loop_breaks.pop():  # ``else: res = r; break``: after the loop
                facts.tensors |= tensors
                facts.bools |= bools
                facts.scalars |= scalars
            self.loop_depth -= 1
            self.item_loops -= over_items
            self.item_names, self.module_loops = outer_names, outer_modules
            self.loop_target = outer_target
            self.counters, self.admitting = counters, admitting
            self.exit_loop(stmt)
            self.loop_ids.pop()
            self.pop_loop()
            if feeds_back_a_call(self.func.loops, loop_id):
                self.steady.per_token.add(id(stmt))
            if outer_advanced != advanced or loop_id in self.frozen_loops:
                settle_advanced(self.func.calls, loop_id, feeds_back_a_call(self.func.loops, loop_id))
                advanced.clear()
                advanced.update(outer_advanced)
            self.values.end_loop(loop_id)
        if stmt.orelse is not None:  # runs after the loop: a ``break`` there leaves the loop around it
            self.once_block(lambda: self.suite(stmt.orelse.body, "orelse"), stmt.orelse.body)

    def with_(self, stmt: cst.With) -> None:
        captures, varying_device = self.with_contexts(stmt)  # first: ``with device(d), graph(g):`` selects d
        if captures:
            self.func.captures = True
        outer = self.in_capture
        self.device_contexts += varying_device
        placed = any(device_context(item.item, self.imports) for item in stmt.items)  # :mod:`.defaultdevice`
        self.oracle.default_device += placed
        try:
            for item in stmt.items:
                self.expr(item.item)
                if item.asname is not None:
                    self.flows.assign(item.asname.name, item.item)
                    self.values.stored(item.asname.name)
            self.in_capture = outer or captures
            self.shelters.append((stmt, tuple(self.loop_ids), self.func))
            self.suite(stmt.body, "with")  # a block that always runs (:func:`.stmtpaths.follows_a_read`)
        finally:
            if self.shelters and self.shelters[-1][0] is stmt:
                self.shelters.pop()
            self.in_capture = outer
            self.device_contexts -= varying_device
            self.oracle.default_device -= placed
