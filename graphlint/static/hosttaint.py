"""Which host values a per-step position or a device read-back flows into, one function at a time.

Its own module because it is a concern of its own beside "is this a tensor": the position rules
(``params.POSITION_NAMES``) and the read-back rules (:mod:`.readbacks`) both ask which Python
names were computed from such a value, through assignments, ``+=`` and comprehensions.
:class:`HostTaint` is a base of ``tensors.TensorOracle``: it reads the oracle's ``fn`` facts
(``positions``, ``readbacks``), ``readback_seen`` and ``is_tensor`` (a tensor is never tainted); and
which module constants hold Python data (:meth:`HostTaint.is_module_constant`, from ``module_fn``).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import bound_names, children, constant_name, preorder
from graphlint.static.fixedcounters import derived
from graphlint.static.graphconsts import note_roots as note_position_roots, unknown_root, widen_roots
from graphlint.static.hostparams import note_roots
from graphlint.static.looppositions import enter_step_loop
from graphlint.static.readbacks import is_readback


class HostTaint:
    """The taint half of the tensor oracle (see the module's docstring)."""

    def is_module_constant(self, node: cst.Name) -> bool:
        """``RAS_HIGH_TEMP``: a SCREAMING_SNAKE_CASE name the module above binds to Python data and the
        function leaves alone -- a constant, host data wherever it is read (``torch.tensor(RAS_HIGH_TEMP,
        device=t.device)`` uploads it every call)."""
        module, fn = self.module_fn, self.fn
        return fn is not module and constant_name(node) and node.value in module.hosts \
            and node.value not in module.tensors and node.value not in fn.params and node.value not in fn.tensors

    @staticmethod
    def uses(node: cst.CSTNode, names: set[str]) -> bool:
        """A name of ``names`` (``fn.positions``, ``fn.readbacks``) anywhere in ``node``."""
        if not names:
            return False
        return any(type(n) is cst.Name and n.value in names for n in preorder(node))

    def derives_from_position(self, node: cst.CSTNode) -> bool:
        """Like ``uses`` but an element fetched *by* a position (``arr[pos]``) is not one."""
        return self._derives(node, self.fn.positions, readbacks=False)

    def derives_from_readback(self, node: cst.CSTNode) -> bool:
        """A read-back call or name in ``node``; ``len()`` of one is its shape, known without a sync."""
        return self._derives(node, self.fn.readbacks, readbacks=True)

    def _derives(self, node: cst.CSTNode, names, readbacks: bool, found: set | None = None) -> bool:
        """``found``: collect every name of ``names`` it derives from instead of stopping at the first."""
        stack = [node]
        steps = not readbacks and found is None and self.step_fields()
        while stack:
            current = stack.pop()
            kind = type(current)
            if kind is cst.Name and current.value in names:
                if found is None:
                    return True
                found.add(current.value)
                continue
            if steps and kind is cst.Attribute and self.field_kind(current) == "step":
                return True  # ``self.cache.offset``: a counter another object advances (:mod:`.fieldkinds`)
            if kind is cst.Subscript:
                stack.append(current.value)
                continue
            if readbacks and kind is cst.Call:
                if is_readback(current, self):
                    return True
                if type(current.func) is cst.Name and current.func.value == "len":
                    continue
            if not readbacks and kind is cst.Call and self.gets_tensor(current):
                continue  # ``out = model(ids, start_pos=pos)``: the model's output, no position
            if not readbacks and kind is cst.IfExp:  # ``n = width if step > 0 else 1``: one of its arms, not
                stack.extend((current.body, current.orelse))  # the position its test reads
                continue
            stack.extend(children(current))
        return False

    def gets_tensor(self, call: cst.Call) -> bool:
        """A call handed a tensor computes on it: what it returns is device data made from the
        tensor (a model's logits, a layer's output), not a host value derived from the position it
        is also given -- reading it back (``logits.sum().item()``) is a sync, not host arithmetic."""
        return any(self.is_tensor(arg.value) for arg in call.args)

    def taint(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """A target computed from a position or a read-back (and not a tensor) is one too.

        Read-backs are looked for only in statements where the walker saw a read-back call
        (``readback_seen``) or once a name already holds one, so other code pays nothing.
        """
        fn = self.fn
        for names, derives, active in (
            (fn.positions, self.derives_from_position, bool(fn.positions) or self.step_fields()),
            (fn.readbacks, self.derives_from_readback, bool(fn.readbacks) or self.readback_seen),
        ):
            if not active and value is not None:
                continue
            tainted = value is not None and derives(value) and not self.is_tensor(value)
            for name in bound_names(target):  # ``cache[:, start:end] = kv`` binds nothing: ``start`` stays
                (names.add if tainted else names.discard)(name)
            if names is fn.positions and fn.fixed_counters:
                derived(self, bound_names(target), value if tainted else None)
            if names is fn.positions:  # which parameters they come from (:mod:`.graphconsts`)
                note_position_roots(self, bound_names(target), value, tainted)
        if fn.loop_positions:  # ``drafted = step_draft + 1`` (:mod:`.looppositions`)
            loops = self.loop_sources(value) if value is not None and not self.is_tensor(value) else frozenset()
            for name in bound_names(target):
                if loops:
                    fn.loop_positions[name] = loops
                else:
                    fn.loop_positions.pop(name, None)
        if fn.readbacks or fn.readback_roots:  # which parameters' reads they come from (:mod:`.hostparams`)
            note_roots(bound_names(target), value, self)

    def step_loop(self, stmt: cst.For | cst.While, loop_id: int) -> set[str]:
        """At a step loop's head: the names it advances, and its loop positions (:mod:`.looppositions`)."""
        return enter_step_loop(self, stmt, loop_id)

    def loop_sources(self, node: cst.CSTNode) -> frozenset:
        """The loops of the loop positions ``node`` derives from (:mod:`.looppositions`)."""
        found: set[str] = set()
        self._derives(node, self.fn.loop_positions, False, found)
        return frozenset().union(*(self.fn.loop_positions[n] for n in found))

    def read_back(self, name: str) -> None:
        """``tok = x.item()``: ``x`` is a tensor (what the read-back rules took it for), also in a
        later test of it (``if x == eos:`` reads it back again), until it is rebound."""
        fn = self.fn
        if name not in fn.hosts and name not in fn.lists and name != "self":
            fn.tensors.add(name)

    def bound_call(self, name: str, value: cst.BaseExpression | None) -> None:
        """``n = obj.m(...)``: ``n`` is a per-step int when the value rounds say ``m`` returns one
        (``field:...:obj.m()=step``); the spelling is asked about only once ``n`` bounds a subscript
        (:meth:`slice_names`), so that only such calls cost a fact."""
        fn = self.fn
        spelled = self.spelled(value.func) if type(value) is cst.Call and type(value.func) is cst.Attribute else None
        if spelled is None:
            if fn.calls:
                fn.calls.pop(name, None)
            return
        fn.calls[name] = spelled = spelled + "()"
        if fn.fields.get(spelled) == "step":
            fn.tensors.discard(name)
            fn.positions.add(name)
            unknown_root(fn, name)

    def slice_names(self, names) -> None:
        """Names a subscript reads: a call's result among them is asked about (:meth:`bound_call`)."""
        calls = self.fn.calls
        for name in names:
            spelled = calls.get(name)
            if spelled is not None:
                self.fn.reads.add(spelled)

    def step_fields(self) -> bool:
        """Some ``obj.f`` this function reads is a per-step int (a fact of the value rounds)."""
        fields = self.fn.fields
        return bool(fields) and "step" in fields.values()

    def taint_comprehension(self, comp: cst.CompFor | None) -> None:
        """Before the element is visited: ``[ring[p % W] for p in range(start, end)]``,
        ``[x[:c] for c in counts.tolist()]``."""
        while comp is not None:
            if not self.readback_seen and not self.fn.readbacks:
                self.readback_seen = self.derives_from_readback(comp.iter)
            if self.fn.positions or self.fn.readbacks or self.readback_seen:
                self.taint(comp.target, comp.iter)
            comp = comp.inner_for_in

    def taint_augmented(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``end += n``: the target keeps what it was and gains what the value brings."""
        if not isinstance(target, cst.Name) or self.is_tensor(value):
            self.fn.loop_positions.pop(getattr(target, "value", ""), None)  # ``acc += t``: a tensor now
            return
        if self.fn.loop_positions and target.value in self.fn.loop_positions:  # ``pos += n``: it keeps its loops
            self.fn.loop_positions[target.value] |= self.loop_sources(value)
        if self.derives_from_position(value):
            widen_roots(self, target.value, value)  # before it joins: what it held (:mod:`.graphconsts`)
            self.fn.positions.add(target.value)
        if (self.fn.readbacks or self.readback_seen) and self.derives_from_readback(value):
            self.fn.readbacks.add(target.value)
            self.fn.readback_roots.pop(target.value, None)  # what it held joins: its sources unknown
