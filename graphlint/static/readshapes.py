"""Small shapes of reads the step-result analysis asks about (:mod:`.stepflow`, :mod:`.stepresult`).

- what an assignment binds from a read under host conversions (``x.cpu().numpy()``);
- a custom op (``torch.ops.ns.op``), which writes the buffers it is handed;
- the earlier names of the step's result a read in a function the loop calls was computed from.
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


def result_sources(cand, fn, origin: frozenset[str], read_at: set[int]) -> set[str]:
    """The names the read's data was computed from earlier in ``fn``, back to (not past) the step's
    result as ``fn`` received it (``origin``): every name between is the same result."""
    from graphlint.static.stepflow import derived  # stepflow imports this module

    earlier = [d for d in fn.derives if d[0] < cand.order and d[0] not in read_at]
    same = derived(set(origin), earlier)
    out, todo = set(), list(cand.reads)
    while todo:
        name = todo.pop()
        for _, target, sources in earlier:
            if target == name:
                new = [n for n in sources if n in same and n not in out]
                out.update(new)
                todo.extend(new)
    return out
