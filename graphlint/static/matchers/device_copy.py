"""``.to(<device>)`` mid-step: a copy to another GPU or from the host.

``target: literal`` -- a hard-coded CUDA device (``"cuda:1"``, ``f"cuda:{i}"``, ``"cuda"``), wherever
it runs in the hot path. ``target: other`` -- another tensor's or a variable device
(``.to(t.device)``, ``.to(dev)``), only where it is a per-layer cross-GPU hop: inside a loop over
sub-modules (``for layer in self.layers``), with a device taken from a loop's item
(``for layer in layers: layer(x.to(layer.weight.device))``), or with a device picked per layer
(``device = self.layer_devices[i]``, ``.to(devices[i])``). A per-token ``while``/``range`` loop
is no layer loop, and ``.to(result.device)`` in a loop over masks hops nowhere.
Elsewhere it is usually a no-op on a single device. ``target: host`` -- ``.to("cpu")``, a
device-to-host copy like ``.cpu()``. A dtype (``.to(torch.bfloat16)``) is none of them.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from graphlint.rules import RuleError
from graphlint.static.cputensors import on_host
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import keyword, positional
from graphlint.static.names import dotted_name, is_imported_root, resolve

DEVICE_NAMES = ("device", "dev", "*_device", "*_dev", "device_*")


def device_kind(node: cst.BaseExpression, ctx: MatchContext) -> str | None:
    if isinstance(node, cst.SimpleString):
        text = node.value.strip("rbuRBU").strip("'\"")
        return "literal" if text.startswith("cuda") else "host" if text.split(":")[0] == "cpu" else None
    if isinstance(node, cst.FormattedString):
        first = node.parts[0] if node.parts else None
        return "literal" if isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda") else None
    if isinstance(node, cst.Attribute) and node.attr.value == "device":
        return "other"
    if isinstance(node, cst.Name) and any(fnmatchcase(node.value, p) for p in DEVICE_NAMES):
        return "other"
    if isinstance(node, cst.Subscript) and device_kind(node.value, ctx) is None:
        name = dotted_name(node.value) or ""
        return "other" if "device" in name.rsplit(".", 1)[-1] else None
    if isinstance(node, cst.Call) and resolve(node.func, ctx.imports) == "torch.device":
        args = positional(node)
        return device_kind(args[0], ctx) if args else None
    return None


def _picked(device: cst.BaseExpression, ctx: MatchContext) -> bool:
    if isinstance(device, cst.Subscript):
        return True
    return isinstance(device, cst.Name) and device.value in ctx.oracle.fn.picked_devices


class DeviceCopy(Matcher):
    kind = "device-copy"
    node_types = ("Call",)
    params = {"target": str}

    def setup(self, params: dict) -> None:
        self.target = params.get("target", "literal")
        if self.target not in ("literal", "other", "host"):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: target must be 'literal', 'other' or 'host'")

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"method": frozenset({"to"})}

    def visit(self, node: cst.Call, ctx: MatchContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "to" or is_imported_root(func.value, ctx.imports):
            return
        args = positional(node)
        device = keyword(node, "device") or (args[0] if args else None)
        if device is None or device_kind(device, ctx) != self.target:
            return
        if self.target == "host" and on_host(func.value, ctx.oracle):
            return  # already on the host: ``.to("cpu")`` copies nothing from the device
        if self.target == "other" and not (ctx.module_loops or _picked(device, ctx)
                                           or ctx.oracle.uses(device, ctx.item_names)):
            return  # a loop over layers, or the item's own device: a hop per layer; ``.to(result.device)`` is not
        ctx.report(self.rule, node, ".to()")
