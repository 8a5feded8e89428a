"""A light, flow-ordered guess of which expressions are tensors.

Precision over recall: an expression is a tensor only when we can say why --

- a parameter annotated ``Tensor``/``torch.Tensor`` (or ``Optional``/``|`` of it);
- an unannotated parameter without a non-None default of a ``forward`` method or of a function
  matching the hot-name patterns (``__call__`` excepted: outside nn.Module it takes anything),
  unless its name looks like a host value (``pos``, ``*_len``, ``n_*``, ``is_*``... see
  ``params.HOST_PARAM_NAMES``);
- a name or ``self.attr`` last assigned from a tensor expression (``self.attr`` also from
  ``nn.Parameter``/``register_buffer``), in source order within the file;
- a call of a module function or ``self`` method of the same file annotated ``-> Tensor``, or of
  a function imported from another file that is (``static.crossfile``, a second summary);
- a call of ``torch.*`` / ``torch.nn.functional.*`` / ``torch.ops.*`` other than the host-valued
  ones (``torch.cuda.*``, ``torch.is_*``, ``torch.device``...), a call of a sub-module
  (``self.attn(x)``), a tensor method that returns a tensor, arithmetic, indexing or a
  comparison involving a tensor.

Host values: ``.shape``, ``.size()``, ``.dim()``, ``.numel()``, ``len()``, ``.dtype``, ``.device``,
``x is None``, torch internals (``torch._C.*``), private and ``is_*``/``has_*`` methods, and
anything we cannot explain. Facts flow in source order within one file; a tensor attribute first
assigned in a method written after its use is missed (``__init__`` normally comes first).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.acceptance import track
from graphlint.static.distchecks import draws
from graphlint.static.cstwalk import bool_literal, constant_name, none_fallback, number, operands, self_attr, shape_only
from graphlint.static.gathers import indexed_by_tensor, reduced_over_dim
from graphlint.static.hosttaint import HostTaint
from graphlint.static.listrows import listed_value
from graphlint.static.masks import compares, made_bool
from graphlint.static.names import callee_key, dotted_name, resolve
from graphlint.static.nnlayers import layer_tensors
from graphlint.static.oncebound import bound_once
from graphlint.static.placedreturns import is_placed
from graphlint.static.staging import is_pinned_value
from graphlint.static.tensorfacts import ClassFacts, FunctionFacts  # noqa: F401 (re-exported)
from graphlint.static.tensornames import (BOOL_METHODS, BOOL_TORCH_FUNCS, HOST_LIBRARIES, HOST_LITERALS, HOST_METHODS,
                                         HOST_SCALAR_CALLS, HOST_TORCH_MODULES, HOST_TORCH_NAMES, LEGACY_TENSORS,
                                         NOT_TENSOR_METHODS, NUMBER_BUILTINS, TENSOR_ATTRS)
from graphlint.static.weightargs import PARAM_CONTAINERS, is_weight


class TensorOracle(HostTaint):
    """Answers tensor questions for the function being walked."""

    def __init__(self, imports: dict[str, str]):
        self.imports = imports
        self.fn = FunctionFacts()
        self.default_device = 0  # >0: factories without a device build on it (:mod:`.defaultdevice`)
        self.module_fn = self.fn  # the module's own statements: what its constants hold (:meth:`is_module_constant`)
        self.cls: ClassFacts | None = None
        self.tensor_functions: set[str] = set()  # module functions of this file annotated ``-> Tensor``
        self.host_builders: dict[str, int] = {}  # module functions taking ``device=None`` (static.hostbuilders)
        self.arith_helpers: dict[str, int] = {}  # module functions returning arithmetic of their parameters (static.scalars)
        self.readback_seen = False  # the walker saw a read-back call in the current statement
        self.returns: dict[str, object] = {}  # callee key -> a kind or a tuple of kinds (static.valuekinds)
        self.cls_name = ""  # the qualname of the class being walked: ``self.m`` is known per class

    def returned(self, call: cst.Call):
        """What a call of a function whose returns are known gives (static.valuekinds), else None."""
        key = callee_key(call.func, self.cls_name) if self.returns else None
        return self.returns.get(key) if key is not None else None

    # -- queries -----------------------------------------------------------------------
    def torch_call_kind(self, func: cst.BaseExpression) -> str | None:
        """"tensor" / "bool" for tensor-returning torch functions, else None."""
        name = resolve(func, self.imports)
        if name is None or not name.startswith("torch."):
            return None
        parts = name.split(".")
        last = parts[-1]
        if name.startswith(("torch.nn.functional.", "torch.ops.")) or name in ("torch.nn.Parameter", "torch.nn.Buffer"):
            return "tensor"
        if len(parts) > 2 and (parts[1] in HOST_TORCH_MODULES or parts[1] == "nn"):
            return None
        if name in LEGACY_TENSORS:  # ``torch.LongTensor(ids)``: a tensor (on the CPU: :mod:`.cputensors`)
            return "tensor"
        if any(p.startswith("_") for p in parts[1:]):
            return None  # torch internals (torch._C, torch._dynamo...): mostly host-side helpers
        if last in HOST_TORCH_NAMES or last[:1].isupper() or last.startswith(("is_", "get_", "set_", "use_")):
            return "bool" if last in BOOL_TORCH_FUNCS else None
        return "bool" if last in BOOL_TORCH_FUNCS else "tensor"

    def is_weight(self, node: cst.BaseExpression) -> bool:
        """A parameter or buffer, or a view of one (:func:`.weightargs.is_weight`)."""
        return is_weight(self, node)

    def is_host_attr(self, node: cst.BaseExpression) -> bool:
        """``self.history`` assigned Python data (a list, a dict, a number) and never a tensor."""
        attr = self.is_self_attr(node)
        cls = self.cls
        return attr is not None and cls is not None and attr in cls.host_attrs and attr not in cls.tensor_attrs

    def is_self_attr(self, node: cst.BaseExpression) -> str | None:
        return self_attr(node)

    def is_module_call(self, func: cst.BaseExpression) -> bool:
        if type(func) is cst.Subscript:
            func = func.value
        if type(func) is cst.Name:
            return func.value in self.fn.module_aliases
        attr = self.is_self_attr(func)
        return attr is not None and self.cls is not None and attr in self.cls.module_attrs

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        if type(node) is cst.Name:
            return node.value in self.fn.tensors
        if type(node) is cst.Attribute:
            attr = self.is_self_attr(node)
            if attr is not None:
                return self.cls is not None and attr in self.cls.tensor_attrs and attr not in self.fn.converted
            if self.field_kind(node) in ("tensor", "scalar", "host"):
                return True
            return node.attr.value in TENSOR_ATTRS and self.is_tensor(node.value)
        if type(node) is cst.Subscript:
            return self.is_tensor(node.value)
        if type(node) is cst.Call:
            func = node.func
            if self.torch_call_kind(func) is not None or self.is_module_call(func):
                return True
            if self.returns and ((shape := self.returned(node)) in ("tensor", "scalar", "host") or is_placed(shape)):
                return True
            if type(func) is cst.Name:
                if func.value == "sum" and node.args:  # ``sum(t)`` adds a tensor's elements on the device
                    return self.is_tensor(node.args[0].value)
                return func.value in self.tensor_functions
            if type(func) is cst.Attribute and dotted_name(func) in self.tensor_functions:
                return True  # ``ops.fused(x)`` with ``import pkg.ops as ops`` (static.crossfile)
            method = self.is_self_attr(func)
            if method is not None and self.cls is not None and method in self.cls.tensor_methods:
                return True
            if type(func) is cst.Attribute:
                method = func.attr.value
                if method in HOST_METHODS or method in NOT_TENSOR_METHODS or method.startswith(("_", "is_", "has_")):
                    return False
                return self.is_tensor(func.value) or indexed_by_tensor(node, self.is_tensor) or reduced_over_dim(node) \
                    or draws(node, self.imports)
            return False
        if type(node) is cst.BinaryOperation:
            return any(map(self.is_tensor, operands(node)))
        if type(node) is cst.UnaryOperation:
            return type(node.operator) is not cst.Not and self.is_tensor(node.expression)
        if type(node) is cst.Comparison:
            return self.is_tensor_comparison(node)
        if type(node) is cst.IfExp:
            fallback = none_fallback(node)
            if fallback is not None and fallback[0] in self.fn.presumed and fallback[0] in self.fn.params:
                return not self.is_host_value(fallback[1])  # ``self.causal if causal is None else causal``
            return self.is_tensor(node.body) or self.is_tensor(node.orelse)
        if type(node) is cst.NamedExpr:
            return self.is_tensor(node.value)
        return False

    def spelled(self, node: cst.Attribute) -> str | None:
        return field_spelling(node, self.imports, self.fn.elements)

    def field_kind(self, node: cst.Attribute) -> str:
        """What ``obj.f`` / ``self.x.f`` holds when the value rounds know ``obj``'s class and what
        its field ``f`` is given (:mod:`.fieldkinds`); the spelling is noted as asked about."""
        spelled = field_spelling(node, self.imports, self.fn.elements)
        if spelled is None:
            return ""
        self.fn.reads.add(spelled)
        return self.fn.fields.get(spelled, "")

    def is_tensor_comparison(self, node: cst.Comparison) -> bool:
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
            return False
        return self.is_tensor(node.left) or any(self.is_tensor(c.comparator) for c in node.comparisons)

    def is_bool_tensor(self, node: cst.BaseExpression) -> bool:
        """A boolean mask: a tensor comparison, ``~mask``, ``mask & other``, ``.bool()``, ``torch.isnan``..."""
        if isinstance(node, cst.Name):
            return node.value in self.fn.bools
        if isinstance(node, cst.Attribute):
            attr = self.is_self_attr(node)
            return attr is not None and self.cls is not None and attr in self.cls.bool_attrs
        if isinstance(node, cst.Comparison):
            return self.is_tensor_comparison(node)
        if isinstance(node, cst.UnaryOperation):
            return isinstance(node.operator, cst.BitInvert) and self.is_bool_tensor(node.expression)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self.is_bool_tensor(node.left) or self.is_bool_tensor(node.right)
        if isinstance(node, cst.Call):
            if self.torch_call_kind(node.func) == "bool" or made_bool(node, self.imports):
                return True
            func = node.func
            return (
                isinstance(func, cst.Attribute) and func.attr.value in BOOL_METHODS and self.is_tensor(func.value)
            )
        return False

    def is_host_data(self, node: cst.BaseExpression | None) -> bool:
        """Python data we can vouch for: literals, ``len()``/``int()``..., ``.item()``/``.size()``, ``x.shape[i]``,
        numpy/math results and methods of host data (``arr.sum()``)."""
        if type(node) in (*HOST_LITERALS, cst.Integer, cst.Float):
            return True
        if type(node) is cst.Name:
            return node.value in self.fn.hosts or node.value in self.fn.positions or self.is_module_constant(node)
        if type(node) is cst.Call:
            func = node.func
            if type(func) is cst.Name:
                if func.value in ("sum", "min", "max", "abs", "list", "tuple", "sorted"):  # of tensors, a tensor:
                    # ``sum(losses)``; ``list(prompt_tokens)`` of a ``list[int]`` is host data
                    return bool(node.args) and all(self.is_host_data(a.value) for a in node.args)
                return func.value in HOST_SCALAR_CALLS
            if (resolve(func, self.imports) or "").startswith(HOST_LIBRARIES):
                return True
            # a method of host data handed a tensor computes on it (``table.emb(where)``: a module in an
            # optional parameter): device data, as :meth:`.HostTaint.gets_tensor` says of positions
            return type(func) is cst.Attribute and (
                func.attr.value in HOST_METHODS or self.is_host_data(func.value) and not self.gets_tensor(node)
            )
        if type(node) is cst.Subscript:
            return type(node.value) is cst.Attribute and node.value.attr.value == "shape"
        if type(node) is cst.BinaryOperation:  # no operand a tensor, one of them host data
            leaves = operands(node)
            return not any(map(self.is_tensor, leaves)) and any(map(self.is_host_data, leaves))
        return False

    def is_host_value(self, node: cst.BaseExpression) -> bool:
        """Host data, or a ``self`` field only ever given host data."""
        return self.is_host_data(node) or self.is_host_attr(node)

    def is_list_value(self, node: cst.BaseExpression) -> bool:
        """A Python list: a non-empty display, a list comprehension, ``list(...)``, a name last bound to
        one (``ids = []`` then ``ids.append(i)`` is one too) or a ``self`` field only ever stored one
        (``self.banned = list(ids)`` in ``__init__``, read in another method). Indexing a device tensor
        with one copies it to the device (GL208); a name or a field that may hold an int is not one,
        nor a list of ``slice`` objects, which torch takes as a tuple of slices (basic indexing)."""
        if type(node) is cst.List:
            return bool(node.elements) and not self.slices(node)
        if type(node) is cst.ListComp:
            return not self.slices(node)
        if type(node) is cst.Call:
            return type(node.func) is cst.Name and node.func.value == "list" and "list" not in self.imports
        if type(node) is cst.Name:
            return node.value in self.fn.lists
        attr = self.is_self_attr(node)
        return attr is not None and self.cls is not None and attr in self.cls.list_attrs \
            and attr not in self.cls.tensor_attrs and attr not in self.cls.other_attrs

    def slices(self, node: cst.List | cst.ListComp) -> bool:
        """``[slice(0, n) for n in shape]``, ``[slice(None), slice(0, k)]``: ``slice`` objects alone."""
        elements = [node.elt] if type(node) is cst.ListComp else [el.value for el in node.elements]
        return "slice" not in self.imports and all(
            type(el) is cst.Call and type(el.func) is cst.Name and el.func.value == "slice" for el in elements)

    # -- bindings ----------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """Record what an assignment (or a ``for`` target) makes of its target."""
        if type(target) in (cst.Tuple, cst.List):
            elements = [el.value for el in target.elements]
            if type(value) in (cst.Tuple, cst.List) and len(value.elements) == len(elements):
                for el, val in zip(elements, value.elements):
                    self.bind(el, val.value)
                return
            tensor = value is not None and self.is_tensor(value)
            for el in elements:
                self._set(el, tensor, False)
            if _unpacks_shape(value):  # ``bsz, seqlen = ids.shape``: Python sizes
                for el in elements:
                    if type(el) is cst.Name:
                        self.fn.hosts.add(el.value)
                        self.fn.shapes.add(el.value)
            return
        # an UPPER_CASE name holds a constant by convention (``BLOCK_SEQ = block_seq``: a kernel's
        # meta-parameter), never a per-step tensor, even when presumed from a hot function's parameter
        tensor = value is not None and self.is_tensor(value) and not constant_name(target) \
            and not (type(target) is cst.Attribute and _legacy(value, self.imports))
        self._set(target, tensor, tensor and value is not None and self.is_bool_tensor(value))
        if type(target) is cst.Name:
            (self.fn.compared.add if value is not None and compares(value, self.fn.compared)
             else self.fn.compared.discard)(target.value)
        track(self.fn, self.cls, target, value, self.imports)  # a rejection sampler's draws (:mod:`.acceptance`)
        pinned = value is not None and is_pinned_value(value, self)
        if type(target) is cst.Name:
            # ``BLOCK_N = 16``: a constant by the same convention; a lower-case ``pos = 0`` is one only
            # where the function binds it nowhere else (a loop may advance it after this binding,
            # walked before the loop body: :mod:`.oncebound`); a bool
            # literal (``pad = True if use_cache else False``) is a Python bool, which nothing advances
            constant = number(value) is not None and (constant_name(target) or bound_once(self.fn, target.value)) \
                or bool_literal(value)
            (self.fn.ints.add if constant else self.fn.ints.discard)(target.value)
            if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in NUMBER_BUILTINS \
                    and value.func.value not in self.imports:
                self.fn.numbers.add(target.value)
            own_slice = type(value) is cst.Subscript and type(value.value) is cst.Name \
                and value.value.value == target.value
            if own_slice and (target.value in self.fn.params or target.value in self.fn.sliced_params):
                self.fn.sliced_params.add(target.value)  # ``key = key[n:]``: still what the caller gave, sliced
            else:
                self.fn.sliced_params.discard(target.value)
            self.fn.params.discard(target.value)
            self.fn.weights.discard(target.value)
            host = self.is_host_data(value) or (type(value) is cst.Subscript and self.is_host_attr(value.value))
            (self.fn.hosts.add if host else self.fn.hosts.discard)(target.value)  # also a host field's rows
            (self.fn.shapes.add if shape_only(value, self.fn.shapes) else self.fn.shapes.discard)(target.value)
            (self.fn.pinned.add if pinned else self.fn.pinned.discard)(target.value)
            picked = type(value) is cst.Subscript and "device" in (dotted_name(value.value) or "").split(".")[-1]
            (self.fn.picked_devices.add if picked else self.fn.picked_devices.discard)(target.value)
        attr = self.is_self_attr(target)
        if attr is not None and self.cls is not None and pinned:
            self.cls.pinned_attrs.add(attr)
        if attr is not None and self.cls is not None and not tensor and self.is_host_data(value):
            self.cls.host_attrs.add(attr)
        listed = value is not None and (self.is_list_value(value) or (type(value) is cst.List and not value.elements)  # ``ids = []``
                                        or type(target) is cst.Name and listed_value(value, self))  # (:mod:`.listrows`)
        if type(target) is cst.Name:
            (self.fn.lists.add if listed else self.fn.lists.discard)(target.value)
            self.fn.row_lists.discard(target.value)
        elif attr is not None and self.cls is not None and listed:
            self.cls.list_attrs.add(attr)
        elif attr is not None and self.cls is not None and not (type(value) is cst.Name and value.value == "None"):
            self.cls.other_attrs.add(attr)  # ``self.ids = 0`` somewhere: the field is not only a list
        if attr is not None and self.cls is not None and type(value) is cst.Call:
            made = resolve(value.func, self.imports)
            if made in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                self.cls.weight_attrs.add(attr)
            elif made in PARAM_CONTAINERS:
                self.cls.param_containers.add(attr)
            elif layer_tensors(made):
                self.cls.layer_attrs[attr] = layer_tensors(made)
        if type(target) is cst.Name:
            alias = self.module_source(value)
            if alias is not None:
                self.fn.module_aliases[target.value] = alias
            else:
                self.fn.module_aliases.pop(target.value, None)

    def module_source(self, value: cst.BaseExpression | None) -> str | None:
        """``self.layers[i]`` / ``self.attn`` / an alias of them -> the attribute name."""
        if type(value) is cst.Subscript:
            value = value.value
        if type(value) is cst.Name:
            return self.fn.module_aliases.get(value.value)
        attr = self.is_self_attr(value) if value is not None else None
        if attr is not None and self.cls is not None and attr in self.cls.module_attrs:
            return attr
        return None

    def declare_tensor(self, target: cst.BaseExpression) -> None:
        """``x: Tensor = ...`` / ``self.buf: torch.Tensor | None = None``: the annotation says so."""
        self._set(target, True, False)

    def iterated(self, comp: cst.CompFor | None) -> None:
        """A comprehension's ``for r in rows``: ``r.f`` is spelled ``rows[].f`` (:func:`field_spelling`)."""
        while comp is not None:
            if type(comp.target) is cst.Name and type(comp.iter) is cst.Name:
                self.fn.elements[comp.target.value] = self.fn.elements.get(comp.iter.value, comp.iter.value) + "[]"
            comp = comp.inner_for_in

    def _set(self, target: cst.BaseExpression, tensor: bool, boolean: bool) -> None:
        if type(target) is cst.Name:
            names, bools = self.fn.tensors, self.fn.bools
            key = target.value
            self.fn.elements.pop(key, None)
            self.fn.numbers.discard(key)
        else:
            attr = self.is_self_attr(target)
            if attr is None or self.cls is None:
                return
            names, bools, key = self.cls.tensor_attrs, self.cls.bool_attrs, attr
            if not tensor:  # an attribute keeps being a tensor once one method made it one
                return
        (names.add if tensor else names.discard)(key)
        (bools.add if boolean else bools.discard)(key)


