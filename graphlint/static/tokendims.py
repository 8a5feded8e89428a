"""A token tensor's sequence length, read from its shape: ``input_ids.shape[1]``.

The prefill guards (:mod:`.guards`) compare a step's token count with one token by its name
(``if seqlen > 1:``). The same test is often written on the ids themselves:
``if input_ids.shape[1] == 1:`` / ``if tokens.size(-2) > 1:``. A decode step feeds one token per
sequence, so such a body (or its ``else``) is the prompt's branch. Only tensors named as token ids
count, and only a dimension other than 0: ``input_ids.shape[0] == 1`` is a batch-of-one test
(written that way throughout the labelled engines), and other tensors' dimensions of one are
heads, beams or masks, not positions.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import name_matcher

#: what a token-id tensor is called: ids of the prompt or of the step, not ids of blocks or requests
TOKEN_TENSORS = ("input_ids", "*_input_ids", "token_ids", "input_tokens", "tokens", "position_ids")
_TOKENS = name_matcher(TOKEN_TENSORS)


def token_length(node: cst.BaseExpression) -> bool:
    """``ids.shape[k]`` / ``ids.size(k)`` / ``ids.size()[k]`` with ``k`` a literal other than 0,
    of a tensor named like token ids (``self.input_ids`` too)."""
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
        dim, owner = node.slice[0].slice.value, node.value
        if type(owner) is cst.Attribute and owner.attr.value == "shape":
            owner = owner.value
        elif _size_call(owner) and not owner.args:
            owner = owner.func.value
        else:
            return False
    elif _size_call(node) and len(node.args) == 1:
        dim, owner = node.args[0].value, node.func.value
    else:
        return False
    name = owner.attr.value if type(owner) is cst.Attribute else owner.value if type(owner) is cst.Name else None
    return name is not None and _TOKENS.match(name) is not None and _nonzero_literal(dim)


def _size_call(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "size"


def _nonzero_literal(node: cst.BaseExpression) -> bool:
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        return type(node.expression) is cst.Integer
    return type(node) is cst.Integer and node.evaluated_value != 0
