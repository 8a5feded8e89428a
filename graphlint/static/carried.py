"""A record's field carried into the next record: ``State(step=step + 1, ...)`` with ``step =
state.step``.

A decode step that hands its state on as a new record passes each field what the old record's
same field held, advanced by a number. Such a store says nothing new about the field -- it holds
what the field held, plus a Python number, so a 0-dim device tensor stays one -- and joins with
what the other constructor calls pass (:meth:`.fieldkinds.FieldKinds._keyword`), where an unknown
store would make the field unknown and the step counter's reads (``buf[:, step]``, an ``item()``
PyTorch runs for a 0-dim integer index) go unseen.

Kept narrow: the argument is a keyword naming the same field, its value that field read off a
local or parameter (directly or through a local last bound to it) with only number literals added
or subtracted; the reader checks that the receiver is an object of the record's own class.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.tensors import TensorOracle, field_spelling

#: an argument kind: ``=<obj>.<field>``, the same field of another object, advanced by a number
CARRY = "="


def note_carried(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle) -> None:
    """``step = state.step``: ``step`` holds that field's value until rebound."""
    if type(target) is not cst.Name:
        return
    spelled = field_spelling(value, oracle.imports, oracle.fn.elements) if type(value) is cst.Attribute else None
    if spelled is not None and "." not in spelled.rpartition(".")[0]:
        oracle.fn.carried[target.value] = spelled
    elif oracle.fn.carried:
        oracle.fn.carried.pop(target.value, None)


def carried_kind(arg: cst.Arg, oracle: TensorOracle) -> str:
    """``=state.step`` for a keyword ``step=`` given ``state.step`` (or a name bound to it) plus or
    minus number literals; "" otherwise."""
    if arg.keyword is None:
        return ""
    value, spelled = arg.value, None
    while type(value) is cst.BinaryOperation and type(value.operator) in (cst.Add, cst.Subtract) \
            and type(value.right) is cst.Integer:
        value = value.left
    if type(value) is cst.Name:
        spelled = oracle.fn.carried.get(value.value)
    elif type(value) is cst.Attribute and type(value.value) is cst.Name:
        spelled = field_spelling(value, oracle.imports, oracle.fn.elements)
    if spelled is None or spelled.rpartition(".")[2] != arg.keyword.value or "." in spelled.rpartition(".")[0]:
        return ""
    return CARRY + spelled


def stored_from_outside(infos, attr: str, memo: dict[str, bool]) -> bool:
    """Some code stores ``obj.<attr> = v`` on an object other than ``self`` (tokasaurus moves its batch
    record's fields to the device so, after building them on the host): the field's constructor calls do
    not say what it holds, and a carry must not hide the one unknown store that kept it unknown."""
    if attr not in memo:
        memo[attr] = any(st[0] in ("=", "set") and st[1][0] == "a" and st[1][2] == attr and st[1][1] != ("n", "self")
                         for info in infos for flow in info.flows.values() for st in flow.stmts)
    return memo[attr]
