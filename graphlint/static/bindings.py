"""What assignments tell the tensor facts: which names and attributes hold tensors, host data, pinned
memory and sub-modules.

``x = self.proj(h)``, ``self.attn = Attention(...)``, ``self.layers.append(Block())``,
``self.register_buffer("cache", t)``: a collaborator of :class:`graphlint.static.calls.CallRecorder`,
which owns it and hands it each pair an assignment binds. What a binding means for the call graph
is not recorded here: the points-to analysis reads every binding from the flow facts
(:mod:`.flows`). Sub-modules matter here only because calling one (``self.attn(x)``) is device work
whose result is a tensor.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.argkinds import passed_kind
from graphlint.static.cputensors import note_cpu_binding
from graphlint.static.facts import ClassInfo
from graphlint.static.names import dotted_name
from graphlint.static.pageable import note_pageable_binding, pageable_verdict
from graphlint.static.carried import note_carried
from graphlint.static.scalars import note_scalar_binding, number_tensor
from graphlint.static.splatkinds import note_splat_dict
from graphlint.static.statelength import note_device_cache, reads_state_length
from graphlint.static.tensornames import MODULE_CONTAINERS
from graphlint.static.tensors import TensorOracle
from graphlint.static.graphconsts import unknown_root
from graphlint.static.valuekinds import STEP, bind_returned, note_origin, set_kind

#: ``nn.Module`` methods that return the module itself
MODULE_SELF_METHODS = frozenset(("eval", "train", "to", "cuda", "cpu", "half", "float", "bfloat16", "double",
                                 "requires_grad_", "to_empty", "share_memory"))
#: annotations of containers whose element type is what indexing them gives
CONTAINERS = frozenset(("list", "sequence", "mutablesequence", "tuple", "iterable", "collection", "modulelist"))


def annotates_object(node: cst.BaseExpression) -> bool:
    """``model: DSV4Model``, ``Optional["Cache"]``, ``layers: list[Layer] | None``: a class (or a
    container of one) that the parameter's value is an instance of."""
    if type(node) is cst.SimpleString:
        text = node.raw_value
        return text.isidentifier() and text[:1].isupper()
    if type(node) is cst.BinaryOperation:
        return annotates_object(node.left) or annotates_object(node.right)
    if type(node) is cst.Subscript:
        wrapper = (dotted_name(node.value) or "").rsplit(".", 1)[-1]
        if wrapper not in ("Optional", "Union") and wrapper.lower() not in CONTAINERS:
            return False
        return any(type(el.slice) is cst.Index and annotates_object(el.slice.value) for el in node.slice)
    name = dotted_name(node)
    return name is not None and name.rsplit(".", 1)[-1][:1].isupper()


def annotated_class(node: cst.BaseExpression) -> str | None:
    """The one class a plain annotation names: ``BlockWeights``, ``"BlockWeights"``, ``mod.Block``
    -> its last name; a container, a union or a lower-case name -> None."""
    if type(node) is cst.SimpleString:
        text = node.raw_value
        return text if text.isidentifier() and text[:1].isupper() else None
    name = dotted_name(node) if type(node) in (cst.Name, cst.Attribute) else None
    last = name.rsplit(".", 1)[-1] if name else ""
    return last if last[:1].isupper() else None


