"""What an unannotated function returns: the class every ``return`` instantiates.

``def _create_state(self, batch): state = self.state_class(); ...; return state`` types its result
like ``-> StepState`` would, so ``state = self._create_state(batch); state.prepare(self)`` reaches
``StepState.prepare`` (and its overrides) when linking. A collaborator of
:class:`graphlint.static.calls.CallRecorder`, which owns it and tells it every binding; the walker
tells it every ``return`` and asks for the class when the function ends.

Decided: only instantiations count -- ``Cls(...)``, a class attribute holding a class called on
``self`` (``state_class = StepState`` in the class body, ``self.state_class()``), or a local name
bound to one of those; every ``return`` with a value must give the same class (``return None`` and
a bare ``return`` are allowed, as ``Optional[Cls]`` is). Anything else returned (a tensor, ``self``,
another call) leaves the function untyped. Local names bound to an instance are used here only,
not to type the local itself.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphlint.static.facts import ClassInfo, Descriptor, FunctionInfo
from graphlint.static.names import dotted_name

_MIXED = ("mixed",)  # returns disagree or are not instances: untyped


class ReturnRecorder:
    """The class each function of one file returns, learnt as the walker passes its bindings and
    ``return`` statements. ``describe`` is how the call recorder names a class reference
    (imports, nested defs); ``class_stack`` is the walker's, read for class bodies. The function a
    binding or return belongs to is passed with it."""

    def __init__(self, describe: Callable[[cst.BaseExpression], Descriptor | None],
                 class_stack: list[ClassInfo]) -> None:
        self.describe, self.class_stack = describe, class_stack
        self.class_refs: dict[str, dict[str, Descriptor]] = {}  # class -> {attr: class it holds}
        self.instances: dict[str, dict[str, Descriptor]] = {}  # function -> {local name: its class}
        self.returned: dict[str, Descriptor] = {}  # function -> class returned so far (or _MIXED)

    def note_binding(self, func: FunctionInfo, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``state_class = StepState`` in a class body; ``state = StepState()`` in a function."""
        if not isinstance(target, cst.Name):
            return
        if func.qualname == "<module>":
            if self.class_stack and isinstance(value, (cst.Name, cst.Attribute)):
                desc = self._class_reference(value)
                if desc is not None:
                    self.class_refs.setdefault(self.class_stack[-1].qualname, {})[target.value] = desc
            return
        local = self.instances.setdefault(func.qualname, {})
        made = self.instance_class(func, value)
        if made is not None:
            local[target.value] = made
        else:
            local.pop(target.value, None)

    def _class_reference(self, node: cst.BaseExpression) -> Descriptor | None:
        name = dotted_name(node) or ""
        return self.describe(node) if name.rsplit(".", 1)[-1][:1].isupper() else None

    def instance_class(self, func: FunctionInfo, value: cst.BaseExpression | None) -> Descriptor | None:
        """The class ``value`` (an expression in ``func``) is a fresh instance of, when one
        expression shows it."""
        if isinstance(value, cst.Name):
            return self.instances.get(func.qualname, {}).get(value.value)
        if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
            return None
        callee = value.func
        if (isinstance(callee, cst.Attribute) and isinstance(callee.value, cst.Name) and callee.value.value == "self"
                and func.cls):
            return self.class_refs.get(func.cls, {}).get(callee.attr.value)
        return self._class_reference(callee)

    def note_return(self, func: FunctionInfo, value: cst.BaseExpression | None) -> None:
        """A ``return`` of ``func``: it keeps the function typed only while every return agrees."""
        if value is None or (isinstance(value, cst.Name) and value.value == "None"):
            return
        qual = func.qualname
        made = self.instance_class(func, value)
        known = self.returned.get(qual)
        self.returned[qual] = made if made is not None and known in (None, made) else _MIXED

    def returned_class(self, qualname: str) -> Descriptor | None:
        """The class every ``return`` of the function instantiates, None when they do not agree."""
        self.instances.pop(qualname, None)
        made = self.returned.pop(qualname, None)
        return None if made is _MIXED else made
