"""Memoisation guards: a value built on a miss of a keyed cache and stored under the key tested.

A table of pointers or strides is built once per set of weights and kept in a dict that outlives
the call, keyed by what it was built from::

    if key not in _TABLES:                          # the miss runs the body
        _TABLES[key] = torch.tensor(ptrs, device=d)

    if found := _TABLES.get(key):                   # the hit returns; the rest is the miss
        return found
    table = torch.tensor(ptrs, device=d)
    _TABLES[key] = table

Once the value is stored the test takes the hit on every later call with the same key: set-up
(primed on a warm-up call, before any capture), not per-step work -- as :mod:`.runonce`'s lazy
initialisation of a field and :mod:`.growtables`' keyed slots, here under a key that is not a
constant. Sound only where the miss truly stays a miss once: the dict is a module global or a
class attribute (a name the function never binds; a dict made inside the function misses on every
call), the value is stored under the very key tested (the same expression, no name of it rebound
in between), and the key is a name, a constant, an attribute or a tuple of them (no call to
re-evaluate). A key naming a per-step position or a read-back would miss every step: no memo
(:func:`_steady`).

A dict of the object's own (``self._tables``, :func:`object_miss`) is a memo once per object and
key: a layer's per-slot block tables, scratch and state, looked up under the batch's slot tuple or
row count, often through the local the lookup binds (``bt = self.cache.get(k)`` / ``if bt is None:
...; self.cache[k] = bt``). The walker treats its body as a ``self`` field's lazy initialisation
(per step only for an object built every step, :mod:`.perstep`). Its key, and what a local key was
bound to, must name no position, no read-back and no size of the step's data (``x.shape[1]``, which
grows every step in a loop that re-runs the whole sequence).
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from graphlint.static.cstwalk import bound_names, none_compared, preorder, returns_value
from graphlint.static.oncebound import counts, sole_assignments


def _owner(node: cst.BaseExpression, local: set[str]) -> bool:
    """A dict that outlives the call: a name the function never binds, or ``cls.x`` / ``Cls.x``."""
    if type(node) is cst.Name:
        return node.value not in local
    return type(node) is cst.Attribute and type(node.value) is cst.Name and (
        node.value.value == "cls" or node.value.value[:1].isupper())


def _key_ok(key: cst.BaseExpression) -> bool:
    if type(key) in (cst.Name, cst.SimpleString, cst.Integer):
        return True
    if type(key) is cst.Tuple:
        return all(type(e) is cst.Element and _key_ok(e.value) for e in key.elements)
    return type(key) is cst.Attribute and _key_ok(key.value)


def _lookup(node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``d.get(k)`` / ``d[k]`` -> (d, k)."""
    if type(node) is cst.NamedExpr:
        node = node.value
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "get" \
            and len(node.args) == 1 and node.args[0].keyword is None and node.args[0].star == "":
        return node.func.value, node.args[0].value
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
        return node.value, node.slice[0].slice.value
    return None


def _membership(test: cst.BaseExpression, negated: bool) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``k in d`` (``k not in d`` when ``negated``) -> (d, k)."""
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        op = type(test.comparisons[0].operator)
        if op is (cst.NotIn if negated else cst.In):
            return test.comparisons[0].comparator, test.left
    return None


def _miss_test(test: cst.BaseExpression) -> tuple | None:
    """``k not in d``, ``d.get(k) is None``, ``(v := d.get(k)) is None``, ``not d.get(k)`` -> (d, k)."""
    found = _membership(test, True)
    if found is not None:
        return found
    held = none_compared(test)
    if held is not None:
        return _lookup(held)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _lookup(test.expression)
    return None


def _hit_test(test: cst.BaseExpression) -> tuple | None:
    """``k in d``, ``(v := d.get(k)) is not None``, ``v := d.get(k)`` (truthy) -> (d, k)."""
    found = _membership(test, False)
    if found is not None:
        return found
    held = none_compared(test, cst.IsNot)
    if held is not None:
        return _lookup(held)
    return _lookup(test) if type(test) is cst.NamedExpr else None


def _stores(suite: Sequence[cst.CSTNode], owner: cst.BaseExpression, key: cst.BaseExpression) -> bool:
    """``owner[key] = ...`` in ``suite``, no name of ``key`` rebound anywhere in it."""
    names = {n.value for n in preorder(key) if type(n) is cst.Name}
    stored = False
    for line in suite:
        for node in preorder(line):
            kind = type(node)
            if kind in (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
                targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
                if any(names.intersection(bound_names(t)) for t in targets):
                    return False
                if kind is cst.Assign:
                    stored = stored or any(_same_slot(t, owner, key) for t in targets)
    return stored


def _same_slot(target: cst.BaseExpression, owner: cst.BaseExpression, key: cst.BaseExpression) -> bool:
    found = _lookup(target) if type(target) is cst.Subscript else None
    return found is not None and found[0].deep_equals(owner) and found[1].deep_equals(key)


def _checked(found: tuple | None, local: set[str]) -> cst.BaseExpression | None:
    if found is None or not _owner(found[0], local) or not _key_ok(found[1]):
        return None
    return found[1]


def memo_miss(stmt: cst.If, local: set[str]) -> cst.BaseExpression | None:
    """The key of ``if k not in d: d[k] = build()``: the body runs on a miss and stores what it built
    under the key tested (``local``: the names the function binds)."""
    found = _miss_test(stmt.test)
    key = _checked(found, local)
    return key if key is not None and _stores(stmt.body.body, found[0], key) else None


def memo_rest(stmt: cst.If, rest: Sequence[cst.CSTNode], local: set[str]) -> cst.BaseExpression | None:
    """The key of ``if k in d: return d[k]`` (``if v := d.get(k): return v``) when ``rest`` -- what
    runs on the miss -- stores under that key."""
    body = stmt.body.body
    if stmt.orelse is not None or not body or type(body[-1]) is not cst.SimpleStatementLine \
            or type(body[-1].body[-1]) is not cst.Return:
        return None
    found = _hit_test(stmt.test)
    key = _checked(found, local)
    return key if key is not None and _stores(rest, found[0], key) else None


def _object_dict(node: cst.BaseExpression) -> bool:
    """``self.x``: a dict of the object's own, kept across its calls."""
    return type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self"


