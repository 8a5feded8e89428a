"""A loop's carry through ``self`` fields that the methods it calls store and read.

An offloading engine keeps the decode loop's state on the object, not in locals:
``for i in range(self.gen_len): for j in range(self.num_layers): self.load_hidden(i, j);
self.compute_layer(i, j); self.store_hidden(i, j)`` -- ``store_hidden`` writes the sampled ids
into ``self.output_ids``, ``load_hidden`` reads them back for the next token, and
``compute_layer`` runs the layer over ``self.hidden`` / ``self.attention_mask``, which other
calls of the body filled. No local goes round the loop, so the local carry test of :mod:`.loops`
sees nothing. Read statically, per loop:

- **What the body stores on ``self``**: its own stores (``self.pos += 1``, ``self.ids[k] = t``,
  ``self.cache.append(kv)``) and what the ``self.m(...)`` methods it calls store, at any depth
  through further ``self`` calls of the same class body: assignments whose target is rooted at
  ``self.<field>`` (``self.f = v``, ``self.f[a:b] = v``, ``self.f.x = v``), and mutating methods on
  it or on an element of it (``self.f[i][j].store(v)``, ``self.f.append(v)``, ``self.f.copy_(v)``).
  A field a method only tests (``if not self.cache_ready:``, ``if self.prev_len < n:``) decides
  what runs and feeds the step nothing: such a read is no read (a benchmark repeating whole
  generations, each setting a flag and a length, carries nothing from one to the next).
  A store under a test of the same field (``if self.w is None: self.w = build()``, ``if not
  hasattr(self, "w")``) builds a value once and keeps it: no store either (:func:`_lazy_stores`).
  A counter (``self.at += 1``) is no store: a position advanced alone carries nothing the step
  produced, as in a local loop (:func:`_counts`).
- **A call of the body carries** when the method it calls reads a field the body stores: what one
  iteration stored, the next reads (``compute_layer`` reads the mask ``update_attention_mask``
  stored). The linker keeps the loop only if such a call reaches the model step (:mod:`.entries`),
  as for any per-token loop, so a loop that only moves state between fields runs no step.
- **A callee the loop index picks is a layer, not a step** (:func:`picks`): ``self.compute_layer(i,
  j)`` whose method calls ``self.layers[j].forward(...)`` with the ``j`` it was passed runs layer
  ``j``; for the loop over ``j`` that call is a layer loop's call, as ``self.layers[j](x)`` written
  in the loop is (:mod:`.loops`), however much state the layers hand each other. The loop over
  tokens around it passes ``i`` there, not ``j``: its call carries.

Only methods of the class body being walked are read (an inherited method is not), and a field
stored through an alias (``mask = self.mask[k]; mask.val = ...``) is not seen.

Such a carry is weaker evidence than a local one: bookkeeping goes round through fields too (a
serving loop's pending transfers, a queue), and nothing says the step's output does. The calls it
adds are marked (``LoopInfo.fields``); a loop whose every model-running call carries only so, in a
model's ``forward``, is listed but ranks below the decode path: what only it reaches is at most a
warning (:meth:`.tokenloops.TokenLoops.fields_only`). Elsewhere the loop keeps its severity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.facts import LoopInfo

if TYPE_CHECKING:
    from graphlint.static.facts import FunctionInfo

#: methods that change the object they are called on (beyond ``x_`` in-place tensor methods)
STORING_METHODS = frozenset(("append", "extend", "insert", "add", "update", "store", "put", "push", "pop",
                             "clear", "setdefault", "appendleft", "popleft", "remove"))


#: one access of a field: the parameters that index it on the way (``self.hidden[i][j]``: {i, j})
Access = frozenset


@dataclass
class MethodState:
    """The ``self`` fields a method reads and stores, and the parameters that pick its callee."""

    reads: dict[str, set[Access]] = field(default_factory=dict)
    stores: dict[str, set[Access]] = field(default_factory=dict)
    #: parameters (name and position, ``self`` not counted) used to pick a field's element that is called
    picks: set[str | int] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)  # the ``self.m()`` methods it calls
    params: tuple[str, ...] = ()

    def note(self, table: dict, node: cst.BaseExpression, named: set[str]) -> str | None:
        root, indices = _field(node, named)
        if root is not None:
            table.setdefault(root, set()).add(frozenset(indices))
        return root


def _field(node: cst.BaseExpression, named: set[str]) -> tuple[str | None, set[str]]:
    """``self.f``, ``self.f[i][j]``, ``self.f.x[k]`` -> ("f", the parameters among the indices)."""
    indices: set[str] = set()
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
            return node.attr.value, indices
        if type(node) is cst.Subscript:
            for el in node.slice:
                if isinstance(el.slice, cst.Index) and type(el.slice.value) is cst.Name \
                        and el.slice.value.value in named:
                    indices.add(el.slice.value.value)
        node = node.value
    return None, set()


def _picked_by(node: cst.BaseExpression, named: set[str]) -> set[str]:
    """The parameters that index a ``self`` field on the way to a called value (``self.layers[j]``)."""
    root, indices = _field(node, named)
    return indices if root is not None else set()


def method_state(method: cst.FunctionDef) -> MethodState:
    """One method's own fields and picks (not yet those of the ``self`` methods it calls)."""
    params = tuple(p.name.value for p in method.params.params)[1:]  # ``self`` first
    state = MethodState(params=params)
    named = set(params) | {p.name.value for p in method.params.kwonly_params}
    skip: set[int] = set()  # attribute nodes already accounted for (a store's own target)
    lazy = _lazy_stores(method)
    for node in preorder(method.body):
        kind = type(node)
        if kind in (cst.If, cst.While, cst.Assert, cst.IfExp):  # a test decides what runs, feeds no step
            skip.update(id(n) for n in preorder(node.test) if type(n) in (cst.Attribute, cst.Subscript))
        if kind is cst.AugAssign and _counts(node):
            state.note(state.reads, node.target, named)  # ``self.at += 1``: a counter, no carry
            skip.update(_chain(node.target))
        elif kind in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign):
            if id(node) in lazy:  # ``if self.w is None: self.w = build()``: made once, no carry
                skip.update(_chain(node.target))
            elif state.note(state.stores, node.target, named) is not None:
                if kind is cst.AugAssign:
                    state.note(state.reads, node.target, named)
                skip.update(_chain(node.target))
        elif kind is cst.Call and type(node.func) is cst.Attribute:
            func, name = node.func, node.func.attr.value
            if type(func.value) is cst.Name and func.value.value == "self":
                state.calls.add(name)
                skip.add(id(func))
            elif name in STORING_METHODS or (name.endswith("_") and not name.startswith("_")):
                state.note(state.stores, func.value, named)
            _add_picks(state, _picked_by(func.value, named))
        elif kind is cst.Call and type(node.func) is cst.Subscript:
            _add_picks(state, _picked_by(node.func, named))
        elif kind in (cst.Attribute, cst.Subscript) and id(node) not in skip:
            root, _ = _field(node, named)
            if root is not None:  # the outermost access: its inner nodes are the same read
                state.note(state.reads, node, named)
                skip.update(_chain(node))
    return state


