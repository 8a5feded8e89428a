"""Lazy initialisation of a field of an object the function is handed: ``if model.freqs is None:
model.freqs = build(...)`` in a functional forward taking ``model``. :mod:`.runonce` makes
``if self.x is None: self.x = ...`` set-up in the walker, where the class is at hand; for another
object's field the walker cannot know whether anything sets the field back to ``None``, so it tags
the branch (its calls' ``once`` and its reports' ``once:`` flag: "lazy:<field>") and the linker
decides with every file's stores (:attr:`.facts.ModuleInfo.none_resets`).

The branch runs once per object when (1) its test is ``p.x is None`` for a parameter ``p`` (an
object that outlives the call; a local built in the function would be fresh every call), (2) its
body stores ``p.x``, and (3) no analysed code stores ``None`` into a field named ``x`` outside a
constructor (by name, over every object: a ``reset()`` that clears the cache makes the branch
per-step again). Then what the branch calls and reports is set-up, as for ``self``. Not
covered: a caller that builds the object anew every step (the same hole as ``self``'s)."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import none_compared, preorder

LAZY = "lazy:"


def lazy_field(stmt: cst.If, params) -> str | None:
    """"lazy:x" for ``if p.x is None: ...; p.x = v`` with ``p`` a parameter other than self/cls."""
    left = none_compared(stmt.test)
    if type(left) is not cst.Attribute or type(left.value) is not cst.Name:
        return None
    owner, attr = left.value.value, left.attr.value
    if owner in ("self", "cls") or owner not in params:
        return None
    stored = any(type(node) in (cst.AssignTarget, cst.AnnAssign) and type(node.target) is cst.Attribute
                 and type(node.target.value) is cst.Name and node.target.value.value == owner
                 and node.target.attr.value == attr for node in preorder(stmt.body))
    return LAZY + attr if stored else None


def settled(infos: list) -> frozenset[str]:
    """The "lazy:x" tags of the analysed files whose field ``x`` nothing sets back to ``None``."""
    tags = {c.once for info in infos for fn in info.functions.values() for c in fn.calls if c.once.startswith(LAZY)}
    tags |= {f[5:] for info in infos for cand in info.candidates for f in cand.flags if f.startswith("once:" + LAZY)}
    if not tags:
        return frozenset()
    resets = set().union(*(info.none_resets for info in infos))
    return frozenset(tag for tag in tags if tag[len(LAZY):] not in resets)
