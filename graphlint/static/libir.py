"""Library calls whose value the IR keeps although their module is opaque (:mod:`.flowir`).

Calls of the standard library are dropped when a file is summarized (their results hold nothing
tracked), except these, whose result is a project value or a container of them:

- ``dataclasses.field(default=x)`` / ``field(default_factory=f)`` in a dataclass body: the field's
  default is ``x``, or what calling ``f`` makes (``field(default_factory=dict)``: a dict of its
  own, which ``self.models[arch] = cls`` then fills -- without it the store reached no container);
- ``pkgutil.iter_modules`` / ``walk_packages``: the modules of a package (:mod:`.pkgscan`).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import resolve
from graphlint.static.pkgscan import SCANS, scan_ir

FIELDS = frozenset(("dataclasses.field",))


def library_ir(node: cst.Call, imports: dict[str, str], expr, union) -> tuple[bool, tuple | None]:
    """(handled, IR) of a call of one of the library functions above; ``expr`` and ``union`` are
    the IR builder's."""
    name = resolve(node.func, imports)  # ``field`` of ``from dataclasses import field``: dataclasses.field
    if name in SCANS:
        return True, scan_ir(node, SCANS[name], expr)
    if name in FIELDS:
        named = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        default = expr(named["default"]) if "default" in named else None
        factory = expr(named["default_factory"]) if "default_factory" in named else None
        return True, union((default, ("c", factory, (), ()) if factory is not None else None))
    return False, None
