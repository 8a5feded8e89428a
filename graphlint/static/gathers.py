"""A tensor method recognised by its arguments when its receiver is unknown.

``bonus = target.gather(1, idx)`` where ``target`` came back from a call the walk cannot type (an
engine method of another module) and ``idx`` is a tensor: ``gather(dim, index)`` and its kin take a
dimension and a tensor index, a signature only ``torch.Tensor`` has (``torch.distributed.gather``
takes a tensor first, never an integer dimension), so the result is a tensor too.

A reduction given ``dim=`` or ``keepdim=`` (``mask.sum(dim=1)``, ``x.amax(keepdim=True)``) is one as
well: numpy, pandas and the sparse matrices name that argument ``axis``, Python's containers have no
such methods, so the receiver is a tensor and so is the result (``.sum(dim=1).max()``, a 0-dim one).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphlint.static.cstwalk import keyword, number, positional

#: ``x.<method>(dim, index, ...)``: methods of ``torch.Tensor`` that take a dimension and an index tensor
DIM_INDEX_METHODS = frozenset(("gather", "index_select", "scatter", "scatter_add", "scatter_reduce", "index_add",
                               "index_copy", "index_fill", "index_reduce"))


def indexed_by_tensor(call: cst.Call, is_tensor: Callable[[cst.BaseExpression], bool]) -> bool:
    """``x.gather(1, idx)`` / ``x.index_select(dim=0, index=idx)`` with a tensor ``idx``: a tensor."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in DIM_INDEX_METHODS:
        return False
    args = positional(call)
    dim, index = keyword(call, "dim"), keyword(call, "index")
    dim = dim if dim is not None else (args[0] if args else None)
    index = index if index is not None else (args[1] if len(args) > 1 else None)
    return type(number(dim)) is int and index is not None and is_tensor(index)



#: reductions and scans of ``torch.Tensor`` that take ``dim=`` / ``keepdim=``
DIM_REDUCTIONS = frozenset(("sum", "mean", "prod", "any", "all", "amax", "amin", "max", "min", "argmax", "argmin",
                            "cumsum", "cumprod", "count_nonzero", "logsumexp", "softmax", "log_softmax", "norm",
                            "std", "var", "nansum", "nanmean"))


def reduced_over_dim(call: cst.Call) -> bool:
    """``mask.sum(dim=1)`` / ``x.any(keepdim=True)``: a tensor method by its keyword, whatever the receiver."""
    func = call.func
    return type(func) is cst.Attribute and func.attr.value in DIM_REDUCTIONS \
        and any(a.keyword is not None and a.keyword.value in ("dim", "keepdim") for a in call.args)