def _lazy_stores(method: cst.FunctionDef) -> set[int]:
    """Stores under an ``if`` that tests the same field: ``if self.w is None: self.w = ...``, ``if not
    hasattr(self, "w"): self.w = ...`` -- a value built on first use and kept, not one iteration's
    output for the next."""
    out: set[int] = set()
    for node in preorder(method.body):
        if type(node) is not cst.If:
            continue
        tested = {n.attr.value for n in preorder(node.test) if type(n) is cst.Attribute
                  and type(n.value) is cst.Name and n.value.value == "self"}
        tested |= {n.args[1].value.value.strip("'\"") for n in preorder(node.test) if type(n) is cst.Call
                   and type(n.func) is cst.Name and n.func.value == "hasattr" and len(n.args) == 2
                   and type(n.args[1].value) is cst.SimpleString}
        if not tested:
            continue
        for inner in preorder(node.body):
            if type(inner) in (cst.AssignTarget, cst.AnnAssign) and _field(inner.target, set())[0] in tested:
                out.add(id(inner))
    return out


def _counts(node: cst.AugAssign) -> bool:
    """``self.at += 1``, ``self.step -= n``: a counter advanced by a number, not a value the step
    produced (issue 19's carry is the step's output: a position alone, as in a local loop, is none)."""
    return type(node.operator) in (cst.AddAssign, cst.SubtractAssign) \
        and type(node.value) in (cst.Integer, cst.Name, cst.Attribute)


def _chain(node: cst.BaseExpression) -> set[int]:
    """The nodes of an access's own chain (``self.f[i].x``: not what its indices read)."""
    out: set[int] = set()
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        out.add(id(node))
        node = node.value
    return out


def _add_picks(state: MethodState, params: set[str]) -> None:
    for param in params:
        state.picks.add(param)
        if param in state.params:
            state.picks.add(state.params.index(param))


