"""``x = torch.cat([x, new])``: a tensor that grows by one step's worth every step.

The KV cache of a dynamic cache (``self.keys = torch.cat([self.keys, k], dim=-2)``), the ids of a
generate loop (``input_ids = torch.cat([input_ids, next_ids[:, None]], -1)``): every step copies
the whole tensor into a new, larger allocation, and its shape changes every step, which a
captured graph cannot follow. Reported when the assignment's target is itself the first of the
concatenated tensors, in either arm of a conditional expression (the same name, ``self`` attribute,
constant-key item -- a string or an integer,
``segments[-1]`` -- or item under the same name, ``cache[module]``): it grows at its end. Concatenating activations into a new name, or prepending (``x = cat([prefix, x])``, done
once), is an ordinary op.

Bounded tensors are not growing ones:

- an attribute its class also consumes from the front (``self.free = self.free[n:]``, a free
  list handing out pages; ``self.ctx = self.ctx[:, 1:]`` right after appending, a sliding window)
  is a queue or a window, as long as what goes in comes out (decided when the class ends);
- a local name bound, in the same loop, to the tail of another tensor (``pos = ids[:, -k:]``,
  then ``pos = torch.cat([pos, more])``) or to a window of it at constant indices and bounds
  (``row = logits[0, 0, :VOCAB]``, then ``row = torch.hstack((row, eos_logit))``) is a small
  per-step temporary: it is rebuilt every call from a fixed-size window, not carried over and grown;
- a tensor concatenated with nothing but itself (``cos = torch.cat([cos, cos], dim=-1)``, the
  rotate-half layout of rotary tables) is duplicated, not appended to.

A local concatenated onto itself and never returned still counts: what it extends is usually the
caller's growing tensor (a mask, the ids), copied whole every step.

In the host step between replays only a local carried round a loop of its function grows
every step (``seq = ids`` before the step loop, ``seq = torch.cat([seq, tok])`` in it: flag
"loop-carried", the rule's ``host_carried_only``): an attribute grown there is the host's
per-request bookkeeping (a request's token history, usually in host memory), and a local joined
once per call (two halves of a batch, two codebooks) is an ordinary op.

A cache trimmed from its end (``self.keys = self.keys[..., :n, :]``, a rollback) still grows.

Inside captured code a local the function bound itself (``out = attn(x)`` then ``out =
torch.cat([out, mlp])``, or an accumulation over a loop of the call) grows nothing: the capture
fixes its shapes and no replay carries it over to the next. Such a report carries the flag
"call-local", and the rule (``in_graph_locals: false``) skips it in captured code; a parameter
(the caller's tensor) or an attribute concatenated onto itself there still grows.

A parameter's state grown into another name and handed back in the return value (a "present"
cache: ``k = torch.cat([past[0], k]); return out, (k, v)``) grows too, and a tensor split and
joined again (partial rotary: ``q = torch.cat((rope(q_rot), q_pass))``) does not
(:mod:`graphlint.static.grownstate`). The caller's tensor joined onto itself and returned (``x =
torch.cat([x, pad]); return x``), or a join of it returned (``return torch.cat((mems[:, -n:], new))``),
grows only where a caller's step loop passes the result back in (``mems = update(h, mems)``): the
linker decides per call site (:mod:`graphlint.static.carriedparams`); stored on a field, it grows.

A join that stays on the host (``accepted = torch.cat([accepted, tok[None]])`` with ``accepted``
made with ``device="cpu"``, or ``x = torch.cat((x, pad))`` with ``pad`` a factory given no device:
:func:`.pageable.host_tensor`) is host bookkeeping -- a verifier's accepted ids, a draft's ids padded
with mask tokens -- no device allocation and nothing a graph records.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.carriedparams import FLAG, STRICT
from graphlint.static.grownlists import APPENDS, grown_field, grown_list
from graphlint.static.grownstate import GrownState
from graphlint.static.joins import CONCATS
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.loopnames import names_read
from graphlint.static.names import dotted_name, resolve
from graphlint.static.pageable import host_tensor
from graphlint.static.steplocals import StepLocals

#: pads: ``mask = F.pad(mask, (0, 1))`` grows ``mask`` by a column as ``torch.cat`` would
PADS = frozenset(("torch.nn.functional.pad", "torch.constant_pad_nd"))
#: methods whose result is the concatenation itself, as far as growing goes: a copy, a cast of its
#: dtype or device (``torch.cat((ids, new)).to(torch.long)`` grows ``ids`` all the same)
KEEPS = frozenset(("detach", "contiguous", "clone", "long", "int", "float", "half", "bfloat16", "double", "bool"))
#: the same, with arguments: ``.to(dtype)``, ``.to(device)``, ``.type(dtype)``
KEEPS_WITH_ARGS = frozenset(("to", "type"))


def same_place(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``x`` and ``x``, ``self.k`` and ``self.k``, ``cache["k"]`` and ``cache["k"]``: one storage place."""
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        return a.value == b.value
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        return a.attr.value == b.attr.value and same_place(a.value, b.value)
    if isinstance(a, cst.Subscript) and isinstance(b, cst.Subscript):  # ``kwargs["mask"]``, ``cache[module]``:
        keys = [(x.slice, y.slice) for x, y in zip(a.slice, b.slice)]  # one constant key, or one name's entry
        return len(a.slice) == len(b.slice) and same_place(a.value, b.value) and all(
            isinstance(x, cst.Index) and isinstance(y, cst.Index) and _same_key(x.value, y.value) for x, y in keys)
    return False


