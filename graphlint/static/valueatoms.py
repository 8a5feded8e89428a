"""The atoms of :mod:`.valuefacts`' IR: a literal, and a configuration field's name."""

from __future__ import annotations

import libcst as cst

#: attribute receivers whose fields are configuration (``config.x``, ``self.cfg.x``, ``args.x``)
CONFIG_NAMES = ("config", "cfg", "conf", "args", "params", "options", "opts", "settings", "hparams")
#: ``nn.Module``'s mode field: False wherever a decode step reads it (the model runs in eval mode)
MODE_FLAG = "training"


def literal(node: cst.BaseExpression | None) -> tuple | None:
    """``("c", v)`` for a literal, else None."""
    if type(node) is cst.Name and node.value in ("None", "True", "False"):
        return ("c", {"None": None, "True": True, "False": False}[node.value])
    if type(node) is cst.SimpleString:
        try:
            return ("c", node.evaluated_value)
        except Exception:  # an f-string prefix or bytes libcst cannot evaluate: no literal
            return None
    if type(node) in (cst.Integer, cst.Float):
        return ("c", node.evaluated_value)
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus \
            and type(node.expression) in (cst.Integer, cst.Float):
        return ("c", -node.expression.evaluated_value)
    return None


def config_field(node: cst.BaseExpression) -> str | None:
    """``config.x``, ``self.config.x``, ``self.x``: the field's name."""
    if type(node) is not cst.Attribute:
        return None
    owner = node.value
    if type(owner) is cst.Name:
        name = owner.value
    elif type(owner) is cst.Attribute:
        name = owner.attr.value
    else:
        return None
    lowered = name.lower().lstrip("_")
    if name == "self" or lowered in CONFIG_NAMES or lowered.endswith(("config", "_cfg", "_args")):
        return node.attr.value
    return None
