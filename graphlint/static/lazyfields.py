"""One-time state of an object the function is handed. Lazy initialisation of its field: ``if model.freqs
is None: model.freqs = build(...)`` in a functional forward taking ``model``. :mod:`.runonce` makes ``if
self.x is None: self.x = ...`` set-up in the walker, where the class is at hand; for another object's
field the walker cannot know whether anything sets the field back to ``None``, so it tags the branch
(its calls' ``once`` and its reports' ``once:`` flag: "lazy:<field>") and the linker decides with every
file's stores (:attr:`.facts.ModuleInfo.field_resets`).

The branch runs once per object when (1) its test is ``p.x is None`` for a parameter ``p`` (an object
that outlives the call; a local built in the function would be fresh every call), (2) its body stores
``p.x``, and (3) no analysed code stores ``None`` into a field named ``x`` outside a constructor (by
name, over every object: a ``reset()`` that clears the cache makes the branch per-step again). Then what
the branch calls and reports is set-up, as for ``self``. Not covered: a caller that builds the object
anew every step (the same hole as ``self``'s).

The same for a one-time flag on a handed object (tag "armed:<flag>"): ``for req in requests: if not
req.prefilled: ...; req.prefilled = True`` -- a request's admission (its reference audio encoded, its
prompt built) runs once per request, before its first step, not per token. The owner is an element a
loop over items binds (a request of the batch, which outlives the step; not a handed object itself,
which may be the step's own batch, built anew every step), not rebound; the branch's own block stores
``True`` into the flag with no jump that could skip it (an arming under ``if tok == eos:`` runs the
branch every step until then); and no analysed code gives a field of that name anything but ``True``
outside a constructor (:attr:`.facts.ModuleInfo.field_resets`; a step that clears the flag makes the
branch per-step again)."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import bound_names, none_compared, preorder

LAZY = "lazy:"
ARMED = "armed:"
JUMPS = (cst.Return, cst.Continue, cst.Break)  # a raise ends the step; a yield resumes after itself


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


def armed_flag(stmt: cst.If, owners, body: cst.CSTNode | None) -> str | None:
    """"armed:x" for ``if not o.x: ...; o.x = True`` (``o.x == False``, ``o.x is False``) with ``o`` one of
    ``owners`` (the loop items in scope), neither self nor cls, that no assignment of the function's
    ``body`` rebinds (``req = Request(...)`` is fresh every call); the arming a statement of the
    branch's own block, with no jump in the branch that could skip it."""
    test = stmt.test
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        left = test.expression
    elif (type(test) is cst.Comparison and len(test.comparisons) == 1
          and type(test.comparisons[0].operator) in (cst.Equal, cst.Is)
          and type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "False"):
        left = test.left
    else:
        return None
    if type(left) is not cst.Attribute or type(left.value) is not cst.Name:
        return None
    owner, attr = left.value.value, left.attr.value
    if owner in ("self", "cls") or owner not in owners or body is None or _rebinds(body, owner):
        return None
    if any(type(node) in JUMPS for node in preorder(stmt.body)):
        return None  # ``if tok != eos: continue`` before the arming: the branch may run again
    armed = any(type(line) is cst.SimpleStatementLine and any(
        type(small) is cst.Assign and type(small.value) is cst.Name and small.value.value == "True"
        and any(type(t.target) is cst.Attribute and type(t.target.value) is cst.Name
                and t.target.value.value == owner and t.target.attr.value == attr for t in small.targets)
        for small in line.body) for line in stmt.body.body)
    return ARMED + attr if armed else None  # armed in an inner ``if tok == eos:``: every step until then


def _rebinds(body: cst.CSTNode, name: str) -> bool:
    """``name = ...`` / ``name, x = ...`` / ``(name := ...)`` anywhere in ``body``."""
    return any(type(node) in (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)
               and name in bound_names(node.target) for node in preorder(body))


def settled(infos: list) -> frozenset[str]:
    """The "lazy:x" tags of the analysed files whose field ``x`` nothing sets back to ``None``, and the
    "armed:x" tags whose flag ``x`` nothing gives another value than ``True``."""
    prefixes = ("once:" + LAZY, "once:" + ARMED)
    tags = {c.once for info in infos for fn in info.functions.values() for c in fn.calls
            if c.once.startswith((LAZY, ARMED))}
    tags |= {f[5:] for info in infos for cand in info.candidates for f in cand.flags if f.startswith(prefixes)}
    if not tags:
        return frozenset()
    resets = set().union(*(info.field_resets for info in infos))
    return frozenset(tag for tag in tags if tag.startswith(LAZY) and tag[len(LAZY):] not in resets) | frozenset(
        tag for tag in tags if tag.startswith(ARMED) and "!" + tag[len(ARMED):] not in resets)
