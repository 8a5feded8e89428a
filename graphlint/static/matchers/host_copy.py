"""``device_buf.copy_(host)`` or ``host.to(x.device)`` in the step, ``host`` a pageable host tensor.

A tensor made by a torch factory with no ``device=`` (or a CPU one) and no ``pin_memory=`` lives
in pageable host memory. Copied to the device inside a capture it fails the capture ("Cannot copy
between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"); in the
eager step it is a synchronous copy every step, ``non_blocking=True`` or not.

``copy_``: known for local names bound to such a call in the same function, and for ``self``
attributes bound to one anywhere in the class (a staging buffer made in ``__init__``, copied in
the step); the copy is reported only once the class is read to its end, and not into another such
host tensor (no transfer). A ``pin_memory=`` argument of any value, ``.pin_memory()`` or another
object's attribute is never assumed pageable.

``.to(<variable device>)``: a constant rebuilt on the CPU every step and then moved
(``inv_freq = 1.0 / base ** (torch.arange(0, d, 2).float() / d)``, then
``inv_freq[None, :, None].to(x.device)``; ``torch.tensor(0).to(device)``) fails capture the same
way (Phi-MoE's rotary embedding on an H200). Only what the step itself builds counts: a factory
call inline, or a local bound in the function to a host factory, to arithmetic over such locals
(views and dtype casts keep a tensor on the host) or to what a ``device=None`` builder returns
when called without a device (:mod:`graphlint.static.hostbuilders`). A ``self`` attribute is often
moved once and kept (``self.cos = self.cos.to(x.device)``): only a pageable one moved with
``non_blocking=`` or ``device=`` (``self.ids_cpu.to(dev, non_blocking=True)``, a staging copy that
is meant to overlap and does not) counts, once the class is read to its end.
``.to("cuda")`` and ``.cuda()`` are GL401's and GL403's wherever they are (one finding per copy).
A factory under a default device (``with torch.device("cuda"):``) is on the GPU: a false alarm
here, for both forms.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.cstwalk import operands
from graphlint.static.hostbuilders import builder_call
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import keyword, positional
from graphlint.static.matchers.device_copy import device_kind
from graphlint.static.names import resolve

#: methods whose result stays where the tensor is (a view, a cast, a copy on the same device)
KEEP_DEVICE = frozenset("float double half bfloat16 long int bool expand expand_as view reshape unsqueeze squeeze "
                        "contiguous clone repeat flatten t transpose permute flip neg exp log sqrt rsqrt pow".split())


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


def _scalar_tensor(node: cst.BaseExpression) -> bool:
    """``torch.tensor(2.0)``: a 0-dim tensor (its first argument no list, tuple or comprehension)."""
    if not isinstance(node, cst.Call) or not node.args or not isinstance(node.func, (cst.Attribute, cst.Name)):
        return False
    name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
    return name in ("tensor", "as_tensor") and not isinstance(node.args[0].value, (cst.List, cst.Tuple, cst.ListComp))


class HostCopy(Matcher):
    kind = "host-copy"
    node_types = ("Assign", "Call")
    params = {"factories": list}

    def setup(self, params: dict) -> None:
        self.factories = frozenset(self.require(params, "factories"))
        self.host_attrs: set[str] = set()
        self.host_locals: dict[str, set[str]] = defaultdict(set)
        self.uses: dict[str, list] = defaultdict(list)
        self.seen = 0  # the id of the ``.to`` call an assignment's visit already matched

    def host_factory(self, node: cst.BaseExpression, ctx: MatchContext) -> bool:
        return isinstance(node, cst.Call) and resolve(node.func, ctx.imports) in self.factories and _on_host(node)

    def built_on_host(self, node: cst.BaseExpression, ctx: MatchContext) -> bool:
        """A tensor this function builds on the host: a host factory, a local bound to one, a view or
        cast of one, or arithmetic over one (:meth:`host_arithmetic`)."""
        while True:
            if isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.UnaryOperation):
                node = node.expression
            elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                  and node.func.attr.value in KEEP_DEVICE and not self.host_factory(node, ctx)):
                node = node.func.value
            else:
                break
        if isinstance(node, cst.Name):
            return node.value in self.host_locals[ctx.function_name]
        if isinstance(node, cst.BinaryOperation):
            return self.host_arithmetic(operands(node), ctx)
        return self.host_factory(node, ctx)

    def host_arithmetic(self, leaves: list[cst.BaseExpression], ctx: MatchContext) -> bool:
        """A host operand decides, unless a known tensor joins in. A 0-dim ``torch.tensor(2.0)`` may meet
        a CUDA tensor (it is taken as a scalar): with one, every other operand must be known not a
        tensor; a sized host tensor cannot meet a CUDA one, so other names may stay unknown."""
        host = [self.built_on_host(leaf, ctx) for leaf in leaves]
        if not any(host) or any(ctx.oracle.is_tensor(leaf) for leaf, on in zip(leaves, host) if not on):
            return False
        sized = any(on and not _scalar_tensor(leaf) for leaf, on in zip(leaves, host))
        return sized or all(on or isinstance(leaf, (cst.Integer, cst.Float, cst.Attribute))
                            or ctx.oracle.is_host_data(leaf) for leaf, on in zip(leaves, host))

    def derived_on_host(self, value: cst.BaseExpression, names: set[str], ctx: MatchContext) -> bool:
        """:meth:`built_on_host` for an assigned value that is no factory call, asked only where it can
        hold (most assignments are calls of other functions: a dict lookup, no name resolution)."""
        if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)):
            return self.built_on_host(value, ctx)
        if isinstance(value, cst.Name):
            return value.value in names
        if not isinstance(value, cst.Call):
            return False
        oracle = ctx.oracle
        if builder_call(value, oracle.host_builders, oracle.cls.host_builders if oracle.cls else {}, oracle.is_tensor):
            return True
        return (isinstance(value.func, cst.Attribute) and value.func.attr.value in KEEP_DEVICE
                and self.built_on_host(value, ctx))

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if isinstance(node, cst.Assign):
            value = node.value
            if isinstance(value, cst.Call):  # ``ids = ids.to(dev, non_blocking=True)``: before the rebinding
                self.device_copy(value, ctx)
                self.seen = id(value)
            pageable = self.host_factory(value, ctx)
            names = self.host_locals[ctx.function_name]
            built = pageable or self.derived_on_host(value, names, ctx)
            for target in (t.target for t in node.targets):
                attr = ctx.oracle.is_self_attr(target)
                if attr is not None and pageable:
                    self.host_attrs.add(attr)
                elif isinstance(target, cst.Name):
                    (names.add if built else names.discard)(target.value)
                elif isinstance(target, (cst.Tuple, cst.List)):  # ``inv_freq, scale = rope_init(config)``
                    for el in target.elements:
                        if isinstance(el.value, cst.Name):
                            (names.add if built else names.discard)(el.value.value)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            if id(node) != self.seen:
                self.device_copy(node, ctx)
            return
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
        """``x.to(<variable device>)`` of a tensor this function built on the host; ``self.x.to(dev,
        non_blocking=True)`` / ``.to(device=dev)`` of a pageable attribute (decided at the class's end)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to"):
            return
        if self.moves_to_device(call, ctx) and self.built_on_host(func.value, ctx):
            root = func.value
            while isinstance(root, (cst.Subscript, cst.Call)) and not self.host_factory(root, ctx):
                root = root.value if isinstance(root, cst.Subscript) else root.func
                root = root.value if isinstance(root, cst.Attribute) else root
            name = root.value if isinstance(root, cst.Name) else resolve(root.func, ctx.imports) + "(...)" \
                if isinstance(root, cst.Call) else "a host tensor"
            ctx.report(self.rule, call, name)
            return
        blocking = keyword(call, "non_blocking")
        if keyword(call, "device") is None and (blocking is None or (isinstance(blocking, cst.Name)
                                                                    and blocking.value == "False")):
            return
        attr = ctx.oracle.is_self_attr(func.value)
        if attr is not None:
            self.uses[attr].append((ctx.defer(self.rule, call, f"self.{attr}"), None))

    @staticmethod
    def moves_to_device(call: cst.Call, ctx: MatchContext) -> bool:
        """``.to(x.device)``, ``.to(dtype=..., device=dev)``; not a dtype, and not ``.to("cuda")`` or
        ``.cuda()``, which GL401 and GL403 report wherever they are (one finding per copy)."""
        args = positional(call)
        device = keyword(call, "device") or (args[0] if args else None)
        if isinstance(device, cst.Name) and device.value in ctx.oracle.fn.optional:
            return False  # a builder's own ``device=None``: ``.to(None)`` when the step leaves it out
        return device is not None and device_kind(device, ctx) == "other"

    def end_class(self, ctx: MatchContext) -> None:
        for attr, pending in self.uses.items():
            if attr in self.host_attrs:
                for report, destination in pending:
                    if destination not in self.host_attrs:  # host to host is no transfer
                        ctx.emit(report)
        self.host_attrs, self.uses = set(), defaultdict(list)
