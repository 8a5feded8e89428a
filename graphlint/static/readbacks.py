"""Host copies of device data: what a read-back is, and loops that it filters.

``t.item()``, ``t.tolist()`` and ``int(t)`` copy device data into Python values (each is a
host-sync finding of its own). Names bound from them, and host values computed from those
names (``for c in counts``, ``offset += c``), are *read-backs* (``FunctionFacts.readbacks``):
their use as an index, a branch or a size is data-dependent control flow that a CUDA graph
would freeze (GL311-GL313). In a loop over data read back before it, ``if <read-back>:`` makes
the loop's own targets read-backs inside its branches, and for the rest of the body when it only
skips (``if count == 0: continue``): which ``expert`` reaches ``w[expert]`` is the data's choice,
and so is the op the graph would record (:func:`iterations_chosen`).
"""

from __future__ import annotations

from typing import Any, Protocol

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.names import is_imported_root

READBACK_METHODS = frozenset(("item", "tolist"))
#: ``int(t)``; and the builtins that iterate a tensor reading each element (``all(done)``, ``max(t)``)
READBACK_CASTS = frozenset(("int", "float", "bool", "all", "any", "max", "min"))


class TensorFacts(Protocol):
    """What these questions ask of :class:`graphlint.static.tensors.TensorOracle` (which calls them)."""

    imports: dict[str, str]
    fn: Any  # the current function's facts: its ``readbacks``

    def is_tensor(self, node: cst.BaseExpression) -> bool: ...

    def uses(self, node: cst.CSTNode, names: set[str]) -> bool: ...


def is_readback(node: cst.CSTNode, oracle: TensorFacts) -> bool:
    """``t.item()``, ``t.tolist()``, ``int(t)``, ``any(t)``: device data copied into a Python value.

    ``.item()``/``.tolist()`` count on any receiver, as the host-sync rules do, but a name a device
    test left off CUDA (:mod:`.devicenarrow`)."""
    if type(node) is not cst.Call:
        return False
    func = node.func
    if type(func) is cst.Attribute:
        return func.attr.value in READBACK_METHODS and not is_imported_root(func.value, oracle.imports) \
            and not (type(func.value) is cst.Name and func.value.value in oracle.fn.off_cuda)
    return (
        type(func) is cst.Name and func.value in READBACK_CASTS and len(node.args) == 1
        and oracle.is_tensor(node.args[0].value)
    )


def iterations_chosen(stmt: cst.If, loop: tuple | None, oracle: TensorFacts) -> set[str]:
    """The loop's target names that ``if <read-back>:`` makes data-chosen (those not read-backs yet).

    ``loop``: the innermost ``for``'s target and the read-back names there were when it began. Only
    a test on data read back *before* the loop chooses its iterations: the loop then walks a host
    copy of device data (``for e, c in enumerate(counts.tolist()): if c == 0: continue``, a host-side
    ``nonzero``), so its index is a position in that data. A test on a value the iteration reads back
    itself (``seq = tokens[k].tolist(); if seq[-1] >= begin: logits[k, begin:] = ...``) leaves the
    index what it is -- the row the loop visits whatever the data says: the per-row read is reported
    where it happens and the branch as GL312, and an index by the row number is no device data."""
    readbacks = oracle.fn.readbacks
    if loop is None or not readbacks:
        return set()
    target, walked = loop
    if not walked or not oracle.uses(stmt.test, walked & readbacks):
        return set()
    return {n.value for n in preorder(target) if type(n) is cst.Name and n.value not in readbacks}


def only_skips(stmt: cst.If) -> bool:
    """``if ...: continue`` (or ``break``) with no ``else``: it guards the rest of the loop body too."""
    if stmt.orelse is not None:
        return False
    body = [s for line in stmt.body.body for s in (line.body if isinstance(line, cst.SimpleStatementLine) else (line,))]
    return bool(body) and all(isinstance(s, (cst.Continue, cst.Break)) for s in body)
