"""``device_buf.copy_(host)`` or ``host.to(x.device)`` in the step, ``host`` a pageable host tensor.

A tensor made by a torch factory with no ``device=`` (or a CPU one) and no ``pin_memory=`` lives
in pageable host memory. Copied to the device inside a capture it fails the capture ("Cannot copy
between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"); in the
eager step it is a synchronous copy every step, ``non_blocking=True`` or not.

Where a tensor was built is one fact, :mod:`graphlint.static.pageable` (shared with the list-index
rule and the return facts of :mod:`graphlint.static.valuekinds`).

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
(views and dtype casts keep a tensor on the host), to a concatenation or a fresh op of a host
tensor, to what a ``device=None`` builder returns when called without a device
(:mod:`graphlint.static.hostbuilders`), or to what a helper returns that builds one (a CPU tree's
node data, a verifier's accepted ids: :mod:`graphlint.static.pageable`). A ``self`` attribute is often
moved once and kept (``self.cos = self.cos.to(x.device)``): only a pageable one moved with
``non_blocking=`` or ``device=`` (``self.ids_cpu.to(dev, non_blocking=True)``, a staging copy that
is meant to overlap and does not) counts, once the class is read to its end.
``.to("cuda")`` and ``.cuda()`` are GL401's and GL403's wherever they are (one finding per copy).
A factory under a default device (``with torch.device("cuda"):``) is on the GPU: a false alarm
here, for both forms.

``slot.copy_(other.w)`` with ``other`` a parameter annotated with a class of the file: the
offloading pattern, reported when that class's load leaves ``w`` in pageable host memory and the
destination is a field the class puts on a device (:mod:`graphlint.static.loadedfields`).
"""

from __future__ import annotations

from collections import defaultdict
from fnmatch import fnmatchcase

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import keyword, positional
from graphlint.static.matchers.device_copy import DEVICE_NAMES, device_kind
from graphlint.static.lazygrowth import guarded_fields
from graphlint.static.loadedfields import LoadedFields, binding, strip
from graphlint.static.names import dotted_name, resolve
from graphlint.static.cputensors import on_host
from graphlint.static.pageable import KEEP_DEVICE, is_factory_call, is_pageable

#: the key of :attr:`HostCopy.uses` for copies whose source is built in the call (always pageable)
PAGEABLE_SOURCE = ""


