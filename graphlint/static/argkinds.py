"""What a call passes each parameter: its arguments' kinds (:mod:`.valuekinds`), in the call site's
summary (``CallSite.kinds``), for :mod:`.valueflow` to agree on across every call of a function.

Its own unit beside :mod:`.valuekinds` (what a value is): which arguments a call site describes and
how -- a parameter of the caller handed on (``^name``), a call's result (``@key#i``), a recursion
slicing its own parameter (``^name[``), a followed dict's keys splatted (:mod:`.splatkinds`).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.carried import carried_kind
from graphlint.static.cstwalk import called_name
from graphlint.static.forwarders import FORWARDED, forwards_own_stars
from graphlint.static.splatkinds import splat_kinds
from graphlint.static.tensors import TensorOracle
from graphlint.static.valuekinds import LIST, NONE, NUMBER, TENSOR, UNKNOWN, WEIGHT, is_number, kind_of, step_kind


def arg_kinds(call: cst.Call, oracle: TensorOracle, own: str = "") -> tuple | None:
    """(positional kinds, ((keyword, kind), ...)) of a call's arguments; None with ``*args`` and when
    no argument is known (a parameter learns nothing from that call either way, and most calls pass
    nothing known: the summaries stay small). A ``**kw`` splat gives the kinds of a followed dict
    (:mod:`.splatkinds`); any other is left out: it can fill no argument the call names or passes by
    position (Python refuses a second value), and a parameter only it may fill is missing, so
    unknown. A Python list is a kind only here, for a
    parameter indexing a tensor (GL208): as a return kind it sent a fifth of torch's files round
    again (measured), for no finding."""
    if forwards_own_stars(call, oracle):
        return FORWARDED
    positional, named = [], []
    for arg in call.args:
        if arg.star == "**" and (splat := splat_kinds(arg.value, oracle, passed_kind)) is not None:
            named.extend(splat)  # ``block(x, **kwargs)`` of a dict display (:mod:`.splatkinds`)
            continue
        if arg.star == "**":
            continue
        if arg.star:
            return None
        kind = value_kind(arg.value, oracle)
        if not kind and own and _slices_own_param(arg.value, call, own, oracle):
            kind = "^" + arg.value.value.value + "["  # ``walk(node, key[n:])`` inside ``walk``: a recursion
        if not kind and arg.keyword is not None and called_name(call.func)[:1].isupper():
            kind = carried_kind(arg, oracle)  # ``State(step=step + 1)``: the old record's field (static.carried)
        if not kind and type(arg.value) is cst.Name:
            kind = "@" + oracle.fn.origins.get(arg.value.value, "")  # "@": nothing known
        if arg.keyword is None:
            positional.append(kind)
        else:
            named.append((arg.keyword.value, kind))
    if not any(k and k != "@" for k in positional) and not any(k and k != "@" for _, k in named):
        return None
    return tuple(positional), tuple(named)


def value_kind(value: cst.BaseExpression, oracle: TensorOracle) -> str:
    """An argument's kind, from its value alone (:func:`arg_kinds`)."""
    if type(value) is cst.Name and value.value == "None":
        return NONE  # no tensor: a truth test of the parameter reads nothing (:mod:`.truthkinds`)
    kind = WEIGHT if type(value) is not cst.Name and oracle.is_weight(value) else \
        kind_of(value, oracle) or (LIST if oracle.is_list_value(value) or _listed(value) else
                                   NUMBER if _sizes(value, oracle) else step_kind(value, oracle)
                                   or (NUMBER if type(value) is cst.Name and value.value in oracle.fn.numbers else UNKNOWN))
    if type(value) is cst.Name and value.value in oracle.fn.params and (
            not kind or value.value in oracle.fn.tensors and kind == TENSOR):
        # the caller's own parameter, passed on: what its callers pass; "!": else a tensor, as its
        # annotation says (an entry point's ``x_lens: Tensor`` that no analysed code calls)
        kind = "^" + value.value + ("!" if kind and value.value not in oracle.fn.presumed else "")
    return kind


def passed_kind(value: cst.BaseExpression, oracle: TensorOracle) -> str:
    """:func:`value_kind`, or ``@`` and the call a name was bound from (nothing known of it)."""
    kind = value_kind(value, oracle)
    return kind if kind or type(value) is not cst.Name else "@" + oracle.fn.origins.get(value.value, "")


def _listed(value: cst.BaseExpression) -> bool:
    """``ids[i].tolist()``: the host copy of a row, a Python list (only an argument's kind)."""
    return type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "tolist" \
        and not value.args


def _slices_own_param(value: cst.BaseExpression, call: cst.Call, own: str, oracle: TensorOracle) -> bool:
    """``key[n:]`` of the caller's parameter, passed to a call of the caller's own name (only
    recursions: marking every slice would grow every summary)."""
    if type(value) is not cst.Subscript or type(value.value) is not cst.Name:
        return False
    if value.value.value not in oracle.fn.params and value.value.value not in oracle.fn.sliced_params:
        return False
    func = call.func
    called = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    return called == own


def _sizes(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """Python sizes, never a tensor: ``x.shape`` / ``x.size()``, or a tuple display of numbers and
    names bound from shapes (``(batch_size, seq_len)`` after ``batch_size, seq_len = ids.shape``).
    Only an argument's kind: as a parameter fact it keeps ``if input_shape[-1] > 1:`` from being
    taken for a device read."""
    if type(node) is cst.Attribute:
        return node.attr.value == "shape"
    if type(node) is cst.Call:
        return type(node.func) is cst.Attribute and node.func.attr.value == "size" and not node.args
    if type(node) is cst.Tuple and node.elements:
        return all(type(el) is not cst.StarredElement and not oracle.is_tensor(el.value)
                   and (is_number(el.value, oracle) or oracle.is_host_data(el.value)
                        or (type(el.value) is cst.Name and el.value.value in oracle.fn.shapes))
                   for el in node.elements)
    return False
