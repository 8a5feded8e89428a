"""A torch operation in either spelling: ``torch.bincount(ids)`` or ``ids.bincount()``.

One rule per hazard, whichever form the code uses. The method form needs a receiver we know is
a tensor (``.unique()`` exists on other types too); argument positions in ``params`` count in
the function form (``tensor_arg: 1`` is ``repeats`` in ``torch.repeat_interleave(x, repeats)``
and in ``x.repeat_interleave(repeats)``).

``objects`` names library classes whose methods carry the hazard (``{torch.distributions.Categorical:
[sample]}``: the object checks its arguments on the host): the method called on an instance made in
the expression or bound in the function (``d = Categorical(...)``, then ``d.sample()``: the name's
origin, :func:`graphlint.static.valuekinds.note_origin`) is reported, unless the instance is made with
``validate_args=False``; the argument conditions do not apply to it (``dist.sample()`` passes none).

An op whose cost is reading its input back (:data:`READS_INPUT`) given a host tensor reads nothing
from the device: not reported.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.acceptance import acceptance
from graphlint.static.cputensors import is_cpu_tensor
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import CALL_PARAMS, CallConditions
from graphlint.static.names import is_imported_root, resolve
from graphlint.static.distchecks import skips_validation


#: ops whose cost is reading their input's data back (a size, a range, a draw): given a tensor that
#: lives on the host (:mod:`graphlint.static.cputensors`), the host reads its own memory
READS_INPUT = frozenset(("bincount", "nonzero", "argwhere", "unique", "unique_consecutive", "masked_select",
                         "histc"))


#: ops that locate a mask's true elements: on an acceptance test, where the draft was rejected
LOCATES = frozenset(("nonzero", "argwhere"))


class OpCall(Matcher):
    kind = "op-call"
    node_types = ("Call",)
    params = {"ops": list, "objects": dict, **CALL_PARAMS}

    def setup(self, params: dict[str, Any]) -> None:
        # a rule naming library ``objects`` may name no op (GL109: ``torch.multinomial`` itself is safe)
        self.ops = frozenset(params.get("ops") or () if params.get("objects") else self.require(params, "ops"))
        self.callees = frozenset(f"torch.{op}" for op in self.ops)
        self.conditions = CallConditions(params, f"{self.rule.pack}: rule {self.rule.code}")
        self.objects = {cls: frozenset(methods) for cls, methods in (params.get("objects") or {}).items()}
        self.object_methods = frozenset().union(*self.objects.values())
        self.reads_input = bool(self.ops) and self.ops <= READS_INPUT

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"callee": self.callees, "method": self.ops | self.object_methods}

    def made_by(self, node: cst.BaseExpression, ctx: MatchContext) -> str | None:
        """The class an instance is made from: ``Cls(...)``, or a name last bound to ``Cls(...)``."""
        if isinstance(node, cst.Call):
            return resolve(node.func, ctx.imports)
        origin = ctx.oracle.fn.origins.get(node.value, "") if isinstance(node, cst.Name) else ""
        if not origin.endswith("#") or "|" in origin:
            return None
        root, _, rest = origin[:-1].partition(".")
        target = ctx.imports.get(root)
        return origin[:-1] if target is None else f"{target}.{rest}" if rest else target

    @staticmethod
    def unvalidated(node: cst.BaseExpression, ctx: MatchContext) -> bool:
        """Made with ``validate_args=False`` (in the expression, or where the name was bound), or in a
        module that turns validation off for every distribution (``set_default_validate_args(False)``): the
        object's checks, not its method, were the host read (``Categorical.sample()`` is a
        ``torch.multinomial`` draw, which reads nothing back)."""
        if ctx.validation_off:
            return True
        if isinstance(node, cst.Call):
            return skips_validation(node)
        return isinstance(node, cst.Name) and node.value in ctx.oracle.fn.unvalidated

    def visit(self, node: cst.Call, ctx: MatchContext) -> None:
        if ctx.call_name in self.callees:
            first = node.args[0].value if node.args and node.args[0].keyword is None else None
            if self.reads_input and first is not None and is_cpu_tensor(first, ctx.oracle):
                return  # ``torch.nonzero(diff)`` of host keys: no read-back
            if self.conditions.holds(node, ctx):
                self.report(node, first, ctx.call_name, ctx)
            return
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in self.ops
            and not is_imported_root(func.value, ctx.imports)
            and ctx.oracle.is_tensor(func.value)
            and not (self.reads_input and is_cpu_tensor(func.value, ctx.oracle))
            and self.conditions.holds(node, ctx, offset=1)
        ):
            self.report(node, func.value, f".{func.attr.value}()", ctx)
        elif isinstance(func, cst.Attribute) and func.attr.value in self.object_methods:
            made = self.made_by(func.value, ctx)
            if made is not None and func.attr.value in self.objects.get(made, ()) \
                    and not self.unvalidated(func.value, ctx):
                ctx.report(self.rule, node, f"{made.rsplit('.', 1)[-1]}(...).{func.attr.value}()")

    def report(self, node: cst.Call, operand: cst.BaseExpression | None, name: str, ctx: MatchContext) -> None:
        """Flagged ``acceptance`` when it locates the rejections of a rejection sampler's test
        (``(torch.rand_like(ratio) > ratio).nonzero()``): the accepted length, read by design
        (:mod:`graphlint.static.acceptance`)."""
        raw = ctx.defer(self.rule, node, name)
        if raw is not None and operand is not None and self.ops & LOCATES \
                and acceptance(operand, ctx.oracle.fn, ctx.imports, ctx.oracle.cls):
            raw.flags = raw.flags | {"acceptance"}
        ctx.emit(raw)