def _bound_miss(test: cst.BaseExpression, before: cst.CSTNode | None) -> tuple | None:
    """``v is None`` / ``not v`` right after ``v = d.get(k)`` -> (d, k)."""
    held = none_compared(test)
    if held is None and type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        held = test.expression
    if type(held) is not cst.Name or type(before) is not cst.SimpleStatementLine or len(before.body) != 1:
        return None
    bind = before.body[0]
    if type(bind) is not cst.Assign or len(bind.targets) != 1 or type(bind.targets[0].target) is not cst.Name \
            or bind.targets[0].target.value != held.value or type(bind.value) is not cst.Call:
        return None
    return _lookup(bind.value)


#: what a size of the step's data is read with: a key bound from one may change every step
_SIZES = frozenset(("shape", "size", "len", "numel"))


def _steady_local(key: cst.BaseExpression, fn) -> bool:
    """:func:`_steady`, and every value a local name of the key is bound to too (``key = (tag, seq)``,
    ``slots = tuple(r.slot for r in rows)``), none of them a size of data (``n = x.shape[1]``)."""
    if not _steady(key, fn):
        return False
    for name in {n.value for n in preorder(key) if type(n) is cst.Name}:
        for value in sole_assignments(fn, name) if counts(fn)[name] else ():
            if not _steady(value, fn) or any(
                    (type(n) is cst.Attribute and n.attr.value in _SIZES) or (type(n) is cst.Name and n.value in _SIZES)
                    for n in preorder(value)):
                return False
        if counts(fn)[name] and not sole_assignments(fn, name) and name not in fn.params:
            return False  # bound by a loop, an augmented assignment...: may change every step
    return True


def object_miss(stmt: cst.If, before: cst.CSTNode | None, fn) -> bool:
    """A miss of a dict of the object's own that stores under the key tested: ``if k not in self.d:``,
    ``if self.d.get(k) is None:``, or ``v = self.d.get(k)`` (``before``, the statement just before
    the ``if``) and ``if v is None:`` -- its body ``self.d[k] = ...``. Set-up once per object and key."""
    if fn.defn is None or type(stmt.test) not in _TESTS or returns_value(stmt.body):
        return False  # a miss that returns computes the call's result (:func:`.armedcalls.armed_call`)
    found = _miss_test(stmt.test) or _bound_miss(stmt.test, before)
    if found is None or not _object_dict(found[0]) or not _key_ok(found[1]):
        return False
    return _stores(stmt.body.body, found[0], found[1]) and _steady_local(found[1], fn)


def _local(fn) -> set[str] | None:
    """The names the function of ``fn`` (its tensor facts) binds; None at module level."""
    if fn.defn is None:
        return None
    return {name for name, count in counts(fn).items() if count}


def _steady(key: cst.BaseExpression | None, fn) -> bool:
    """A key that names no per-step position and no value read back from the device."""
    return key is not None and not any(
        type(n) is cst.Name and (n.value in fn.positions or n.value in fn.readbacks) for n in preorder(key))


def miss_builds(stmt: cst.If, fn) -> bool:
    """``if k not in d: d[k] = build()`` in the function of ``fn``: its body is set-up."""
    local = _local(fn) if type(stmt.test) in _TESTS and _miss_test(stmt.test) is not None else None
    return local is not None and _steady(memo_miss(stmt, local), fn)


def miss_follows(stmt: cst.If, rest: Sequence[cst.CSTNode], fn) -> bool:
    """``if k in d: return d[k]`` and a ``rest`` that stores ``d[k]``: the rest is set-up."""
    local = _local(fn) if type(stmt.test) in _TESTS and _hit_test(stmt.test) is not None else None
    return local is not None and _steady(memo_rest(stmt, rest, local), fn)


_TESTS = (cst.Comparison, cst.UnaryOperation, cst.NamedExpr)
