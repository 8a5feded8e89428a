"""``x[mask]`` with a boolean tensor mask: the result's length is the number of True values,
which the host must read back (a sync) and which changes from step to step (no fixed graph).
Masked *writes* (``x[mask] = 0``) are fine: PyTorch turns them into ``masked_fill_``. Masks the
operators do not show (``dtype=torch.bool`` factories, ``meta.keep_mask`` fields): :mod:`graphlint.static.masks`.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.masks import is_mask_field
from graphlint.static.matchers.base import Matcher, MatchContext


class MaskIndex(Matcher):
    kind = "mask-index"
    node_types = ("Subscript",)

    def visit(self, node: cst.Subscript, ctx: MatchContext) -> None:
        if ctx.is_store_target(node) or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index):
            return
        if ctx.oracle.is_bool_tensor(index.value) or (is_mask_field(index.value) and ctx.oracle.is_tensor(node.value)):
            ctx.report(self.rule, node, "boolean mask")
