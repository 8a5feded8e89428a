"""What an unannotated function returns: the class every ``return`` instantiates.

``def _create_state(self, batch): state = self.state_class(); ...; return state`` types its result
like ``-> StepState`` would, so ``state = self._create_state(batch); state.prepare(self)`` reaches
``StepState.prepare`` (and its overrides) when linking. A mixin of
:class:`graphlint.static.calls.CallRecorder` (reads its ``descriptor``, ``class_stack`` and the
walker's position through ``at``).

Decided: only instantiations count -- ``Cls(...)``, a class attribute holding a class called on
``self`` (``state_class = StepState`` in the class body, ``self.state_class()``), or a local name
bound to one of those; every ``return`` with a value must give the same class (``return None`` and
a bare ``return`` are allowed, as ``Optional[Cls]`` is). Anything else returned (a tensor, ``self``,
another call) leaves the function untyped. Local names bound to an instance are used here only,
not to type the local itself.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.facts import Descriptor
from graphlint.static.names import dotted_name

_MIXED = ("mixed",)  # returns disagree or are not instances: untyped


class ReturnRecorder:
    def init_returns(self) -> None:
        self.class_refs: dict[str, dict[str, Descriptor]] = {}  # class -> {attr: class it holds}
        self.instances: dict[str, dict[str, Descriptor]] = {}  # function -> {local name: its class}
        self.returned: dict[str, Descriptor] = {}  # function -> class returned so far (or _MIXED)

    def note_class_binding(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``state_class = StepState`` in a class body; ``state = StepState()`` in a function."""
        if not isinstance(target, cst.Name):
            return
        if self.at.func.qualname == "<module>":
            if self.class_stack and isinstance(value, (cst.Name, cst.Attribute)):
                desc = self._class_reference(value)
                if desc is not None:
                    self.class_refs.setdefault(self.class_stack[-1].qualname, {})[target.value] = desc
            return
        local = self.instances.setdefault(self.at.func.qualname, {})
        made = self.instance_class(value)
        if made is not None:
            local[target.value] = made
        else:
            local.pop(target.value, None)

    def _class_reference(self, node: cst.BaseExpression) -> Descriptor | None:
        name = dotted_name(node) or ""
        return self.descriptor(node) if name.rsplit(".", 1)[-1][:1].isupper() else None

    def instance_class(self, value: cst.BaseExpression | None) -> Descriptor | None:
        """The class ``value`` is a fresh instance of, when one expression shows it."""
        if isinstance(value, cst.Name):
            return self.instances.get(self.at.func.qualname, {}).get(value.value)
        if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
            return None
        func = value.func
        if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
                and self.at.func.cls):
            return self.class_refs.get(self.at.func.cls, {}).get(func.attr.value)
        return self._class_reference(func)

    def note_return(self, value: cst.BaseExpression | None) -> None:
        if value is None or (isinstance(value, cst.Name) and value.value == "None"):
            return
        qual = self.at.func.qualname
        made = self.instance_class(value)
        known = self.returned.get(qual)
        self.returned[qual] = made if made is not None and known in (None, made) else _MIXED

    def returned_class(self, qualname: str) -> Descriptor | None:
        """The class every ``return`` of the function instantiates, None when they do not agree."""
        self.instances.pop(qualname, None)
        made = self.returned.pop(qualname, None)
        return None if made is _MIXED else made