def _same_key(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """``"k"`` and ``"k"``, ``name`` and ``name``, ``-1`` and ``-1`` (the list's current segment: ``segs[-1] =
    torch.cat([segs[-1], tok])``)."""
    if isinstance(a, cst.UnaryOperation) and isinstance(b, cst.UnaryOperation):
        return isinstance(a.operator, cst.Minus) and isinstance(b.operator, cst.Minus) \
            and _same_key(a.expression, b.expression) and isinstance(a.expression, cst.Integer)
    return type(a) is type(b) and isinstance(a, (cst.SimpleString, cst.Name, cst.Integer)) and a.value == b.value


def _negative(node: cst.BaseExpression | None) -> bool:
    """``-k``, ``-k - 1``, ``-(n + 1)``: counted from the end."""
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, cst.Minus)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        return _negative(node.left)
    return False


def _lower_bounds(node: cst.Subscript) -> list[cst.BaseExpression]:
    return [el.slice.lower for el in node.slice if isinstance(el.slice, cst.Slice) and el.slice.lower is not None]


def front_consumed(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """``x = x[n:]`` / ``x = x[:, 1:]`` / ``x = x[..., -w:]``: drops the front of itself."""
    if not isinstance(value, cst.Subscript) or not same_place(target, value.value):
        return False
    return any(not (isinstance(low, cst.Integer) and low.evaluated_value == 0) for low in _lower_bounds(value))


def tail_window(value: cst.BaseExpression) -> bool:
    """``y[:, -k:]``, ``y[..., -k - 1:-1]``: a fixed number of elements from the end of ``y``."""
    return isinstance(value, cst.Subscript) and any(_negative(low) for low in _lower_bounds(value))


def constant_window(target: cst.BaseExpression, value: cst.BaseExpression, ctx: MatchContext) -> bool:
    """``logits[0, 0, :VOCAB]``: a window of another tensor at constant indices and constant slice
    bounds (literals, module constants) -- the same size every iteration, rebuilt, never carried."""
    if not isinstance(value, cst.Subscript) or same_place(target, value.value):
        return False
    for element in value.slice:
        part = element.slice
        if isinstance(part, cst.Index):
            if not _constant(part.value, ctx):
                return False
        elif part.step is not None or part.upper is None or not _constant(part.upper, ctx) \
                or (part.lower is not None and not _constant(part.lower, ctx)):
            return False
    return True


def fixed_cut(node: cst.BaseExpression, ctx: MatchContext) -> bool:
    """``tokens[:, :1]``, ``x[..., 2:4]``: a slice of constant bounds, as long every step whatever
    ``tokens`` holds -- joined onto, it rebuilds a tensor of one size, it grows nothing."""
    return isinstance(node, cst.Subscript) and any(
        isinstance(el.slice, cst.Slice) and el.slice.step is None and el.slice.upper is not None
        and _constant(el.slice.upper, ctx) and (el.slice.lower is None or _constant(el.slice.lower, ctx))
        for el in node.slice)


def _constant(node: cst.BaseExpression, ctx: MatchContext) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer) or (isinstance(node, cst.Name) and ctx.oracle.is_module_constant(node))