class HostCopy(Matcher):
    kind = "host-copy"
    node_types = ("Assign", "AnnAssign", "Call", "If")

    def setup(self, params: dict) -> None:
        self.uses: dict[str, list] = defaultdict(list)
        self.seen = 0  # the id of the ``.to`` call an assignment's visit already matched
        self.loaded = LoadedFields()
        #: copies from another object's field, waiting for both classes: (report, source class, field,
        #: destination class, destination field)
        self.field_uses: list[tuple] = []
        #: (class, function) -> ``self`` fields an ``if`` that returns tests (:func:`.lazygrowth.guarded_fields`)
        self.guarded: dict[tuple[str, str], set[str]] = {}

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if type(node) is cst.If:
            fields = guarded_fields(node)
            if fields:
                self.guarded.setdefault((ctx.class_name, ctx.function_name), set()).update(fields)
            return
        if type(node) is cst.AnnAssign:
            if node.value is not None:
                self.note_field(node.target, node.value, ctx)
            return
        if type(node) is cst.Assign:
            for target in node.targets:
                self.note_field(target.target, node.value, ctx)
            value = node.value
            if type(value) is cst.Call:  # ``ids = ids.to(dev, non_blocking=True)``: before the rebinding
                if not self.kept_on_a_miss(node, ctx):
                    self.device_copy(value, ctx)
                self.seen = id(value)
            return
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "to":
            if id(node) != self.seen:
                self.device_copy(node, ctx)
            return
        if type(func) is not cst.Attribute or func.attr.value != "copy_" or not node.args:
            return
        source, local = node.args[0].value, ctx.oracle.fn.pageable
        if type(func.value) is cst.Name and func.value.value in local:
            return  # host to host
        if type(source) is cst.Name and source.value in local:
            ctx.report(self.rule, node, source.value)
            return
        attr = ctx.oracle.is_self_attr(source)
        if attr is not None:
            self.uses[attr].append((ctx.defer(self.rule, node, f"self.{attr}"), ctx.oracle.is_self_attr(func.value)))
            return
        if type(source) is cst.Call and is_pageable(source, ctx.oracle):
            self.inline_copy(node, source, ctx)
            return
        self.other_field(node, ctx)

    def kept_on_a_miss(self, node: cst.Assign, ctx: MatchContext) -> bool:
        """``self.pe = pe.to(x.device)`` after ``if self.pe is not None and <long enough>: return``: the
        table is rebuilt and uploaded only when the cached one misses (:mod:`.lazygrowth`)."""
        guarded = self.guarded.get((ctx.class_name, ctx.function_name))
        return bool(guarded) and any(ctx.oracle.is_self_attr(t.target) in guarded for t in node.targets)

    def inline_copy(self, call: cst.Call, source: cst.Call, ctx: MatchContext) -> None:
        """``buf.copy_(torch.from_numpy(arr))``: the host tensor is built in the call itself. Not into
        host memory (a pinned staging buffer, a CPU tensor, a pageable field: decided at the class's end)."""
        dest = strip(call.func.value)
        while type(dest) is cst.Subscript:
            dest = dest.value
        if on_host(dest, ctx.oracle):
            return
        root = source
        while type(root) is cst.Call and not is_factory_call(root, ctx.imports, ctx.oracle.default_device) \
                and type(root.func) is cst.Attribute:
            root = root.func.value
        name = resolve(root.func, ctx.imports) + "(...)" if type(root) is cst.Call else "a host tensor"
        attr = ctx.oracle.is_self_attr(dest)
        if attr is None:
            ctx.report(self.rule, call, name)
        else:
            self.uses[PAGEABLE_SOURCE].append((ctx.defer(self.rule, call, name), attr))

    def note_field(self, target: cst.BaseExpression, value: cst.BaseExpression, ctx: MatchContext) -> None:
        """``self.w = ...`` in a method: what it says of where the field lives (:mod:`..loadedfields`)."""
        if type(target) is not cst.Attribute or ctx.oracle.cls is None:
            return  # most assignments bind a name
        attr = ctx.oracle.is_self_attr(target)
        if attr is None or not ctx.class_name:
            return
        found = binding(attr, value, ctx.oracle.fn.params, ctx.oracle, ctx.imports)
        self.loaded.note(ctx.class_name.rpartition(".")[2], ctx.function_name, attr, found)

    def other_field(self, call: cst.Call, ctx: MatchContext) -> None:
        """``self.w.copy_(other.w)``, ``other`` a parameter annotated with a class (decided once both
        classes are read to their end)."""
        source = strip(call.args[0].value)
        dest_attr = ctx.oracle.is_self_attr(strip(call.func.value))
        if type(source) is not cst.Attribute or type(source.value) is not cst.Name or dest_attr is None \
                or not ctx.class_name:
            return
        owner = ctx.oracle.fn.param_classes.get(source.value.value)
        if owner is None or source.value.value not in ctx.oracle.fn.params:
            return
        name = f"{source.value.value}.{source.attr.value}"
        self.field_uses.append((ctx.defer(self.rule, call, name), owner, source.attr.value,
                                ctx.class_name.rpartition(".")[2], dest_attr))

    def device_copy(self, call: cst.Call, ctx: MatchContext) -> None:
        """``x.to(<variable device>)`` of a tensor this function built on the host; ``self.x.to(dev,
        non_blocking=True)`` / ``.to(device=dev)`` of a pageable attribute (decided at the class's end)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to"):
            return
        if self.moves_to_device(call, ctx) and is_pageable(func.value, ctx.oracle):
            root = func.value
            while isinstance(root, (cst.Subscript, cst.Call)) and not is_factory_call(root, ctx.imports, ctx.oracle.default_device):
                root = root.value if isinstance(root, cst.Subscript) else root.func
                root = root.value if isinstance(root, cst.Attribute) else root
            name = root.value if isinstance(root, cst.Name) else resolve(root.func, ctx.imports) + "(...)" \
                if isinstance(root, cst.Call) else "a host tensor"
            ctx.report(self.rule, call, _source_name(func.value, name, ctx.imports))
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
        return device is not None and (device_kind(device, ctx) == "other" or device_field(device))

    def end_class(self, ctx: MatchContext) -> None:
        host_attrs = ctx.oracle.cls.pageable_attrs if ctx.oracle.cls is not None else set()
        if ctx.oracle.cls is not None and ctx.class_name:
            self.loaded.finish(ctx.class_name.rpartition(".")[2], ctx.oracle.cls.pinned_attrs, host_attrs)
        waiting = []
        for use in self.field_uses:
            decided = self.loaded.pageable_copy(*use[1:])
            if decided is None:
                waiting.append(use)
            elif decided:
                ctx.emit(use[0])
        self.field_uses = waiting
        pinned = ctx.oracle.cls.pinned_attrs if ctx.oracle.cls is not None else set()
        for attr, pending in self.uses.items():
            if attr == PAGEABLE_SOURCE:
                for report, destination in pending:
                    if destination not in host_attrs and destination not in pinned:
                        ctx.emit(report)
            elif attr in host_attrs:
                for report, destination in pending:
                    if destination not in host_attrs:  # host to host is no transfer
                        ctx.emit(report)
        self.uses = defaultdict(list)


def _source_name(source: cst.BaseExpression, root: str, imports: dict[str, str]) -> str:
    """What the message names: the root tensor, or the call or item that gave it when that is no
    view or cast of it (``tree.ancestors(...)``, ``data["tokens"]``)."""
    node = source
    while type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in KEEP_DEVICE:
        node = node.func.value
    if type(node) is cst.Subscript and type(node.value) is cst.Name and len(node.slice) == 1 \
            and type(node.slice[0].slice) is cst.Index and type(node.slice[0].slice.value) is cst.SimpleString:
        return f"{node.value.value}[{node.slice[0].slice.value.value}]"
    if type(node) is cst.Call and not (resolve(node.func, imports) or "torch.").startswith("torch."):
        return f"{dotted_name(node.func)}(...)"
    return root


def device_field(node: cst.BaseExpression) -> bool:
    """``self._pytorch_device``, ``cfg.model_device``: a field named as a device is, as a local of that
    name is (:data:`.device_copy.DEVICE_NAMES`); not one named for the host (``self.cpu_device``)."""
    name = node.attr.value.lower() if isinstance(node, cst.Attribute) else ""
    return any(fnmatchcase(name, p) for p in DEVICE_NAMES) and "cpu" not in name and "host" not in name
