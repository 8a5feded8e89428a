"""Boolean masks the tensor oracle cannot see from operators alone.

- ``torch.tensor(flags, dtype=torch.bool, device=...)`` (any torch factory given ``dtype=torch.bool``):
  a mask built on the host, a boolean tensor like a comparison's result;
- ``x[m]`` with ``m = ids == tok`` (``compares``): an element-wise comparison bound to a name and
  then used as a tensor's whole index is a mask whatever the oracle knows of ``ids`` (an untyped
  parameter of a helper): a Python bool would only add a dimension, which no code indexes for;
  so is a column or row of one picked by slices and integers (``x[m[:, 0]]``);
- ``x[audio_out_mask]`` with ``audio_out_mask`` a parameter named like a selector (``mask_param``),
  as a field below;
- ``x[meta.keep_mask]``: an attribute of another object (a step's metadata record, a dataclass
  field) named ``*mask``, indexing a tensor. Decided by the name because such records are typed in
  other files; a selector is what a tensor index named ``mask`` is (indexing with a float mask
  fails). Attention masks (``attn``/``attention`` in the name: additive or 0/1 inputs, never
  selectors) and ``self``'s own attributes (whose binding the class shows) are left out.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import resolve


def made_bool(call: cst.Call, imports: dict[str, str]) -> bool:
    """A torch factory called with ``dtype=torch.bool``."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return resolve(arg.value, imports) == "torch.bool" and (resolve(call.func, imports) or "").startswith("torch.")
    return False


def is_mask_field(node: cst.BaseExpression) -> bool:
    """``meta.keep_mask`` / ``self.metadata.to_cache_mask``, not ``self.mask`` nor an attention mask."""
    if not isinstance(node, cst.Attribute):
        return False
    name = node.attr.value.lower()
    if not name.endswith("mask") or "attn" in name or "attention" in name:
        return False
    return not (isinstance(node.value, cst.Name) and node.value.value == "self")


#: element-wise comparisons (not ``is``/``in``: those are Python's own)
ELEMENTWISE = (cst.Equal, cst.NotEqual, cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)


def compares(node: cst.BaseExpression, compared: set[str]) -> bool:
    """``ids == tok``, ``(a != x) & (a != y)``, ``~m`` of such: an element-wise comparison."""
    if type(node) is cst.Comparison:
        return all(type(c.operator) in ELEMENTWISE for c in node.comparisons)
    if type(node) is cst.UnaryOperation:
        return type(node.operator) is cst.BitInvert and compares(node.expression, compared)
    if type(node) is cst.BinaryOperation and type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor):
        return compares(node.left, compared) and compares(node.right, compared)
    if type(node) is cst.Subscript:  # ``m[:, 0]``: a column of such a mask is one too
        return type(node.value) is cst.Name and node.value.value in compared and all(
            type(el.slice) is cst.Slice or type(el.slice.value) is cst.Integer for el in node.slice)
    return type(node) is cst.Name and node.value in compared


def mask_param(node: cst.BaseExpression, params: set[str]) -> bool:
    """A parameter named like a selector (``audio_out_mask``, ``keep_mask``; not an attention mask)."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        node = node.expression
    if not isinstance(node, cst.Name) or node.value not in params:
        return False
    name = node.value.lower()
    return name.endswith("_mask") and "attn" not in name and "attention" not in name
