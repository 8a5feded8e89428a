"""Per-key values of a local dict a function builds, changes and hands on as ``**d``.

A decode loop builds its model inputs as a dict and splats it: ``inputs = {"input_ids": ids,
**model_kwargs}``, then overwrites keys for the cached steps (``inputs["audio_in_ids"] = None``,
``del inputs["labels"]``, ``inputs.update({"past_key_values": cache})``) and calls ``self(**inputs)``.
What the callee's parameter receives is what the key holds at the splat. The walker keeps each key
as a binding of its own (``inputs['audio_in_ids']``, :func:`pseudo`) in :class:`.valuefacts.ValueFacts`'s
flow-sensitive ``assigns``: a store replaces the key's value on its path, branches merge, a loop
that changes the dict makes its keys unknown at its top, exactly as for a rebound name.

Only a dict every use of which this module follows is kept so (:func:`tracked_keys`): bound only
to displays with string keys (``{"k": v, **other}``, ``dict(k=v, **other)``), stored into, deleted
from and ``update``-d only with literal keys, read, tested with ``in`` and splatted; never passed to
a call, aliased, returned, or used by a nested function. Anything else and the splat is unknown.

What the keys no display or store names hold is the display's *rest* (:data:`REST_NONE` nothing,
:data:`REST_KW` the function's own ``**kwargs`` handed on unchanged, :data:`REST_ANY` anything):
the join over every display of the dict. So a function that is an entry (its ``**model_kwargs``
unknown) hands on unknown values for every key it does not set itself, and the value it sets for
a key it sets on every path to the splat.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder

REST_NONE, REST_KW, REST_ANY = 0, 1, 2
#: the value of a key a ``del`` removed, or that a display without a rest does not hold
ABSENT_VALUE = ("absent",)
#: reading a dict this way changes nothing
_READS = frozenset(("get", "keys", "items", "values", "copy"))
_NESTED = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def pseudo(name: str, key: str) -> str:
    """The binding that holds key ``key`` of the local dict ``name`` (no identifier looks like it)."""
    return f"{name}[{key!r}]"


def literal_key(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.SimpleString:
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def subscript_key(node: cst.BaseExpression, name: str | None = None) -> tuple[str, str] | None:
    """``d["k"]`` -> ("d", "k") (of the dict ``name`` only, when given)."""
    if type(node) is not cst.Subscript or type(node.value) is not cst.Name or len(node.slice) != 1 \
            or type(node.slice[0].slice) is not cst.Index or (name is not None and node.value.value != name):
        return None
    key = literal_key(node.slice[0].slice.value)
    return (node.value.value, key) if key is not None else None


def display_items(node: cst.BaseExpression | None) -> tuple[list[tuple[str, cst.BaseExpression]], list] | None:
    """([(key, value)], [spread expressions]) of ``{"k": v, **x}`` / ``dict(k=v, **x)``; None for
    anything else (a key that is no string literal, a comprehension, a positional ``dict(x)``)."""
    items, spreads = [], []
    if type(node) is cst.Dict:
        for el in node.elements:
            if type(el) is cst.StarredDictElement:
                spreads.append(el.value)
            elif (key := literal_key(el.key)) is not None:
                items.append((key, el.value))
            else:
                return None
        return items, spreads
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "dict":
        for arg in node.args:
            if arg.star == "**":
                spreads.append(arg.value)
            elif arg.keyword is not None and not arg.star:
                items.append((arg.keyword.value, arg.value))
            else:
                return None
        return items, spreads
    return None


def _update_displays(call: cst.Call) -> list | None:
    """The displays ``d.update(...)`` merges in: one, or either arm of ``a if c else b``."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    arg = call.args[0].value
    arms = [arg.body, arg.orelse] if type(arg) is cst.IfExp else [arg]
    found = [display_items(arm) for arm in arms]
    return None if any(f is None or f[1] for f in found) else found


def tracked_keys(body: cst.CSTNode, name: str) -> frozenset[str] | None:
    """Every literal key the function uses with the local dict ``name``, when each use of the name
    is one this module follows (module docstring); None otherwise."""
    keys: set[str] = set()
    allowed: set[int] = set()
    bound = False
    for node in preorder(body):
        kind = type(node)
        if kind in _NESTED and node is not body and any(
                type(n) is cst.Name and n.value == name for n in preorder(node)):
            return None  # a closure, a lambda or a class body may change it out of the walk's order
        if kind is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets):
            found = display_items(node.value)
            if len(node.targets) != 1 or found is None:
                return None
            keys.update(k for k, _ in found[0])
            allowed.add(id(node.targets[0].target))
            bound = True
        elif kind is cst.Arg and node.star == "**" and type(node.value) is cst.Name and node.value.value == name:
            allowed.add(id(node.value))
        elif kind is cst.Subscript and type(node.value) is cst.Name and node.value.value == name:
            found = subscript_key(node, name)
            if found is not None:
                keys.add(found[1])
                allowed.add(id(node.value))
        elif kind is cst.Comparison and type(node.left) is cst.SimpleString and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in (cst.In, cst.NotIn) \
                and type(node.comparisons[0].comparator) is cst.Name and node.comparisons[0].comparator.value == name:
            allowed.add(id(node.comparisons[0].comparator))
        elif kind is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name \
                and node.func.value.value == name:
            method = node.func.attr.value
            displays = _update_displays(node) if method == "update" else None
            if method not in _READS and displays is None:
                return None
            for items, _ in displays or ():
                keys.update(k for k, _ in items)
            allowed.add(id(node.func.value))
        elif kind is cst.Name and node.value == name and id(node) not in allowed:
            return None
    return frozenset(keys) if bound else None