#: what each name of ``a, b = f()`` is bound to here: one node built once (a node's validation is
#: costly, and nothing keeps it)
_UNPACKED = cst.Element(cst.Name("_"))


class GrowingConcat(Matcher):
    kind = "growing-concat"
    node_types = ("Assign", "AugAssign", "Return", "Expr")

    def setup(self, params: dict[str, Any]) -> None:
        self.callees = CONCATS
        self.scope: tuple[str, str] = ("", "")
        self.windows: dict[str, int] = {}  # local name -> loop depth where it was bound to a tail window
        self.bound: set[str] = set()  # local names an assignment of this function bound
        self.handed: set[str] = set()  # parameters rebound from themselves (``k = F.pad(k, ...)``)
        self.handed_raws: dict[int, str] = {}  # id of a report of a parameter joined onto itself -> the parameter
        self.depth: dict[str, int] = {}  # local name -> loop depth of its latest binding
        self.outer: dict[str, int] = {}  # local name -> the shallowest loop depth it is bound at
        self.consumed: dict[str, set[str]] = {}  # class -> attributes it consumes from the front
        self.pending: dict[str, list[tuple[str, Any]]] = {}  # class -> (attribute, deferred report)
        self.state = GrownState()  # a parameter's state grown and handed back, a tensor split and rejoined
        self.steps = StepLocals()  # locals holding this step's activations

    def visit(self, node: cst.Assign | cst.AugAssign | cst.Return | cst.Expr, ctx: MatchContext) -> None:
        if self.scope != (ctx.class_name, ctx.function_name):
            self.scope, self.windows, self.bound, self.depth = (ctx.class_name, ctx.function_name), {}, set(), {}
            self.outer, self.handed, self.handed_raws = {}, set(), {}
            self.state.reset()
            self.steps.reset()
        if type(node) is cst.Expr:  # ``caches.append((k, v))``
            call = node.value
            if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value in APPENDS \
                    and call.args and call.args[0].keyword is None:
                self.state.appended(call.func.value, call.args[0].value)
            return
        if type(node) is cst.Return:
            for raw in self.state.returned(node.value):
                if raw is not None and id(raw) in self.handed_raws:  # the caller's tensor, joined and handed back
                    raw.flags = raw.flags | {FLAG + self.handed_raws[id(raw)]}
                ctx.emit(raw)
            self.returned_join(node.value, ctx)
            return
        if type(node) is cst.AugAssign:
            self.state.augment(node.target, node.value)
            return
        value = self.grown_arm(node.value, node.targets, ctx)
        first = self.concat_first(value, ctx)
        params = ctx.oracle.fn.params
        grown = None
        padded = self.pad_first(value, ctx) if first is None else None
        if first is None:
            self.joins_list(value, ctx)
        for target in node.targets:
            if padded is not None and same_place(target.target, padded):
                if self.carried(target.target, ctx):  # padded onto itself round a loop: a copy one step larger
                    self.grows(target.target, value, ctx, "F.pad")
                break
            if first is not None and same_place(target.target, first):  # appended to itself; a prefix is put once
                if not self.duplicated(value) and not self.state.rejoined(target.target, self.parts(value)) \
                        and not host_tensor(node.value, ctx.oracle) and not self.activation(target.target, ctx):
                    if self.handed_in(target.target, ctx):  # emitted if handed back or stored
                        raw = self.grows(target.target, value, ctx, handed=True)
                        grown = [raw] if raw is not None else None
                        if raw is not None:  # returned: grows where a step loop passes it back (not stored)
                            self.handed_raws[id(raw)] = target.target.value
                    else:
                        self.grows(target.target, value, ctx)
                break
        else:
            if first is not None and len(node.targets) == 1 and self.state.is_state(first, params) \
                    and not fixed_cut(first, ctx):
                raw = ctx.defer(self.rule, value, "torch.cat")  # emitted if the function hands it back
                grown = [raw] if raw is not None else None
        for target in node.targets:
            self.note_binding(target.target, value, ctx)
            self.state.bind(target.target, value, params, grown, tuple(getattr(ctx, "path", ())))
            self.steps.bind(target.target, node.value, ctx.loop_depth)
            if self.state.kept_on(target.target, params):  # ``self.k = k``, ``past.k = k``: carried on
                for raw in self.state.returned(node.value):
                    ctx.emit(raw)

    def returned_join(self, value: cst.BaseExpression | None, ctx: MatchContext) -> None:
        """``return torch.cat((mems[:, :, -n:], new))`` (or an element or arm of what is returned) onto a
        parameter's state: it grows only where a caller's step loop passes the result back in, which the
        linker decides per call site (flag ``carried-only:p``, :mod:`graphlint.static.carriedparams`)."""
        if value is None:
            return
        if type(value) in (cst.Tuple, cst.IfExp):
            for part in (value.body, value.orelse) if type(value) is cst.IfExp else (el.value for el in value.elements):
                self.returned_join(part, ctx)
            return
        join = self.grown_arm(value, (), ctx)
        first = self.concat_first(join, ctx)
        param = self.state.param_of(first, ctx.oracle.fn.params) if first is not None else None
        if param is None or fixed_cut(first, ctx) or self.duplicated(join) or host_tensor(value, ctx.oracle):
            return
        raw = ctx.defer(self.rule, join, "torch.cat")
        if raw is not None:
            raw.flags = raw.flags | {STRICT + param}
        ctx.emit(raw)

    def joins_list(self, value: cst.BaseExpression, ctx: MatchContext) -> None:
        """``ids = torch.cat(generated)`` (either arm of a conditional) of the list the step loop appends
        to: a copy one step longer every step (:mod:`graphlint.static.grownlists`)."""
        for arm in (value.body, value.orelse) if type(value) is cst.IfExp else (value,):
            loops = getattr(ctx, "loop_nodes", [])
            if type(arm) is cst.Call and resolve(arm.func, ctx.imports) in self.callees \
                    and (grown_list(arm, loops, self.depth, ctx.loop_depth) or grown_field(arm, loops)):
                raw = ctx.defer(self.rule, arm, "torch.cat")
                if raw is not None:
                    raw.flags = raw.flags | {"loop-carried"}
                ctx.emit(raw)

    def handed_in(self, target: cst.BaseExpression, ctx: MatchContext) -> bool:
        """``k = torch.cat((k, extra))`` on the caller's ``k`` (a parameter), not round a loop of
        this function: it grows only what the function hands back or stores (:mod:`..grownstate`);
        joined and consumed (``k = cat((k, k_norm))`` fed to attention), it is this call's operand. A loop
        over the module's layers (``for i, block in enumerate(self.blocks)``: a U-Net joining each skip
        onto its input) runs as often every call: it grows nothing from one step to the next either."""
        return type(target) is cst.Name and self.is_handed(target.value, ctx) \
            and (self.outer.get(target.value, 0) >= ctx.loop_depth or ctx.module_loops >= ctx.loop_depth)

    def is_handed(self, name: str, ctx: MatchContext) -> bool:
        """A parameter not rebound yet, or rebound only from itself (``k = repeat(k, ...)``)."""
        return name in self.handed or name not in self.bound and name in ctx.oracle.fn.params

    def activation(self, target: cst.BaseExpression, ctx: MatchContext) -> bool:
        """A local this call computed in the loop it is joined in (:mod:`graphlint.static.steplocals`):
        ``query = torch.cat([query, txt_query])`` joins two of this step's tensors, nothing grows."""
        return type(target) is cst.Name and self.steps.is_fresh(target.value, ctx.loop_depth)

    def grown_arm(self, value: cst.BaseExpression, targets, ctx: MatchContext) -> cst.BaseExpression:
        """What may grow the target: ``torch.cat([x, new]).detach()`` grows ``x`` as well, and so does an
        arm of ``x = torch.cat([x, new]) if x.ndim > 3 else new`` (the other arm starts the cache)."""
        while type(value) is cst.Call and type(value.func) is cst.Attribute and (
                value.func.attr.value in KEEPS_WITH_ARGS or (not value.args and value.func.attr.value in KEEPS)):
            value = value.func.value
        if type(value) is not cst.IfExp:
            return value
        for arm in (value.body, value.orelse):
            arm = self.grown_arm(arm, targets, ctx)
            first = self.concat_first(arm, ctx)
            if first is not None and any(same_place(t.target, first) for t in targets):
                return arm
        return value

    @staticmethod
    def parts(value: cst.Call) -> list[cst.BaseExpression]:
        return [el.value for el in value.args[0].value.elements]

    @staticmethod
    def duplicated(value: cst.Call) -> bool:
        """``torch.cat([x, x])``: every part is the first one."""
        parts = value.args[0].value.elements
        return len(parts) > 1 and all(same_place(p.value, parts[0].value) for p in parts)

    def concat_first(self, value: cst.BaseExpression, ctx: MatchContext) -> cst.BaseExpression | None:
        """The first tensor of ``torch.cat([first, ...])``, else None."""
        if type(value) is not cst.Call or not value.args or value.args[0].keyword is not None:
            return None
        parts = value.args[0].value
        if type(parts) not in (cst.List, cst.Tuple) or not parts.elements:
            return None
        return parts.elements[0].value if resolve(value.func, ctx.imports) in self.callees else None

    def carried(self, target: cst.BaseExpression, ctx: MatchContext) -> bool:
        """A local bound outside the loop it is padded in (a parameter, or bound before the loop, if
        also in it): padded again every iteration. Padded once in a call (``x = F.pad(x, (0, r))`` to a
        multiple), or after being rebuilt in the same loop, is alignment, not growth."""
        return type(target) is cst.Name and ctx.loop_depth > 0 and self.outer.get(target.value, 0) < ctx.loop_depth

    @staticmethod
    def pad_first(value: cst.BaseExpression, ctx: MatchContext) -> cst.BaseExpression | None:
        """The tensor of ``F.pad(x, pad)`` (positional), else None."""
        if type(value) is not cst.Call or len(value.args) < 2 or value.args[0].keyword is not None \
                or value.args[0].star:
            return None
        return value.args[0].value if resolve(value.func, ctx.imports) in PADS else None

    def note_binding(self, target: cst.BaseExpression, value: cst.BaseExpression, ctx: MatchContext) -> None:
        if type(target) in (cst.Tuple, cst.List):  # ``pages, self.free = self.free[:n], self.free[n:]``
            values = list(value.elements) if type(value) in (cst.Tuple, cst.List) else []
            if len(values) != len(target.elements):
                values = [_UNPACKED] * len(target.elements)  # one value unpacked: no window
            for t, v in zip(target.elements, values):
                self.note_binding(t.value, v.value, ctx)
        elif type(target) is cst.Name:
            first = 0 if target.value not in self.bound and target.value in ctx.oracle.fn.params else ctx.loop_depth
            if self.is_handed(target.value, ctx) and target.value in names_read(value):
                self.handed.add(target.value)
            else:
                self.handed.discard(target.value)
            self.bound.add(target.value)
            self.depth[target.value] = ctx.loop_depth
            self.outer[target.value] = min(self.outer.get(target.value, first), first)  # a parameter: at entry
            if tail_window(value) or constant_window(target, value, ctx):
                self.windows[target.value] = ctx.loop_depth
            else:
                self.windows.pop(target.value, None)
        elif ctx.class_name and front_consumed(target, value):
            self.consumed.setdefault(ctx.class_name, set()).add(dotted_name(target) or "")

    def grows(self, target: cst.BaseExpression, value: cst.Call, ctx: MatchContext, op: str = "torch.cat",
              handed: bool = False) -> Any:
        """Report the growth (or, ``handed``, return the report for when the value is handed on)."""
        if isinstance(target, cst.Name):
            if self.windows.get(target.value, -1) != ctx.loop_depth:  # a window rebuilt in this loop
                raw = ctx.defer(self.rule, value, op)
                if raw is not None and target.value in self.bound:
                    raw.flags = raw.flags | {"call-local"}
                if raw is not None and self.depth.get(target.value, 0) < ctx.loop_depth:
                    raw.flags = raw.flags | {"loop-carried"}  # bound outside this loop: grows every iteration
                if handed:
                    return raw
                ctx.emit(raw)
            return None
        attr = dotted_name(target)
        if not ctx.class_name or attr is None:
            ctx.report(self.rule, value, op)
            return
        self.pending.setdefault(ctx.class_name, []).append((attr, ctx.defer(self.rule, value, op)))

    def end_class(self, ctx: MatchContext) -> None:
        consumed = self.consumed.pop(ctx.class_name, set())
        for attr, pending in self.pending.pop(ctx.class_name, ()):
            if attr not in consumed:
                ctx.emit(pending)
