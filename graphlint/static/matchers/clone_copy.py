"""``dst[i:j] = src.clone()`` / ``dst.copy_(src.clone())``: a temporary that exists only to be copied.

The write copies ``src`` into ``dst`` anyway; the ``.clone()`` first allocates a whole new tensor
of ``src``'s size and copies it once more, every time the line runs -- in a step that appends the
new tokens' keys and values to a cache, a temporary as large as what it copies, every step. Only
a write into a tensor counts (``lst[i] = t.clone()`` keeps a list element from aliasing ``t``: the
clone is the point there), and only a clone of the whole value (``.clone(memory_format=...)``
changes the layout on purpose).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.names import dotted_name, resolve


def _cloned(node: cst.BaseExpression, ctx: MatchContext) -> cst.BaseExpression | None:
    """What ``node`` clones whole (``x.clone()``, ``torch.clone(x)``), else None. Written into a
    tensor, whatever has a ``.clone()`` is one."""
    if type(node) is not cst.Call:
        return None
    func = node.func
    if type(func) is cst.Attribute and func.attr.value == "clone" and not node.args:
        return func.value
    if resolve(func, ctx.imports) == "torch.clone" and len(node.args) == 1 and node.args[0].keyword is None:
        return node.args[0].value
    return None


def _root(node: cst.BaseExpression) -> str | None:
    """``buf`` of ``buf[..., 1:]``, ``self.k`` of ``self.k[i][:, :n]``: the tensor whose memory it is."""
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value  # ``x.view(...)``: the method's receiver
        else:
            return dotted_name(node)


def _needed(source: cst.BaseExpression, dest: cst.BaseExpression) -> bool:
    """``buf[..., 1:] = buf[..., :-1].clone()``: a shift within one tensor, where the clone keeps the
    read from seeing the write (overlapping memory)."""
    root = _root(source)
    return root is None or root == _root(dest)


class CloneCopy(Matcher):
    kind = "clone-copy"
    node_types = ("Assign", "Call")

    def call_index(self) -> dict[str, frozenset[str]]:
        return {"method": frozenset(("copy_",))}

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if isinstance(node, cst.Call):  # ``dst.copy_(src.clone())``
            func = node.func
            if node.args and isinstance(func, cst.Attribute) and ctx.oracle.is_tensor(func.value):
                source = _cloned(node.args[0].value, ctx)
                if source is not None and not _needed(source, func.value):
                    ctx.report(self.rule, node.args[0].value, ".copy_()")
            return
        source = _cloned(node.value, ctx)
        if source is None:
            return
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Subscript) and ctx.oracle.is_tensor(t.value) and not _needed(source, t):
                ctx.report(self.rule, node.value, "an item assignment")
                return