def class_states(methods: dict[str, cst.FunctionDef], wanted: set[str]) -> dict[str, MethodState]:
    """``wanted`` methods' fields, with those of the ``self`` methods they call at any depth (whose
    accesses count as whole fields: what those methods are passed is not followed)."""
    own: dict[str, MethodState] = {}
    stack = list(wanted)
    while stack:
        name = stack.pop()
        if name in own or name not in methods:
            continue
        own[name] = method_state(methods[name])
        stack.extend(own[name].calls)
    out: dict[str, MethodState] = {}
    for name in wanted & own.keys():
        mine = own[name]
        state = MethodState({k: set(v) for k, v in mine.reads.items()}, {k: set(v) for k, v in mine.stores.items()},
                            mine.picks, mine.calls, mine.params)
        seen, stack = {name}, list(mine.calls)
        while stack:
            callee = stack.pop()
            if callee in seen or callee not in own:
                continue
            seen.add(callee)
            for table, theirs in ((state.reads, own[callee].reads), (state.stores, own[callee].stores)):
                for key in theirs:
                    table.setdefault(key, set()).add(frozenset())
            stack.extend(own[callee].calls)
        out[name] = state
    return out


def _across(accesses: dict[str, set[Access]], given: set[str]) -> set[str]:
    """The fields some access reaches beyond the element the loop index picks: an access indexed by
    a parameter given the loop's target (``self.hidden[i]`` in the loop over ``i``) touches this
    iteration's element, and the next iteration another (see :func:`.loopnames.own_element`)."""
    return {key for key, seen in accesses.items() if any(not access & given for access in seen)}


@dataclass
class FieldLoop:
    """A loop whose ``self.m()`` calls may carry state through fields, decided when the class ends."""

    func: object  # the :class:`.facts.FunctionInfo` holding the loop
    loop_id: int
    where: tuple
    #: (callee expression, method name, the argument slots -- positions and keywords -- given a loop target)
    calls: list[tuple[tuple, str, frozenset]]
    stores: set[str]  # fields the loop body stores itself


def carrying_calls(loop: FieldLoop, states: dict[str, MethodState]) -> list[tuple]:
    """The calls of ``loop`` that read a field the body stores, unless the loop index picks their callee."""
    stored = set(loop.stores)
    for _, method, slots in loop.calls:
        if method in states:
            stored |= _across(states[method].stores, _given(states[method], slots))
    out: list[tuple] = []
    for expr, method, slots in loop.calls:
        state = states.get(method)
        if state is None or slots & state.picks or expr in out:
            continue
        if _across(state.reads, _given(state, slots)) & stored:
            out.append(expr)
    return out


def _given(state: MethodState, slots: frozenset) -> set[str]:
    """The parameters of the method that receive the loop's target."""
    return {state.params[s] if type(s) is int else s for s in slots
            if type(s) is not int or s < len(state.params)}


def resolve_field_loops(fields: list[FieldLoop], methods: dict[str, cst.FunctionDef]) -> None:
    """At the end of the class body: records each loop's carrying calls (:func:`carrying_calls`)."""
    states = class_states(methods, {m for f in fields for _, m, _ in f.calls})
    for loop in fields:
        for expr in carrying_calls(loop, states):
            add_loop_call(loop.func, loop.loop_id, loop.where, expr, fields=True)


def add_loop_call(func: "FunctionInfo", loop_id: int, where: tuple, expr: tuple, fields: bool = False) -> None:
    """Records ``expr`` as a call that carries state round the loop ``loop_id`` of ``func``;
    ``fields``: through ``self`` fields alone (weaker evidence, see :meth:`.entries.Discovery.token_loops`)."""
    loop = next((loop for loop in func.loops if loop.id == loop_id), None)
    if loop is None:
        loop = LoopInfo(loop_id, where, [])
        func.loops.append(loop)
    if expr not in loop.exprs:
        loop.exprs.append(expr)
        if fields:
            loop.fields.append(expr)
    elif not fields and expr in loop.fields:
        loop.fields.remove(expr)


def target_slots(call: cst.Call, targets: set[str]) -> frozenset:
    """The argument slots (positions, keywords) of ``call`` given one of the loop's targets bare."""
    slots: set[int | str] = set()
    for pos, arg in enumerate(call.args):
        if type(arg.value) is cst.Name and arg.value.value in targets and not arg.star:
            slots.add(arg.keyword.value if arg.keyword is not None else pos)
    return frozenset(slots)
