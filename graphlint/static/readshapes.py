"""Small shapes of reads the step-result analysis asks about (:mod:`.stepflow`).

- what an assignment binds from a read under host conversions (``x.cpu().numpy()``);
- a custom op (``torch.ops.ns.op``), which writes the buffers it is handed.
"""

from __future__ import annotations

import libcst as cst

#: what turns a value already on the host into Python or NumPy data: ``t.cpu().numpy()`` binds what ``.cpu()`` read
HOST_CONVERSIONS = frozenset(("numpy", "tolist", "item"))


def binds_read(value: cst.BaseExpression, anchor: cst.CSTNode) -> bool:
    """Whether ``value`` is the read ``anchor``, or it under host conversions (``x.cpu().numpy()``)."""
    while value is not anchor and type(value) is cst.Call and not value.args \
            and type(value.func) is cst.Attribute and value.func.attr.value in HOST_CONVERSIONS:
        value = value.func.value
    return value is anchor


def custom_op(func: cst.BaseExpression) -> bool:
    """``torch.ops.<namespace>.<op>``: a custom kernel, which writes the buffers it is handed."""
    parts = []
    while type(func) is cst.Attribute:
        parts.append(func.attr.value)
        func = func.value
    return type(func) is cst.Name and func.value == "torch" and len(parts) >= 3 and parts[-1] == "ops"
