"""``device_buf.copy_(host)`` in the step, ``host`` a pageable host tensor.

A tensor made by a torch factory with no ``device=`` (or a CPU one) and no ``pin_memory=`` lives
in pageable host memory. Copied to the device inside a capture it fails the capture ("Cannot copy
between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"); in the
eager step it is a synchronous copy every step, ``non_blocking=True`` or not. Known for local names
bound to such a call in the same function, and for ``self`` attributes bound to one anywhere in
the class (a staging buffer made in ``__init__``, copied in the step); a pageable tensor moved by
``.to(device, non_blocking=True)`` or ``.to(device=dev)`` is the same copy; the copy is reported only
once the class is read to its end, and not into another such host tensor (no transfer). A ``pin_memory=`` argument of any value, ``.pin_memory()`` or
another object's attribute is never assumed pageable.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import keyword
from graphlint.static.names import resolve


def _on_host(call: cst.Call) -> bool:
    """No ``pin_memory=`` and no device, or a CPU one; never with ``**kwargs`` (``torch.tensor(xs,
    **CPU_PINNED)``: the dict may pin it)."""
    if keyword(call, "pin_memory") is not None or any(arg.star == "**" for arg in call.args):
        return False
    device = keyword(call, "device")
    if device is None:
        return True
    if isinstance(device, cst.SimpleString):
        return device.value.strip("'\"").split(":")[0] == "cpu"
    return False


class HostCopy(Matcher):
    kind = "host-copy"
    node_types = ("Assign", "Call")
    params = {"factories": list}

    def setup(self, params: dict) -> None:
        self.factories = frozenset(self.require(params, "factories"))
        self.host_attrs: set[str] = set()
        self.host_locals: dict[str, set[str]] = defaultdict(set)
        self.uses: dict[str, list] = defaultdict(list)
        self.seen = 0  # the id of the call an assignment's visit already matched

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if isinstance(node, cst.Assign):
            if isinstance(node.value, cst.Call):  # ``ids = ids.to(dev, non_blocking=True)``: before the rebinding
                self.device_copy(node.value, ctx)
                self.seen = id(node.value)
            pageable = isinstance(node.value, cst.Call) and resolve(node.value.func, ctx.imports) in self.factories \
                and _on_host(node.value)
            for target in (t.target for t in node.targets):
                attr = ctx.oracle.is_self_attr(target)
                if attr is not None and pageable:
                    self.host_attrs.add(attr)
                elif isinstance(target, cst.Name):
                    names = self.host_locals[ctx.function_name]
                    (names.add if pageable else names.discard)(target.value)
            return
        func = node.func
        if id(node) != self.seen:
            self.device_copy(node, ctx)
        if not isinstance(func, cst.Attribute) or func.attr.value != "copy_" or not node.args:
            return
        source, local = node.args[0].value, self.host_locals[ctx.function_name]
        if isinstance(func.value, cst.Name) and func.value.value in local:
            return  # host to host
        if isinstance(source, cst.Name) and source.value in local:
            ctx.report(self.rule, node, source.value)
            return
        attr = ctx.oracle.is_self_attr(source)
        if attr is not None:
            self.uses[attr].append((ctx.defer(self.rule, node, f"self.{attr}"), ctx.oracle.is_self_attr(func.value)))

    def device_copy(self, call: cst.Call, ctx: MatchContext) -> None:
        """``host.to(device, non_blocking=True)`` / ``host.to(device=dev)``: a pageable host tensor
        moved to the device (``non_blocking=`` or ``device=`` says it is a device, not a dtype)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to"):
            return
        blocking = keyword(call, "non_blocking")
        if keyword(call, "device") is None and (blocking is None or (isinstance(blocking, cst.Name)
                                                                    and blocking.value == "False")):
            return
        source = func.value
        if isinstance(source, cst.Call) and _on_host(source) and (name := resolve(source.func, ctx.imports)) \
                in self.factories:  # ``torch.tensor(xs).to(dev, non_blocking=True)``: made and moved at once
            ctx.report(self.rule, call, f"{name}(...)")
            return
        if isinstance(source, cst.Name) and source.value in self.host_locals[ctx.function_name]:
            ctx.report(self.rule, call, source.value)
            return
        attr = ctx.oracle.is_self_attr(source)
        if attr is not None:
            self.uses[attr].append((ctx.defer(self.rule, call, f"self.{attr}"), None))

    def end_class(self, ctx: MatchContext) -> None:
        for attr, pending in self.uses.items():
            if attr in self.host_attrs:
                for report, destination in pending:
                    if destination not in self.host_attrs:  # host to host is no transfer
                        ctx.emit(report)
        self.host_attrs, self.uses = set(), defaultdict(list)