class BindingRecorder:
    """Writes what one binding says into the function's tensor facts (``oracle.fn``) and the
    enclosing class's (``oracle.cls``, for the class on top of the walker's ``class_stack``)."""

    def __init__(self, oracle: TensorOracle, class_stack: list[ClassInfo]) -> None:
        self.oracle, self.class_stack = oracle, class_stack

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression, bound: set[str]) -> None:
        """One pair of an assignment (the call recorder takes ``a, b = x, y`` apart); ``bound``: the
        function's ``FunctionInfo.bound_calls``."""
        oracle = self.oracle
        number = type(target) is cst.Name and number_tensor(value, oracle)  # before its names are rebound
        oracle.bind(target, value)
        oracle.taint(target, value)
        note_device_cache(target, value, oracle)
        if type(target) is cst.Name and reads_state_length(value, oracle):
            oracle.fn.positions.add(target.value)  # a cache's length: a position (static.statelength)
            oracle.fn.tensors.discard(target.value)  # not the receiver's tensor-ness (``past_key_values=None``)
        pageable = pageable_verdict(target, value, oracle)  # before the host facts of its names change
        note_cpu_binding(target, value, oracle)
        note_scalar_binding(target, value, oracle, number)
        note_pageable_binding(target, value, oracle, pageable)
        note_origin(target, value, oracle, bound)
        note_carried(target, value, oracle)
        note_splat_dict(target, value, oracle, passed_kind)
        if oracle.returns:
            bind_returned(target, value, oracle)
        if oracle.fn.fields and type(value) is cst.Attribute:
            set_kind(target, oracle.field_kind(value), oracle)  # ``start_pos = inp.pos`` (static.fieldkinds)
        if type(target) is cst.Name:
            oracle.bound_call(target.value, value)  # ``n = cache.usable_length(...)``: a per-step int?
            if target.value in oracle.fn.positions and target.value not in oracle.fn.position_roots:
                unknown_root(oracle.fn, target.value)  # a position from a return or a field (:mod:`.graphconsts`)
        if type(target) is cst.Name:
            if self.builds_module(value):  # ``layers = [Block() ...]``, ``attn = Attention()``
                oracle.fn.modules.add(target.value)
            else:
                oracle.fn.modules.discard(target.value)
        attr = oracle.is_self_attr(target)
        if attr is not None and self.class_stack and self.builds_module(value):
            self.add_submodule(attr)

    def builds_module(self, value: cst.BaseExpression) -> bool:
        """``Attention(...)``, ``nn.ModuleList([Block(...) for _ in ...])``, ``MLP() if dense else MoE()``,
        a local holding one, a parameter annotated with a class: a module (or another object whose
        call runs its ``forward``/``__call__``), never a tensor."""
        if type(value) is cst.Name:
            return value.value in self.oracle.fn.modules
        if type(value) in (cst.ListComp, cst.GeneratorExp, cst.SetComp):
            return self.builds_module(value.elt)
        if type(value) is cst.DictComp:
            return self.builds_module(value.value)
        if type(value) is cst.IfExp:
            return self.builds_module(value.body) or self.builds_module(value.orelse)
        if type(value) in (cst.List, cst.Tuple, cst.Set):
            return any(self.builds_module(el.value) for el in value.elements)
        if type(value) is cst.Dict:
            return any(type(el) is cst.DictElement and self.builds_module(el.value) for el in value.elements)
        if type(value) is not cst.Call:
            return False
        last = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
        if last in MODULE_CONTAINERS:
            return True
        if last in MODULE_SELF_METHODS and type(value.func) is cst.Attribute:
            return self.builds_module(value.func.value)  # ``model = model.eval()``
        return last[:1].isupper() and not self.oracle.is_tensor(value)

    def add_submodule(self, attr: str) -> None:
        if self.oracle.cls is not None:
            self.oracle.cls.module_attrs.add(attr)

    def record_module_call(self, call: cst.Call) -> None:
        """``self.layers.append(Block())`` and ``self.register_buffer("cache", t)``."""
        func = call.func
        if not isinstance(func, cst.Attribute) or not self.class_stack or self.oracle.cls is None:
            return
        method = func.attr.value
        if method == "register_buffer" and self.oracle.is_self_attr(func) is not None:
            if call.args and isinstance(call.args[0].value, cst.SimpleString):
                self.oracle.cls.tensor_attrs.add(call.args[0].value.raw_value)
                self.oracle.cls.weight_attrs.add(call.args[0].value.raw_value)
        elif method in ("append", "extend") and call.args and self.builds_module(call.args[0].value):
            attr = self.oracle.is_self_attr(func.value)
            if attr is not None:
                self.add_submodule(attr)
            if isinstance(func.value, cst.Name):
                self.oracle.fn.modules.add(func.value.value)
