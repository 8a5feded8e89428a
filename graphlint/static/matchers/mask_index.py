"""``x[mask]`` with a boolean tensor mask: the result's length is the number of True values,
which the host must read back (a sync) and which changes from step to step (no fixed graph).
Masked *writes* of a Python number (``x[mask] = 0``) are fine: PyTorch turns them into
``masked_fill_``. A write of a device tensor (``x[mask] = t.min()``, ``x[mask] = y[mask]``) is not:
``index_put_`` takes the masked-fill shortcut only for a value on the host, and otherwise turns the
mask into indices with ``nonzero`` -- the same read-back. Masks the operators do not show
(``dtype=torch.bool`` factories, ``meta.keep_mask`` fields): :mod:`graphlint.static.masks`; in a
write, a comparison that is a tensor's whole index (``x[m == 0] = v``) is one too (a Python bool
there would index nothing useful).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor
from graphlint.static.masks import compares, is_mask_field, mask_param
from graphlint.static.matchers.base import Matcher, MatchContext


def _mask(node: cst.Subscript, ctx: MatchContext, written: bool) -> bool:
    """``node`` indexes a tensor with one boolean mask."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    index, oracle = node.slice[0].slice.value, ctx.oracle
    if oracle.is_bool_tensor(index):
        return True
    if mask_param(index, oracle.fn.params):  # what a selector parameter indexes is device data (a list takes no mask)
        return not (oracle.is_host_value(node.value) or oracle.is_list_value(node.value))
    guessed = is_mask_field(index) or compares(index, oracle.fn.compared) and not isinstance(index, cst.Comparison) \
        or (written and isinstance(index, cst.Comparison) and not any(
        isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in index.comparisons))
    return guessed and oracle.is_tensor(node.value)


class MaskIndex(Matcher):
    kind = "mask-index"
    node_types = ("Subscript", "Assign")

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if type(node) is cst.Assign:
            value = node.value
            if not ctx.oracle.is_tensor(value) or is_cpu_tensor(value, ctx.oracle):
                return
            for target in node.targets:
                if type(target.target) is cst.Subscript and _mask(target.target, ctx, written=True):
                    ctx.report(self.rule, target.target, "boolean mask write of a tensor")
                    return
            return
        if not ctx.is_store_target(node) and _mask(node, ctx, written=False):
            ctx.report(self.rule, node, "boolean mask")
