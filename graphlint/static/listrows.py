"""Lists of Python lists: what iterating one binds is host data; a tensor's host copy as a list.

``rows = []``, then ``rows.append(ids[k:])`` / ``rows.append([])`` per request, then ``for row in
rows: buf[i, :len(row)] = torch.tensor(row, device=d)`` -- a pageable upload per row per token.
The oracle knows ``rows`` is a list; its elements are unknown (a list of tensors is common). A list
display or comprehension appended to it (``rows.append([])``, ``rows.append([t for t in ids])``)
says what its elements are: a list holds one kind of element, so each is a Python list, host data
(``FunctionFacts.row_lists``, reset when the name is bound again). A list only ever given unknown
values stays unknown: prefer missing to a false error.

``top = idx.tolist()`` binds a Python list (:func:`copied_list`) when ``idx`` is a name not known
0-dim (``.tolist()`` of a 0-dim tensor is one number): indexing a device tensor with it (``x[top]``,
an expert's rows per token) builds an index tensor on the host and uploads it (GL208).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder

_DISPLAYS = (cst.List, cst.ListComp)


def note_rows(oracle, call: cst.Call) -> None:
    """``rows.append([...])`` on a name the oracle holds for a list: its elements are Python lists."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value in ("append", "insert") and type(func.value) is cst.Name \
            and func.value.value in oracle.fn.lists and call.args and type(call.args[-1].value) in _DISPLAYS:
        oracle.fn.row_lists.add(func.value.value)


def bind_row(oracle, target: cst.BaseExpression, iterable: cst.BaseExpression) -> bool:
    """``for row in rows`` over a list of Python lists: ``row`` is host data, a list."""
    if type(iterable) is not cst.Name or iterable.value not in oracle.fn.row_lists:
        return False
    fn = oracle.fn
    for node in preorder(target):
        if type(node) is cst.Name:
            fn.tensors.discard(node.value)
            fn.hosts.add(node.value)
            fn.lists.add(node.value)
    return True


def copied_list(value: cst.BaseExpression | None, fn) -> bool:
    """``idx.tolist()`` of a name not known to hold a 0-dim tensor: a Python list."""
    return type(value) is cst.Call and not value.args and type(value.func) is cst.Attribute \
        and value.func.attr.value == "tolist" and type(value.func.value) is cst.Name \
        and value.func.value.value not in fn.scalars


def listed_value(value: cst.BaseExpression | None, oracle) -> bool:
    """A name bound to ``value`` holds a Python list: ``idx.tolist()`` (:func:`copied_list`), or ``[...] if c
    else None`` -- the per-row caches a model hands its blocks, or none: a list wherever it is anything."""
    if type(value) is cst.IfExp:
        arms = (value.body, value.orelse)
        return any(map(oracle.is_list_value, arms)) and all(
            oracle.is_list_value(arm) or type(arm) is cst.Name and arm.value == "None" for arm in arms)
    return copied_list(value, oracle.fn)


def list_indexed(node: cst.Subscript, oracle) -> bool:
    """``lp[i, list(ids)]`` on a name not known a tensor: whether callers hand it a device tensor decides
    an upload (GL208), so :mod:`.valueflow` learns it for such a parameter (``FunctionInfo.reduced_names``)."""
    return type(node.value) is cst.Name and node.value.value not in oracle.fn.tensors and any(
        type(el.slice) is cst.Index and (type(el.slice.value) in _DISPLAYS or oracle.is_list_value(el.slice.value))
        for el in node.slice)