def field_spelling(node: cst.Attribute, imports: dict[str, str], elements: dict[str, str]) -> str | None:
    """``obj.f`` (a local or a parameter, not a module), ``rows[].f`` (``obj`` a comprehension's
    target over ``rows``) or ``self.x.f``; None for anything else."""
    base, attr = node.value, node.attr.value
    if attr in TENSOR_ATTRS or attr in HOST_METHODS or attr.startswith("__"):
        return None
    if type(base) is cst.Name:
        name = elements.get(base.value, base.value)
        return f"{name}.{attr}" if name != "self" and name not in imports else None
    if type(base) is cst.Attribute and type(base.value) is cst.Name and base.value.value == "self":
        return f"self.{base.attr.value}.{attr}"
    return None



def _unpacks_shape(value: cst.BaseExpression | None) -> bool:
    """``x.shape`` / ``x.size()`` (also ``x.shape[:2]``): what unpacking it binds are sizes."""
    if isinstance(value, cst.Subscript):
        value = value.value
    if isinstance(value, cst.Call) and not value.args:
        value = value.func
        return isinstance(value, cst.Attribute) and value.attr.value == "size"
    return isinstance(value, cst.Attribute) and value.attr.value == "shape"


def _legacy(value: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """``torch.LongTensor([-1])``: a host tensor. A field stored one stays no tensor field (a local
    knows it lives on the host, :mod:`.cputensors`; a field read in another method would not)."""
    return type(value) is cst.Call and resolve(value.func, imports) in LEGACY_TENSORS
