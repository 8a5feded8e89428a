"""Pinned host staging: the correct way to feed a captured graph from the host.

``torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)`` or ``dev_buf.copy_(pinned,
non_blocking=True)`` is an asynchronous DMA from page-locked memory: no sync, no pageable copy.
In the host step around a replay it is the pattern the rules recommend, so reports on it carry
the flag "pinned" and the linker keeps them silent there (inside a captured region the same line
is still reported: a tensor built from Python data at capture time is frozen into the graph).
"""

from __future__ import annotations

from typing import Any, Protocol

import libcst as cst

COPY_METHODS = ("cuda", "to")


def _keyword_true(call: cst.Call, name: str) -> bool:
    return any(
        a.keyword is not None and a.keyword.value == name and isinstance(a.value, cst.Name) and a.value.value == "True"
        for a in call.args
    )


class PinnedFacts(Protocol):
    """What these questions ask of :class:`graphlint.static.tensors.TensorOracle` (which calls them)."""

    fn: Any  # the current function's facts: its ``pinned`` names
    cls: Any  # the current class's facts (or None): its ``pinned_attrs``

    def is_self_attr(self, node: cst.BaseExpression) -> str | None: ...


def is_pinned_value(node: cst.BaseExpression, oracle: PinnedFacts) -> bool:
    """``torch.empty(n, pin_memory=True)``, ``x.pin_memory()``, a name or ``self.attr`` bound from one,
    a row of a list of them."""
    if type(node) is cst.Call:
        if _keyword_true(node, "pin_memory"):
            return True
        return type(node.func) is cst.Attribute and node.func.attr.value == "pin_memory"
    if type(node) is cst.Name:
        return node.value in oracle.fn.pinned
    attr = oracle.is_self_attr(node)
    if attr is not None:
        return oracle.cls is not None and attr in oracle.cls.pinned_attrs
    if type(node) is cst.Subscript:  # ``self.staging[:n]``: a view of pinned memory
        return is_pinned_value(node.value, oracle)
    if type(node) in (cst.List, cst.Tuple):  # a ring of pinned buffers: each row is one (``self.pins[i]``)
        return bool(node.elements) and all(type(el) is cst.Element and is_pinned_value(el.value, oracle)
                                           for el in node.elements)
    if type(node) is cst.ListComp:  # ``[torch.empty(n, pin_memory=True) for _ in range(8)]``
        return is_pinned_value(node.elt, oracle)
    return False


def is_pinned_staging(call: cst.Call, oracle: PinnedFacts) -> bool:
    """A pinned host tensor built (``torch.tensor(x, pin_memory=True)``) or copied to the device
    asynchronously (``.cuda(non_blocking=True)`` / ``.to(dev, non_blocking=True)`` / ``copy_``)."""
    if _keyword_true(call, "pin_memory"):
        return True
    func = call.func
    if not isinstance(func, cst.Attribute) or not _keyword_true(call, "non_blocking"):
        return False
    if func.attr.value in COPY_METHODS:
        return is_pinned_value(func.value, oracle)
    if func.attr.value == "copy_" and call.args:
        return is_pinned_value(call.args[0].value, oracle)
    return False
