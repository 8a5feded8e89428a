"""Per-token loops, noticed while a file is walked.

An eager engine's decode step is whatever its per-token loop runs: DeepSeek-style
``for cur_pos in range(start, total): logits = model.forward(tokens[:, prev_pos:cur_pos], prev_pos);
...; prev_pos = cur_pos``, gpt-fast style ``for i in range(n): tok, p = decode_one_token(model,
tok, input_pos); input_pos += 1``. What makes such a loop a *decode* loop, statically:

- it is a ``while`` loop or a ``for`` over ``range(...)`` (loops over layers, experts, batches or
  devices iterate a collection; ``range`` up to a layer count, its index read, is a layer loop too:
  :mod:`.layerloops`);
- a call in its body feeds its own output back: what the call returns (the names its statement
  binds or the container it mutates) flows, through the body's assignments and container stores,
  into a value the call reads on the next iteration (``x = f(x)``; ``logits = model(tokens[:,
  prev:cur]); nxt = sample(logits); tokens[:, cur] = nxt``; ``tok, p = decode_one_token(model, tok,
  pos)``). A loop over images, layers or requests that only collects results (``embs.append(
  vision(img[i]))``, ``start = end``) does not;
- the callee is not chosen by the loop variable (``self.layers[i](x)`` is a layer loop);
- what the call reads is not only the element the loop index picks. ``for i in
  range(len(layers)): layers[i].attn.q = patch_fn(layers[i].attn.q, params)`` stores into element
  ``i`` and reads element ``i``: the next iteration reads another element, so nothing one
  iteration produced reaches the next. Such a loop maps a function over a collection --
  quantizing, patching, loading or placing each layer (a loop over devices whose inner range
  the device picks, ``for j in range(d * per, (d + 1) * per)``, picks the elements too) -- and
  runs once, at set-up, however much device work the function it is handed reaches. A read of
  another element (``tokens[k - 1]``, ``tokens[:, prev:cur]``) still reads what an earlier
  iteration stored, and an element loop that carries something else (``out, state =
  model(frames[i], state)``: the recurrent state) stays a decode loop;
- what the call reads was not bound afresh earlier in the same iteration. ``ids =
  encode(prompts[k]); ids = model.prepare(ids)`` reads this iteration's ids, never what ``prepare``
  returned last time (an evaluation loop over prompts; a quantizer's ``named =
  collect(layer); named = drop(named, skip)``): a binding that is a statement of the body itself
  runs on every iteration before the call, so what *its* value was computed from stands in for
  the name (``x = tok; tok = model(x)`` still carries ``tok``). One under a branch or an inner
  loop may not run, and kills nothing (:meth:`LoopFrame.exposed`).

This is issue 19's definition of a per-token loop -- one that runs the model step and feeds what
it produced back -- read statically: the *carry* is decided here, per loop, while the file is
walked; whether the call *runs the model step* (a model's ``forward``, a ``__call__`` or a
``*decode*`` function doing device work, or a replay, reached through the call graph but never
through set-up code: a constructor that checks a new layer with one forward runs once) is
decided by the linker (:mod:`.entries`). A loop that fails either test is no evidence of
anything: it makes no entry, and what only it reaches is not hot (not checked). It is not made
cold either: a function holding such a loop that the decode path calls every token is hot
there, since it then runs every token.

State kept on ``self`` is a value like a local: ``self.ids`` is one name (``self.ids =
torch.cat([self.ids, nxt])``, ``self.tokens.append(t)``, ``self.out[:, i] = t``), so output fed
back through an attribute counts and two unrelated attributes do not feed each other. A call of a method of the same class (``tok = self._step()``) reads the ``self``
attributes that method's body names: decided when the class ends (:meth:`LoopTracker.resolve_state_calls`).

An iterator's ``__next__`` (``__anext__``) is a loop too: the iteration protocol calls it once per
item, so its whole body is one pseudo-loop (id :data:`PROTOCOL_LOOP`) that feeds back when a call's
output reaches the ``self`` state that call reads on the next ``next()`` -- ``logits =
self.model(self.ids); ...; self.ids = torch.cat([self.ids, nxt])``. A data loader's ``__next__``
(``self.at += n``) feeds nothing back into a call; the linker keeps only loops whose call reaches
a model step anyway. A generator function's loop around ``yield`` is an ordinary loop of its own,
an async generator's too: ``nxt = await self.step(ids)`` is a call like any other, and a step
handed to a thread and awaited (``await asyncio.to_thread(self.step, ids)``, ``await
loop.run_in_executor(None, self.step, ids)``, ``pool.submit(step, ids)``: :func:`.loopnames.pool_task`)
is a call of the callable handed over, with the arguments after it -- what the loop feeds back.
A server loop that awaits a request and hands a whole decode to a thread feeds nothing back.

A ``while`` loop that feeds nothing back is recorded too, with every call of its body (``FunctionInfo.serve_loops``): a worker's
``while True: msg = recv(); out = self.execute_model(msg); send(out)`` gets its work from outside (a socket, a queue, a
scheduler) and runs the model step once per message; the linker makes it a step loop when a call reaches the model step (:meth:`graphlint.static.entries.Discovery.serving_loops`). It runs as long as the
process serves (``while True:``, ``while self.running:``, ``while queue.has_work():``): not a loop
whose test reads a local its body rebinds (a retry or convergence loop: ``while batch is None:
offload(); batch = schedule()``), nor one that drains a work list its own function made
(:mod:`.worklists`), nor one that yields (see :func:`yields`).

The walker records such loops with the calls that feed back (:class:`LoopInfo`); the linker
keeps those whose call reaches device work (:mod:`.entries`). Names read by a call and
assignments' dependencies are collected only inside eligible loops, so other code pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from graphlint.static.advancedstate import bind_built, note_advance
from graphlint.static.cstwalk import preorder
from graphlint.static.facts import PROTOCOL_LOOP, FunctionInfo, LoopInfo
from graphlint.static.fieldcarry import FieldLoop, add_loop_call, resolve_field_loops, target_slots
from graphlint.static.genloops import bind_stream, handover, iterated
from graphlint.static.innerloops import bind_inner_targets
from graphlint.static.loopnames import (MUTATING_METHODS, base_name, bind_steps, bound_targets, container_call, eligible,
                                        names_read, pool_task, self_attr, condition_calls_nothing, yields)
from graphlint.static.layerloops import layer_loop
from graphlint.static.retryloops import retry_loop
from graphlint.static.scheduleloops import schedule_loop
from graphlint.static.looptargets import LoopTargets
from graphlint.static.sampledcarry import is_sampler, picked_calls, sampled_calls, used_modules
from graphlint.static.solverloops import note_update, solver_loop
from graphlint.static.stopflags import stop_flags
from graphlint.static.stepflow import note_assignment, note_call
from graphlint.static.timingloops import timing_loop
from graphlint.static.worklists import drains_local_list

if TYPE_CHECKING:
    from graphlint.static.tensors import TensorOracle

PROTOCOL_STEPS = frozenset(("__next__", "__anext__"))


@dataclass
class LoopFrame:
    id: int
    where: tuple  # the loop statement's position (see ``Site``)
    eligible: bool
    targets: set[str]
    #: names that pick this iteration's element (:func:`.loopnames.own_element`): the targets, and the targets of a
    #: nested loop whose range this loop's picks (``for j in range(d * per, (d + 1) * per)``)
    elements: set[str] = field(default_factory=set)
    writes: dict[str, int] = field(default_factory=dict)
    mutated: set[str] = field(default_factory=set)
    deps: dict[str, set[str]] = field(default_factory=dict)
    #: statement ordinal -> names bound / containers mutated there; container -> what was put in it
    made_at: dict[int, set[str]] = field(default_factory=dict)
    filled: dict[str, set[str]] = field(default_factory=dict)
    #: container -> (order, what was put in it) per store or mutating call: see :meth:`exposed`
    fills: dict[str, list[tuple[int, set[str]]]] = field(default_factory=dict)
    calls: list[tuple[int, tuple, set[str]]] = field(default_factory=list)  # (order, callee, reads)
    serves: bool = False  # a ``while`` loop: a serving loop when nothing feeds back (:mod:`.entries`)
    tested: frozenset = frozenset()  # the local names a ``while`` loop's test reads
    #: the depth of the loop's own statement in the walker's path: its body's statements are one deeper
    depth: int = 0
    #: name -> its bindings in the body: (order, what the value reads, whether the binding is a statement
    #: of the body itself, run on every iteration that goes on: see :meth:`exposed`)
    defs: dict[str, list[tuple[int, set[str], bool]]] = field(default_factory=dict)
    #: (order, callee, method, argument slots given a loop target) of ``self.m()``
    self_calls: list[tuple[int, tuple, str, frozenset]] = field(default_factory=list)
    counters: set[str] = field(default_factory=set)  # ``self.at += 1``: no carry (:mod:`.fieldcarry`)
    #: names bound from what the loop index picks (``layer = self._get_layer(i)``, ``layer = layers[i]``):
    #: a callee so named is chosen by the loop variable, as ``layers[i](x)`` is (a layer loop)
    picked: set[str] = field(default_factory=set)
    sampled: list[int] = field(default_factory=list)  # statements calling a sampler (:mod:`.sampledcarry`)
    #: names the body only ever updates from themselves (``x = x + dt * v``, ``x += v``), and names it
    #: binds any other way: an integrator's state (:mod:`.solverloops`)
    accumulated: set[str] = field(default_factory=set)
    rebound: set[str] = field(default_factory=set)
    stmt: cst.For | cst.While | None = None  # the loop statement, while it is walked (:mod:`.timingloops`)
    schedule: bool = False  # a ``for`` over a sampler's schedule (:mod:`.scheduleloops`): no callee is picked
    state_reads: dict = field(default_factory=dict)  # receiver -> whether the body reads its data (:mod:`.advancedstate`)

    def feeds_back(self, order: int, reads: set[str]) -> bool:
        """Whether the output of the call at ``order`` reaches what it reads in the next iteration."""
        return bool(reads) and bool(self.exposed(order, reads) & self.derived(order))

    def exposed(self, order: int, reads: set[str], depth: int = 0, memo: dict | None = None) -> set[str]:
        """What of ``reads``, read at ``order``, comes from an earlier iteration. A name the body
        binds in a statement of its own before ``order`` holds this iteration's value there
        (``named = collect(layer); named = keep(named, skip)``: ``keep`` reads what ``collect``
        returned, never its own last output), so what that value was computed from stands in for it
        (``x = f(y); y = model(x)`` still carries ``y``), and so does what the body put into it
        after that binding (``col = []; for r in rows: col.append(picked[r])``: a fresh list
        filled with the ids sampled from the last call's output). A binding under a branch or an
        inner loop may not run: it kills nothing. ``memo``: (order, name) -> its answer, once per
        question (a kernel's loop of many in-place updates asks the same ones again and again)."""
        memo = {} if memo is None else memo
        out: set[str] = set()
        for name in reads:
            key = (order, name)
            found = memo.get(key)
            if found is None:
                memo[key] = {name}  # while it is answered: a cycle carries the name itself
                found = memo[key] = self._exposed(order, name, depth, memo)
            out |= found
        return out

    def _exposed(self, order: int, name: str, depth: int, memo: dict) -> set[str]:
        binds = self.defs.get(name, ())
        last = max((o for o, _, top in binds if top and o < order), default=None)
        if last is None or depth > 8:
            return {name}
        out: set[str] = set()
        for o, sources, _ in binds:
            if last <= o < order:
                out |= self.exposed(o, sources, depth + 1, memo)
        for o, sources in self.fills.get(name, ()):  # ``col = []; col.append(tok)``: what went in
            if last <= o < order:
                out |= self.exposed(o, sources, depth + 1, memo)
        return out

    def fill(self, order: int, name: str, sources: set[str], ordered: bool = True) -> None:
        """``name`` (a container) is stored into or mutated at ``order`` with what ``sources`` name."""
        self.mutated.add(name)
        self.filled.setdefault(name, set()).update(sources)
        self.made_at.setdefault(order, set()).add(name)
        if ordered:
            self.fills.setdefault(name, []).append((order, sources))

    def derived(self, order: int, stop: frozenset | set = frozenset()) -> set[str]:
        """What the output of the call at ``order`` flows into, through the body's assignments
        (never into or through the names of ``stop``)."""
        derived = set(self.made_at.get(order, ())) - stop
        if not derived:
            return derived
        changed = True
        while changed and len(derived) < 256:
            changed = False
            for table in (self.deps, self.filled):
                for name, sources in table.items():
                    if name not in derived and name not in stop and sources & derived:
                        derived.add(name)
                        changed = True
        return derived


class LoopTracker(LoopTargets):
    """Mixin of :class:`graphlint.static.walker.Walker`: per-token loops, and what a ``for`` binds
    (:class:`.looptargets.LoopTargets`)."""

    func: FunctionInfo
    order: int
    path: list
    oracle: "TensorOracle"

    def init_loops(self) -> None:
        self.loop_frames: list[LoopFrame] = []
        self.tracking = 0  # eligible frames on the stack
        #: ``self.m()`` calls of a loop whose output reaches ``self`` state, decided when the class
        #: ends (``m`` may be defined later): (function, loop id, where, callee, method, attributes)
        self.state_calls: list[tuple[FunctionInfo, int, tuple, tuple, str, set[str]]] = []
        self.field_loops: list[FieldLoop] = []  # loops carrying through fields methods store (:mod:`.fieldcarry`)
        self.streams: dict[int, dict[str, cst.Call | None]] = {}  # per function: names bound once to a call (:mod:`.genloops`)
        self.step_locals: dict[int, set[str]] = {}  # per function: locals bound to steps (``indices = list(range(n))[::-1]``)
        self.built_locals: dict[int, set[str]] = {}  # per function: locals bound to an object it builds (:mod:`.advancedstate`)

    def push_loop(self, stmt: cst.For | cst.While, loop_id: int) -> None:
        layers = isinstance(stmt, cst.For) and layer_loop(stmt)  # a forward's layers: no step loop (:mod:`.layerloops`)
        ok = eligible(stmt, self.step_locals.get(id(self.func), frozenset())) and not layers
        schedule = not ok and not layers and isinstance(stmt, cst.For) and schedule_loop(stmt)  # (:mod:`.scheduleloops`)
        ok = ok or schedule
        targets = names_read(stmt.target) if isinstance(stmt, cst.For) else set()
        bind_inner_targets(self.loop_frames, stmt, targets, self.order)  # in every outer loop (:mod:`.innerloops`)
        serves = isinstance(stmt, cst.While) and not yields(stmt.body)
        tested = frozenset(n for n in names_read(stmt.test) if not n.startswith("self.")) if serves else frozenset()
        self.loop_frames.append(LoopFrame(loop_id, (tuple(self.path), "", 0), ok, targets, set(targets), depth=len(self.path),
                                          serves=serves, tested=tested, stmt=stmt, schedule=schedule))
        self.tracking += ok
        if ok:
            self.func.range_loops.append(loop_id)
            if isinstance(stmt, cst.While):
                self.func.while_loops += (loop_id,)
        elif isinstance(stmt, cst.For) and not layers:  # ``for tok in self.stream(...)``: a generator's consumer?
            iterated(self.func, loop_id, self.loop_frames[-1].where, self.flows.ir, stmt.iter,
                     self.streams.get(id(self.func)))

    def note_handover(self, stmt: cst.Expr | cst.Return) -> None:
        handover(self.func, self.loop_ids, self.flows.ir, stmt)

    def push_protocol_step(self, stmt: cst.FunctionDef) -> bool:
        """Enter an iterator's ``__next__``: its body is one pass of the protocol's loop."""
        if stmt.name.value not in PROTOCOL_STEPS or not self.func.cls:
            return False
        self.loop_frames.append(LoopFrame(PROTOCOL_LOOP, (tuple(self.path), "", 0), True, set(), depth=len(self.path)))
        self.tracking += 1
        self.func.range_loops.append(PROTOCOL_LOOP)
        self.loop_ids.append(PROTOCOL_LOOP)
        return True

    def pop_loop(self) -> None:
        frame = self.loop_frames.pop()
        self.tracking -= frame.eligible
        if not frame.eligible or (frame.stmt is not None and retry_loop(frame.stmt)):
            return  # not tracked, or a retry loop (:mod:`.retryloops`): no decode or serving loop
        exprs: list[tuple] = []
        feeding = [(order, expr, reads) for order, expr, reads in frame.calls if frame.feeds_back(order, reads)]
        for _, expr, _ in feeding:
            if expr not in exprs:
                exprs.append(expr)
        if exprs and frame.stmt is not None and timing_loop(
                frame.stmt, self.values.body, self.imports, set().union(*(frame.derived(o) for o, _, _ in feeding))):
            return  # it times the step (:mod:`.timingloops`): no decode loop, nor a serving or field loop
        if exprs:
            params = self.oracle.fn.params
            called = {e[1] for _, e, _ in feeding if len(e) == 2 and e[0] == "n" and e[1] in params}
            modules = used_modules(self.values.body, called) if called else set()
            tensors = self.oracle.cls.tensor_attrs if self.oracle.cls is not None else frozenset()
            sampled = sampled_calls(frame, feeding, params, self.oracle.fn.param_classes, modules, tensors) \
                if frame.sampled or modules else []
            self.func.loops.append(LoopInfo(frame.id, frame.where, exprs, sampled=sampled, picked=picked_calls(frame, feeding),
                                            solver=solver_loop(frame, [f for f in feeding if not container_call(f[1])]),
                                            schedule=frame.schedule))
        elif frame.serves and frame.calls and not (frame.tested & frame.writes.keys()) - stop_flags(frame) \
                and not drains_local_list(frame.stmt, self.values.body):
            # ``while True: msg = recv(); out = self.execute_model(msg)``; not a loop that runs until a
            # local its body rebinds says so (``while batch is None: offload(); batch = schedule()``)
            calls = list(dict.fromkeys(expr for _, expr, _ in frame.calls))
            forever = frame.stmt is not None and condition_calls_nothing(frame.stmt.test)
            self.func.serve_loops = (*self.func.serve_loops, LoopInfo(frame.id, frame.where, calls, forever=forever))
        for order, expr, method, _ in frame.self_calls:
            state = {n[5:] for n in frame.derived(order) if n.startswith("self.")} if expr not in exprs else None
            if state:
                self.state_calls.append((self.func, frame.id, frame.where, expr, method, state))
        calls = [(expr, method, slots) for _, expr, method, slots in frame.self_calls if expr not in exprs]
        if calls and self.func.cls:
            stores = {n[5:] for n in {*frame.writes, *frame.mutated} - frame.counters if n.startswith("self.")}
            self.field_loops.append(FieldLoop(self.func, frame.id, frame.where, calls, stores))

    def resolve_state_calls(self, stmt: cst.ClassDef, cls: str) -> None:
        """``tok = self._step(); self.ids = torch.cat([self.ids, tok])``: the call feeds back when the
        method (of this class body) reads the ``self`` state its output reaches."""
        mine = [c for c in self.state_calls if c[0].cls == cls]
        fields = [f for f in self.field_loops if f.func.cls == cls]
        if not mine and not fields:
            return
        self.state_calls = [c for c in self.state_calls if c[0].cls != cls]
        methods = {m.name.value: m for m in stmt.body.body if isinstance(m, cst.FunctionDef)}
        if fields:
            self.field_loops = [f for f in self.field_loops if f.func.cls != cls]
            resolve_field_loops(fields, methods)
        for func, loop_id, where, expr, method, state in mine:
            body = methods.get(method)
            if body is None or not state & {n.attr.value for n in preorder(body.body) if self_attr(n)}:
                continue
            add_loop_call(func, loop_id, where, expr)

    def note_assignment(self, targets: list[cst.BaseExpression], value: cst.BaseExpression | None,
                        augmented: bool = False) -> None:
        note_assignment(self.func, self.order, targets, value, augmented, self.info.advanced_attrs,
                        bool(self.loop_ids))
        bind_stream(self.streams.setdefault(id(self.func), {}), targets, value, augmented or bool(self.loop_ids))
        bind_steps(self.step_locals, id(self.func), targets, value, augmented)
        bind_built(self.built_locals, id(self.func), targets, value)
        if self.devices_set:  # a rebound device name selects another device (:func:`.calls.note_device_selection`)
            self.devices_set.difference_update((self.func.qualname, t.value) for t in targets if type(t) is cst.Name)
        if not self.tracking:
            return
        if augmented and type(value) in (cst.Integer, cst.Name, cst.Attribute):  # ``self.at += 1``: a counter
            for frame in self.loop_frames:
                frame.counters.update(n for n in map(self_attr, targets) if n)
        reads = names_read(value) if value is not None else set()
        for target in targets:
            names = bound_targets(target)
            base = base_name(target) if not names else None
            for frame in self.loop_frames:
                if not frame.eligible:
                    continue
                mine = _frame_reads(frame, reads, [value] if value is not None else [])
                made = frame.made_at.setdefault(self.order, set())
                if base is not None or augmented:  # ``x += y`` is a binding too (``defs``), no fill
                    for name in [base] if base else names:
                        frame.fill(self.order, name, mine | ({name} if augmented else set()), ordered=not augmented)
                top = not augmented and len(self.path) == frame.depth + 1
                if names and not augmented and frame.elements & reads and not frame.schedule:
                    frame.picked.update(names)
                note_update(frame, names, value, augmented)
                for name in names:
                    frame.writes[name] = self.order
                    frame.deps[name] = mine | frame.deps.get(name, set())  # every binding in the body
                    frame.defs.setdefault(name, []).append((self.order, mine | ({name} if augmented else set()), top))
                    made.add(name)

    def note_call(self, call: cst.Call, expr: tuple | None) -> None:
        note_call(self.func, self.order, self.path, self.loop_ids, call, expr, self.stmt, self.oracle.is_tensor)
        sampler = is_sampler(call)
        self.func.samples |= sampler  # picks tokens: what a token step does (:mod:`.tokenless`)
        if not self.tracking:
            return
        if sampler:
            for frame in self.loop_frames:
                frame.sampled.append(self.order)
        func = call.func
        receiver = None
        if isinstance(func, cst.Attribute):  # ``ids.append(t)``, ``self.tokens.append(t)``, ``buf.copy_(t)``
            receiver = func.value.value if type(func.value) is cst.Name else self_attr(func.value)
        if receiver is not None:
            method = func.attr.value
            if method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_")):
                args = set().union(*(names_read(a.value) for a in call.args)) if call.args else set()
                for frame in self.loop_frames:
                    if frame.eligible:
                        frame.fill(self.order, receiver, args)
        own = set(self.oracle.fn.params) | self.built_locals.get(id(self.func), set()) if receiver else set()
        advanced = note_advance(self.loop_frames, self.order, call, self.stmt, self.imports, own) if own else None  # (:mod:`.advancedstate`)
        task = pool_task(call, self.func.calls)
        if task is not None:  # the step an async loop awaits from a thread: a call of what it hands over
            expr, func, inputs = task
        elif expr is None:
            return
        else:
            inputs = [a.value for a in call.args]
        callee = names_read(func)
        if isinstance(func, cst.Attribute) and advanced is None:
            inputs.append(func.value)  # ``model.forward(...)``: the receiver is an input too
        reads = set().union(*(names_read(i) for i in inputs)) - {"self"} if inputs else set()
        method = func.attr.value if type(func) is cst.Attribute and type(func.value) is cst.Name \
            and func.value.value == "self" else None  # ``self._step()``: it may read the loop's state
        for frame in self.loop_frames:
            if frame.eligible and not callee & (frame.targets | frame.picked):
                frame.calls.append((self.order, expr, _frame_reads(frame, reads, inputs, {"self"})))
                if method is not None:
                    frame.self_calls.append((self.order, expr, method, target_slots(call, frame.targets)))


def _frame_reads(frame: LoopFrame, reads: set[str], exprs: list[cst.BaseExpression],
                 drop: set[str] | frozenset = frozenset()) -> set[str]:
    """What ``exprs`` read, as ``frame`` sees them: an element its target picks reads nothing the
    loop carries (:func:`.loopnames.own_element`). Computed again only when the loop target is read at all."""
    if not frame.elements & reads:
        return reads
    return set().union(*(names_read(e, frame.elements) for e in exprs)) - drop
