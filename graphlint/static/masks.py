"""Boolean masks the tensor oracle cannot see from operators alone.

- ``torch.tensor(flags, dtype=torch.bool, device=...)`` (any torch factory given ``dtype=torch.bool``):
  a mask built on the host, a boolean tensor like a comparison's result;
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
