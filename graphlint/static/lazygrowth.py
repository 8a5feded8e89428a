"""A cached field grown on a miss: ``if self.pe is not None: if self.pe.size(1) >= n: return`` and then
``self.pe = table.to(x.device)``.

A positional table extended only when an input is longer than the cached one (an ESPnet-style
``extend_pe``) rebuilds it on the host and uploads it when the early return does not take: once per
new maximum length, not every step; later calls return before the upload. Said narrowly: the
function has an ``if`` whose body returns (at any depth, no nested function) and whose test reads
``self.<f>`` (guards nested in that body count: their own tests are read by their own visit), and
the upload's result is stored into that very ``self.<f>``. Only the store is exempt (the upload
rule, :mod:`.matchers.host_copy`); a value uploaded beside it and not kept is still per-call work.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder, self_attr


def guarded_fields(node: cst.If) -> set[str]:
    """The ``self`` fields the test of ``node`` reads, when its body (not its ``else``) returns."""
    if not any(type(n) is cst.Return for n in _body_nodes(node.body)):
        return set()
    return {attr for n in preorder(node.test) if type(n) is cst.Attribute and (attr := self_attr(n)) is not None}


def _body_nodes(suite: cst.BaseSuite):
    stack = [suite]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(node.children)
