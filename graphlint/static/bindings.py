"""What assignments tell the call graph: objects, sub-modules and callables bound to names.

``x = self.layers[0]``, ``self.ffn = MLP() if dense else MoE()``, ``self.fns = (self._a, self._b)``,
``self.layers.append(Block())``: a collaborator of :class:`graphlint.static.calls.CallRecorder`,
which owns it, hands it each pair an assignment binds and names callees for it (:class:`CalleeNames`).
"""

from __future__ import annotations

from typing import Protocol

import libcst as cst

from graphlint.static.cputensors import note_cpu_binding
from graphlint.static.facts import ClassInfo, Descriptor
from graphlint.static.names import dotted_name
from graphlint.static.regions import COMPILE_CALLS
from graphlint.static.tensors import MODULE_CONTAINERS, TensorOracle


class CalleeNames(Protocol):
    """How the call recorder names what a binding may later call: all the binding recorder asks
    of it."""

    def callee_name(self, func: cst.BaseExpression) -> str | None: ...

    def descriptor(self, func: cst.BaseExpression) -> Descriptor | None: ...

    def callable_descriptor(self, node: cst.BaseExpression) -> Descriptor | None: ...

    def local_callable(self, node: cst.Name) -> Descriptor | None: ...

    def getattr_descriptor(self, call: cst.Call) -> Descriptor | None: ...

    def object_path(self, node: cst.BaseExpression) -> tuple | None: ...


#: ``nn.Module`` methods that return the module itself
MODULE_SELF_METHODS = frozenset(("eval", "train", "to", "cuda", "cpu", "half", "float", "bfloat16", "double",
                                 "requires_grad_", "to_empty", "share_memory"))


def module_itself(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """``model.eval()``, ``model.to(device)``: the object they are called on, which they return
    (only names already typed as objects are followed, so a tensor's ``.to()`` is never one)."""
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in MODULE_SELF_METHODS and isinstance(value.func.value, cst.Name)):
        return value.func.value
    return None