def changed_in(stmt: cst.CSTNode) -> set[str]:
    """The names whose keys ``stmt`` stores into, deletes or updates (a loop: unknown at its top)."""
    out: set[str] = set()
    for node in preorder(stmt):
        kind = type(node)
        if kind in (cst.AssignTarget, cst.Del) and type(node.target) is cst.Subscript \
                and type(node.target.value) is cst.Name:
            out.add(node.target.value.value)
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "update" \
                and type(node.func.value) is cst.Name:
            out.add(node.func.value.value)
    return out


# -- the walk -----------------------------------------------------------------------------------
def _keys(values, name: str) -> frozenset[str] | None:
    memo = ("dictkeys", name)  # scanned once per function and name (``values.unchanged``: its memo)
    if memo not in values.unchanged:
        values.unchanged[memo] = tracked_keys(values.body, name) if values.body is not None else None
    return values.unchanged[memo]


def _rest_of(values, spread: cst.BaseExpression) -> int:
    if type(spread) is cst.Name and spread.value == values.kwarg and values.handed_on(spread.value):
        return REST_KW
    return REST_ANY


def _from_rest(rest: int, key: str) -> tuple | None:
    return ABSENT_VALUE if rest == REST_NONE else ("kw", key) if rest == REST_KW else None


def bound(values, name: str, node: cst.BaseExpression | None) -> None:
    """``name = {...}``: every key the function uses takes the display's value, or its rest's."""
    found = display_items(node)  # first: the body is scanned only for a name bound to a display
    keys = _keys(values, name) if found is not None else None
    if keys is None:
        return
    items, spreads = found
    rest, given, shadowed = REST_NONE, {}, set()
    for key, value in items:
        given[key] = value
    for spread in spreads:
        rest = max(rest, _rest_of(values, spread))
    if spreads and type(node) is cst.Dict:  # ``{"k": v, **kw}``: what ``kw`` holds at ``k`` wins
        last = max(i for i, el in enumerate(node.elements) if type(el) is cst.StarredDictElement)
        shadowed = {literal_key(el.key) for el in node.elements[:last] if type(el) is not cst.StarredDictElement}
    for key in keys | given.keys():
        own, other = (values.value(given[key]) if key in given else None), _from_rest(rest, key)
        if key not in given:
            value = other
        elif key in shadowed:
            value = None if own is None or other is None else ("l", ((own, ()), (other, ())))
        else:
            value = own
        values.bind(pseudo(name, key), value)
    values.bind(f"{name}[**]", ("c", rest))


def stored(values, target: cst.BaseExpression, node: cst.BaseExpression | None, weak: bool = False) -> None:
    """``d["k"] = v`` (``node`` None: an unknown value; ``del d["k"]``: :data:`ABSENT_VALUE`)."""
    found = subscript_key(target)
    if found is None or _keys(values, found[0]) is None:
        return
    value = ABSENT_VALUE if node is ABSENT_VALUE else values.value(node) if node is not None else None
    values.bind(pseudo(*found), value, weak)


def called(values, call: cst.Call) -> None:
    """``d.update({...})`` (either arm of ``a if c else b``: a key may keep its value)."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value != "update" or type(func.value) is not cst.Name \
            or _keys(values, func.value.value) is None:
        return
    displays = _update_displays(call) or ()
    for items, _ in displays:
        for key, value in items:
            values.bind(pseudo(func.value.value, key), values.value(value), len(displays) > 1)


def entering_loop(values, stmt: cst.CSTNode, rebound: set[str]) -> None:
    """A dict the loop changes (or rebinds) holds, at the loop's top, what last iteration left."""
    changed = changed_in(stmt) | rebound
    for binding in [b for b in values.assigns if "[" in b and b.partition("[")[0] in changed]:
        values.assigns[binding] = None


def splat(values, name: str):
    """What ``**name`` hands over: ``("dk", ((key, value), ...), rest)``, True when unknown."""
    keys = _keys(values, name)
    rests = values.assigns.get(f"{name}[**]") if keys is not None else None
    if not rests:
        return True
    rest = max(v[1] if v is not None and v[0] == "c" else REST_ANY for v, _ in rests)
    items = []
    for key in sorted(keys):
        known = values.assigns.get(pseudo(name, key))
        items.append((key, ("l", known) if known and len(repr(known)) < 400 else None))
    return ("dk", tuple(items), rest)
