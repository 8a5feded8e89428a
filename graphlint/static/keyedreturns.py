"""Returns keyed by a constant argument: a factory that dispatches on a parameter compared with
constants (``if layer_type == OpType.Attention: return AttentionBuilder`` ... twenty more) gives a
call that passes one constant (``get_builder(OpType.Sampling)``) only that branch's value, and the
returns under no such test -- not every class the factory can return.

Without it the factory's return node holds every branch's class, more than the solver's cap, and
is cut in id order: which classes a call on the result reaches then moves with any unrelated
change of the project (one more value numbered earlier), and the call reaches kernels of other
operations. Keyed, the call's result is what Python can return for that argument.

Sound by construction: a return counts as keyed only inside the *body* of an ``if`` whose test is
``param == C``, ``param is C`` or ``param in (C1, C2, ...)`` (either side), ``param`` a parameter the
function never rebinds, each ``C`` a constant -- a member of a class-like name (``OpType.X``,
``mod.Mode.X``: an upper-case base) or a string; an ``else`` / ``elif`` chain's fallback and every
other return stay unkeyed. A call keys only on an argument that is itself such a constant, matched
by the member's name (``.X``) or the string's text: two enums with a member of the same name match
(more targets, never fewer). Members with equal values under different names (aliases, plain int
constants ``A = B = 0``) are the one unsound case, as for any comparison read by name.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder

Key = str


def constant_key(node: cst.BaseExpression) -> Key | None:
    """``OpType.X`` -> ``".X"``, ``"greedy"`` -> ``"'greedy"``; anything else None."""
    if type(node) is cst.Attribute:
        base = node.value
        name = base.value if type(base) is cst.Name else base.attr.value if type(base) is cst.Attribute else ""
        return "." + node.attr.value if name[:1].isupper() else None
    if type(node) is cst.SimpleString:
        text = node.evaluated_value
        return "'" + text if isinstance(text, str) else None
    return None


def ir_key(ir: tuple | None) -> Key | None:
    """The same key for an argument in :mod:`.flowir` form (a call site's)."""
    if ir is None:
        return None
    if ir[0] == "a":
        base = ir[1]
        name = base[1] if base[0] == "n" else base[2] if base[0] == "a" else ""
        return "." + ir[2] if type(name) is str and name[:1].isupper() else None
    if ir[0] == "str":
        return "'" + ir[1]
    return None


def keyed_test(test: cst.BaseExpression, params: tuple[str, ...]) -> tuple[str, frozenset[Key]] | None:
    """(parameter, the constants it equals in the body) of ``if param == C:`` and its kin."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    op, left, right = type(target.operator), test.left, target.comparator
    if op in (cst.Equal, cst.Is) and type(right) is cst.Name and type(left) is not cst.Name:
        left, right = right, left
    if type(left) is not cst.Name or left.value not in params or left.value in ("self", "cls"):
        return None
    if op in (cst.Equal, cst.Is):
        key = constant_key(right)
        return (left.value, frozenset((key,))) if key is not None else None
    if op is cst.In and type(right) in (cst.Tuple, cst.List, cst.Set) and right.elements:
        keys = [constant_key(el.value) for el in right.elements if type(el) is cst.Element]
        if len(keys) == len(right.elements) and None not in keys:
            return left.value, frozenset(keys)
    return None


def handed_on(value: cst.BaseExpression, params: tuple[str, ...]) -> str | None:
    """The parameter ``return f(..., param, ...)`` hands on as it is (a dispatcher's fallback to
    its base's: ``return super().builder(op)``), whose key then picks the callee's returns."""
    if type(value) is cst.Call:
        for arg in value.args:
            if not arg.star and type(arg.value) is cst.Name and arg.value.value in params \
                    and arg.value.value not in ("self", "cls"):
                return arg.value.value
    return None


def bound_in(fn: cst.FunctionDef) -> frozenset[str]:
    """The names that are a binding target somewhere in ``fn``'s body (or declared ``global`` /
    ``nonlocal`` there): one walk per function, however many of its ``if`` tests ask."""
    out: set[str] = set()
    for node in preorder(fn.body):
        kind = type(node)
        if kind in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del):
            target = node.target
        elif kind is cst.AsName:
            target = node.name
        elif kind in (cst.Global, cst.Nonlocal):
            out.update(n.name.value for n in node.names)
            continue
        else:
            continue
        out.update(n.value for n in preorder(target) if type(n) is cst.Name)
    return frozenset(out)


def call_keys(args: tuple, kws: tuple, given: tuple | None = None) -> tuple | None:
    """A call's constant arguments, (positional keys up to the first ``*spread``, ((keyword, key),
    ...)), or None when it passes none; ``given``: (an argument's IR, the key it stands for)."""
    mine, mine_key = given if given is not None else (None, None)
    pos = []
    for a in args:
        if a is not None and a[0] == "*":
            break
        pos.append(mine_key if a == mine else ir_key(a))
    named = tuple((k, key) for k, v in kws if k != "**" and (key := mine_key if v == mine else ir_key(v)) is not None)
    if named or any(k is not None for k in pos):
        return tuple(pos), named
    return None


def result_param(params: tuple[str, ...], keyed: set[str], first: int, keys: tuple) -> tuple[str, Key] | None:
    """(parameter, key) a call with constant arguments ``keys`` (:func:`call_keys`) picks the
    returns of, for a callee whose returns are keyed by ``keyed``; ``first``: the parameter the
    first argument fills."""
    pos, named = keys
    for i, key in enumerate(pos):
        if key is not None and 0 <= first + i < len(params) and params[first + i] in keyed:
            return params[first + i], key
    for name, key in named:
        if name in keyed:
            return name, key
    return None


def keyed_call(linker, path: str, qual: str, ir: tuple, param: str, key: Key) -> int:
    """``return super().builder(op)`` for a caller that passed ``op`` as the constant ``key``: the
    call made again by ``linker`` (:class:`.flowlink.Linker`), its ``op`` keyed."""
    _, func, args, kws = ir
    dst = linker.s.fresh()
    keys = call_keys(args, kws, (("n", param), key))
    linker.o.call(linker.eval(path, qual, func), *linker.arguments(path, qual, args, kws), dst, keys)
    return dst
