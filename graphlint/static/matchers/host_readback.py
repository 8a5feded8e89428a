"""``host_buf.copy_(device_tensor)`` without ``non_blocking=True``: a device-to-host copy that waits.

A copy into host memory -- pinned (``pin_memory=True``, ``.pin_memory()``) or placed with
``device="cpu"`` -- from a tensor on the device is ``cudaMemcpyAsync`` followed by a
stream synchronize unless ``non_blocking=True`` is given (``copy_kernel_cuda``'s ``memcpy_and_sync``):
the same wait as ``.cpu()``, spelled as an in-place copy. An offloading engine that hands a query to
CPU attention this way syncs once per layer per token.

The destination must be known host memory (:mod:`..staging`, :mod:`..cputensors`: a local bound to
one, a field every store of which is one, or a ``self`` field pinned somewhere in its class or stored
only host tensors there, decided when the class is read to its end) and the source a known tensor
that is not (host to host moves nothing from the device). A buffer made by a factory with no device
is not taken for host memory here: a runner that sets a default device
(``torch.set_default_device("cuda")``) elsewhere builds it on the GPU, and a static buffer filled in
the step is the commonest ``copy_`` there is. ``non_blocking=True`` (keyword, or the second
positional argument) is the asynchronous copy the fix recommends.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor, on_host
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import keyword, positional
from graphlint.static.pageable import in_host_memory


def _blocking(call: cst.Call) -> bool:
    """No ``non_blocking=`` (or a literal ``False``), keyword or second positional."""
    args = positional(call)
    flag = keyword(call, "non_blocking") or (args[1] if len(args) > 1 else None)
    return flag is None or type(flag) is cst.Name and flag.value == "False"


class HostReadback(Matcher):
    kind = "host-readback-copy"
    node_types = ("Assign", "Call")

    def setup(self, params: dict) -> None:
        #: ``self`` fields copied into, waiting for the class's end: field -> pending reports
        self.fields: dict[str, list] = defaultdict(list)
        #: ``self`` fields stored a host tensor (``device="cpu"``, ``.cpu()``), and stored anything else
        self.host_stores: set[str] = set()
        self.other_stores: set[str] = set()

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"method": frozenset({"copy_"})}

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if type(node) is cst.Assign:
            for target in node.targets:
                attr = ctx.oracle.is_self_attr(target.target)
                if attr is not None:
                    (self.host_stores if is_cpu_tensor(node.value, ctx.oracle) else self.other_stores).add(attr)
            return
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "copy_" or not node.args or not _blocking(node):
            return
        source = node.args[0].value
        if not ctx.oracle.is_tensor(source) or in_host_memory(source, ctx.oracle) \
                or ctx.oracle.is_host_data(source):
            return
        dest = func.value
        while type(dest) is cst.Subscript:  # ``self.staging[:n].copy_(x)``: a view of the buffer
            dest = dest.value
        if on_host(dest, ctx.oracle):
            ctx.report(self.rule, node, ".copy_()")
            return
        attr = ctx.oracle.is_self_attr(dest)
        if attr is not None and ctx.oracle.cls is not None:
            self.fields[attr].append(ctx.defer(self.rule, node, ".copy_()"))

    def end_class(self, ctx: MatchContext) -> None:
        cls = ctx.oracle.cls
        if cls is not None:
            for attr, pending in self.fields.items():
                if attr in cls.pinned_attrs or attr in self.host_stores and attr not in self.other_stores:
                    for report in pending:
                        ctx.emit(report)
        self.fields = defaultdict(list)
        self.host_stores, self.other_stores = set(), set()