class BindingRecorder:
    """Writes what one binding says into the function's facts (``oracle.fn``) and the enclosing
    class (the top of the walker's ``class_stack``): kept apart from the call recorder because it
    reads assignments, not calls."""

    def __init__(self, names: CalleeNames, oracle: TensorOracle, class_stack: list[ClassInfo]) -> None:
        self.names, self.oracle, self.class_stack = names, oracle, class_stack

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """One pair of an assignment (the call recorder takes ``a, b = x, y`` apart)."""
        names = self.names
        self.oracle.bind(target, value)
        self.oracle.taint(target, value)
        note_cpu_binding(target, value, self.oracle)
        if isinstance(target, cst.Name):
            path = names.object_path(value) if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) else None
            if path is None and (same := module_itself(value)) is not None:
                path = names.object_path(same)  # ``model = model.eval()``: still the annotated module
            if path is None and isinstance(value, cst.Call) and not self.oracle.is_tensor(value):
                made = self.module_types(value)  # ``runner = self._runner_ready()`` with ``-> RegionRunner``
                path = (made[0], ()) if len(made) == 1 and made[0][0] == "returns" else None
            if path is not None and path != ("self", ()):
                self.oracle.fn.objects[target.value] = path
            else:
                self.oracle.fn.objects.pop(target.value, None)
            if self.class_stack and isinstance(value, (cst.List, cst.ListComp, cst.Tuple)):
                self.oracle.fn.local_modules[target.value] = self.module_types(value)  # ``layers = [Block()...]``
            else:
                self.oracle.fn.local_modules.pop(target.value, None)
            refs = self.callable_refs(value) if path is None else []
            if refs:
                self.oracle.fn.callables[target.value] = refs
            else:
                self.oracle.fn.callables.pop(target.value, None)
        attr = self.oracle.is_self_attr(target)
        if attr is not None and self.class_stack:
            types = self.module_types(value)
            made = [t for t in types if t[0] == "returns"]
            if made:  # ``self.backend = make_backend(...)``: a class only if its return annotation says so
                known = self.class_stack[-1].made.setdefault(attr, [])
                known.extend(t for t in made if t not in known)
                types = [t for t in types if t[0] != "returns"]
            if not types and isinstance(value, cst.Name) and value.value in self.oracle.fn.objects:
                root, attrs = self.oracle.fn.objects[value.value]
                types = [root] if root != "self" and not attrs else []
            if types:
                self.add_submodule(attr, types)
            else:
                refs = self.callable_refs(value)
                if refs:
                    known = self.class_stack[-1].callables.setdefault(attr, [])
                    known.extend(r for r in refs if r not in known)

    def callable_refs(self, value: cst.BaseExpression) -> list[Descriptor]:
        """What calling the bound value later may run: ``self._attn`` (a method or a sub-module),
        each element of ``(self._attn, self._mlp)`` / ``{"a": self._attn}``, both sides of
        ``self._a if flag else self._b``, ``torch.compile(self._step)``'s argument, ``getattr(self, name)``."""
        if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
            return [d for el in value.elements for d in self.callable_refs(el.value)]
        if isinstance(value, cst.Dict):
            return [d for el in value.elements if isinstance(el, cst.DictElement) for d in self.callable_refs(el.value)]
        if isinstance(value, cst.IfExp):
            return self.callable_refs(value.body) + self.callable_refs(value.orelse)
        if isinstance(value, cst.Call):
            if self.names.callee_name(value.func) in COMPILE_CALLS and value.args:
                return self.callable_refs(value.args[0].value)
            desc = self.names.getattr_descriptor(value)
            return [desc] if desc is not None else []
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
            return [("member", ("self", ()), value.attr.value)]
        if isinstance(value, cst.Name) and (desc := self.names.local_callable(value)) is not None:
            return [desc]
        return []

    def add_submodule(self, attr: str, types: list[Descriptor]) -> None:
        known = self.class_stack[-1].submodules.setdefault(attr, [])
        known.extend(t for t in types if t not in known)
        if self.oracle.cls is not None:
            self.oracle.cls.module_attrs.add(attr)

    def module_types(self, value: cst.BaseExpression) -> list[Descriptor]:
        """``Attention(...)`` -> [Attention]; ``nn.ModuleList([Block(...) for _ in ...])`` -> [Block]."""
        if isinstance(value, cst.Name):  # ``nn.ModuleList(layers)`` with ``layers`` built just before
            return list(self.oracle.fn.local_modules.get(value.value, ()))
        if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.module_types(value.elt)
        if isinstance(value, cst.DictComp):
            return self.module_types(value.value)
        if isinstance(value, cst.IfExp):  # ``MLP(...) if i < n_dense else MoE(...)``: either, per layer
            return self.module_types(value.body) + self.module_types(value.orelse)
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return [t for el in value.elements for t in self.module_types(el.value)]
        if isinstance(value, cst.Dict):
            return [t for el in value.elements if isinstance(el, cst.DictElement) for t in self.module_types(el.value)]
        if not isinstance(value, cst.Call):
            return []
        name = dotted_name(value.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last in MODULE_CONTAINERS:
            types = [t for arg in value.args for t in self.module_types(arg.value)]
            return types or [("dotted", "torch.nn." + last)]
        if last[:1].isupper():
            desc = self.names.descriptor(value.func)
            return [desc] if desc is not None else []
        func = self.names.callable_descriptor(value.func) if isinstance(value.func, (cst.Name, cst.Attribute)) else None
        return [("returns", func)] if func is not None else []  # ``create_backend(...) -> Backend``

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
        elif method in ("append", "extend") and call.args:
            attr = self.oracle.is_self_attr(func.value)
            types = self.module_types(call.args[0].value)
            if attr is not None and types:
                self.add_submodule(attr, types)
            local = self.oracle.fn.local_modules.get(func.value.value) if isinstance(func.value, cst.Name) else None
            if local is not None:
                local.extend(t for t in types if t not in local)
