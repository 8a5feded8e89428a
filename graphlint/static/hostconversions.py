"""A field its own read converts to a host value, once: ``rcp = self.rcp.item(); del self.rcp;
self.rcp = rcp`` on a layer's first forward (under its one-time set-up flag), then ``self.rcp`` handed
to the kernel wrapper every step. The buffer is gone after the conversion: every later read of the
field in that function is the Python number, never the tensor the class registered (a
``register_buffer`` elsewhere keeps the field a tensor for the class, and for the rest of this
function before the conversion).

Only where the conversion runs before every later read of the function: at its top level (not in a
branch or a loop), or in a block that runs once (a one-time flag, a lazy set-up), whose later calls
find the field converted already. The value must be the field's own read (``self.f.item()``,
``.tolist()``, ``int(self.f)``, or a local bound to one): a conversion, not any host value stored
over a tensor field, which another store may undo.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import self_attr
from graphlint.static.tensorfacts import FunctionFacts

READS = frozenset(("item", "tolist"))
CASTS = frozenset(("int", "float", "bool"))


def host_read_of(value: cst.BaseExpression | None, fn: FunctionFacts) -> str | None:
    """The ``self`` field ``value`` reads to the host, or None."""
    if type(value) is cst.Name:
        return fn.host_reads.get(value.value)
    if type(value) is not cst.Call:
        return None
    func = value.func
    if type(func) is cst.Attribute and func.attr.value in READS and not value.args:
        return self_attr(func.value)
    if type(func) is cst.Name and func.value in CASTS and len(value.args) == 1:
        return self_attr(value.args[0].value)
    return None


def note_conversion(target: cst.BaseExpression, value: cst.BaseExpression | None, fn: FunctionFacts,
                    settled: bool) -> None:
    """One binding: a local holding a field's host read, or the field stored back as it (``settled``:
    the binding runs before every later statement of the function, or in a block that runs once)."""
    if type(target) is cst.Name:
        field = host_read_of(value, fn)
        if field is not None:
            fn.host_reads[target.value] = field
        else:
            fn.host_reads.pop(target.value, None)
        return
    attr = self_attr(target)
    if attr is None:
        return
    if settled and host_read_of(value, fn) == attr:
        fn.converted.add(attr)
    else:
        fn.converted.discard(attr)
