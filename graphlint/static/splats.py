"""Arguments handed on through ``**kwargs`` and ``*args``, and dict literals splatted.

``def forward(self, x, **kwargs): return self.inner(x, **kwargs)`` is the commonest way a model
hands its caller's keywords on; without this every parameter of ``inner`` that the caller did not
spell was unknown, so ``if attention_mask is not None:`` in ``inner`` decided nothing although no
caller ever passes a mask. The walker records what a splat is (:func:`splat_of`, :func:`star_of`,
in a call's arguments where :mod:`.valuefacts` keeps a plain flag):

- ``("kw",)``: the enclosing function's own ``**kwargs``, never rebound nor changed in place
  (``kwargs["x"] = ...``, ``kwargs.pop(...)``, ``del kwargs[...]``, ``kwargs.update(...)``);
- ``("d", ((key, value), ...))``: a dict display with string keys, or ``dict(key=value, ...)``;
- ``("dk", ((key, value), ...), rest)``: a local dict, each key the function uses with what it
  holds at the splat, and what its displays' rest holds for the others (:mod:`.dictkeys`:
  ``inputs = {"input_ids": ids[:, -1:], **kwargs}``, ``inputs["mask"] = None``, ``model(**inputs)``);
- ``("va",)``: the enclosing function's own ``*args``, as the last positional argument;
- ``True``: anything else (unknown, as before).

At link time (:mod:`.argvalues`) a function's environment gains, besides its named parameters,
``("**", key)`` -- what its callers pass for a keyword that lands in its ``**kwargs`` -- and
``("*", j)`` -- what lands at position ``j`` of its ``*args`` -- with ``"**"`` / ``"*"`` TOP when
some caller splats something unknown there. A key a caller may leave out is :data:`ABSENT`: where it
is splatted into a function that names it, the parameter takes its default.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static import dictkeys
from graphlint.static.cstwalk import preorder

TOP = None


class Absent:
    """A key a caller's ``**kwargs`` may not hold: the callee's parameter takes its default."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = Absent()
_MUTATORS = frozenset(("pop", "update", "setdefault", "clear", "popitem", "__setitem__", "__delitem__"))


def changed_in_place(body: cst.CSTNode, name: str, spared: set[int] = frozenset()) -> bool:
    """Whether the function changes its ``**kwargs`` dict ``name`` in place, or rebinds it (but for
    the nodes ``spared``: :func:`popped_keys`)."""
    for node in preorder(body):
        if id(node) in spared:
            continue
        target = node.target if type(node) in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del) else None
        if type(target) is cst.Subscript:
            target = target.value  # ``kwargs["x"] = v``, ``del kwargs["x"]``
        if type(target) is cst.Name and target.value == name:
            return True
        if (type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == name
                and node.attr.value in _MUTATORS):
            return True
    return False


def popped_keys(body: cst.CSTNode, name: str) -> tuple[str, ...] | None:
    """The keys the function takes out of its ``**kwargs`` dict ``name`` (``kwargs.pop("key", d)``,
    ``del kwargs["key"]``), when that is all it changes in place; None otherwise."""
    keys, spared = [], set()
    for node in preorder(body):
        if type(node) is cst.Call and _names(node.func, name, "pop") and node.args \
                and type(node.args[0].value) is cst.SimpleString:
            keys.append(literal_key(node.args[0].value))
            spared.add(id(node.func))
        elif type(node) is cst.Del and type(node.target) is cst.Subscript and _names(node.target.value, name) \
                and len(node.target.slice) == 1 and type(node.target.slice[0].slice) is cst.Index \
                and type(node.target.slice[0].slice.value) is cst.SimpleString:
            keys.append(literal_key(node.target.slice[0].slice.value))
            spared.add(id(node))
    if not keys or any(not isinstance(k, str) for k in keys) or changed_in_place(body, name, spared):
        return None
    return tuple(sorted(set(keys)))


def _names(node: cst.BaseExpression, name: str, attr: str = "") -> bool:
    """``name`` itself, or ``name.attr``."""
    if attr:
        return type(node) is cst.Attribute and node.attr.value == attr and _names(node.value, name)
    return type(node) is cst.Name and node.value == name


def splat_of(values, node: cst.BaseExpression):
    """What ``**node`` hands over (module docstring); True when unknown. A ``**kwargs`` whose only
    change is keys popped out of it hands on the rest: ``("kw", popped keys)``."""
    if isinstance(node, cst.Name) and node.value == values.kwarg and values.handed_on(node.value):
        return ("kw",)
    if isinstance(node, cst.Name) and node.value == values.kwarg and node.value not in values.assigns \
            and values.body is not None:
        memo = ("popped", node.value)  # scanned once per function (``values.unchanged``: its memo)
        if memo not in values.unchanged:
            values.unchanged[memo] = popped_keys(values.body, node.value)
        if values.unchanged[memo]:
            return ("kw", values.unchanged[memo])
    if isinstance(node, cst.Name):  # a local dict, key by key (:mod:`.dictkeys`)
        return dictkeys.splat(values, node.value)
    items = None
    if isinstance(node, cst.Dict) and all(isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString)
                                          for el in node.elements):
        items = [(literal_key(el.key), el.value) for el in node.elements]
    elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict"
          and "dict" not in values.assigns and all(a.keyword is not None and not a.star for a in node.args)):
        items = [(a.keyword.value, a.value) for a in node.args]
    if items is None or any(not isinstance(key, str) for key, _ in items):
        return True
    return ("d", tuple((key, values.value(value)) for key, value in items))


def star_of(values, node: cst.BaseExpression):
    if isinstance(node, cst.Name) and node.value == values.vararg and values.handed_on(node.value):
        return ("va",)
    return True


def literal_key(node: cst.SimpleString):
    try:
        return node.evaluated_value
    except Exception:
        return None


# -- link time ---------------------------------------------------------------------------------
def lookup(kind: str, key, env: dict | None) -> frozenset | None:
    """What the caller's ``**kwargs`` (``kind`` "**") or ``*args`` ("*") holds at ``key``."""
    if env is TOP or env.get(kind, frozenset()) is TOP:
        return TOP
    found = env.get((kind, key), frozenset())
    return TOP if found is TOP else found | {ABSENT}


def kw_part(bound: dict, name: tuple) -> frozenset | None:
    """What one call hands the callee's ``**kwargs`` at ``name`` (``("**", key)``): the key is absent
    where the call does not spell it, unless it splats unknown keys there."""
    return TOP if bound.get("**", frozenset()) is TOP else bound.get(name, frozenset((ABSENT,)))


def keys(env: dict | None) -> frozenset | None:
    """The keys the caller's ``**kwargs`` may hold (TOP: any)."""
    if env is TOP or env.get("**", frozenset()) is TOP:
        return TOP
    return frozenset(k[1] for k in env if isinstance(k, tuple) and k[0] == "**")


def spelled(double, name: str, evaluate):
    """The values of keyword ``name`` from a splat (ABSENT included where it may be missing);
    None when the splat does not concern it (no splat)."""
    if double is False:
        return None
    if double is True:
        return TOP
    if double[0] == "dk":  # a local dict, what each key holds at the splat (:mod:`.dictkeys`)
        given = dict(double[1])
        if name in given:
            return evaluate(given[name])
        rest = double[2]
        return frozenset((ABSENT,)) if rest == dictkeys.REST_NONE else TOP if rest == dictkeys.REST_ANY \
            else evaluate(("kw", name))
    if double[0] == "d":
        given = dict(double[1])
        return evaluate(given[name]) if name in given else frozenset((ABSENT,))
    found = evaluate(("kw", name))
    if len(double) > 1 and name in double[1] and found is not TOP:  # popped out of the ``**kwargs`` (or not yet)
        return found | {ABSENT}
    return found


def with_default(found: frozenset | None, defaults: dict, name: str, evaluate) -> frozenset | None:
    """ABSENT replaced by the parameter's default (none: that spelling raises, so nothing)."""
    if found is TOP or ABSENT not in found:
        return found
    rest = found - {ABSENT}
    if name not in defaults:
        return rest
    more = evaluate(defaults[name])
    return TOP if more is TOP else rest | more


def extra_keywords(double, keywords: tuple, named: set[str], evaluate) -> dict:
    """What lands in the callee's own ``**kwargs``: ``("**", key)`` -> values; ``"**"`` TOP when a
    splat of unknown keys is handed over."""
    out: dict = {("**", k): evaluate(v) for k, v in keywords if k not in named}
    if double is True:
        out["**"] = TOP
    elif double is not False and double[0] == "dk":  # its keys, and the rest its displays hand on
        out.update((("**", k), evaluate(v)) for k, v in double[1] if k not in named)
        if double[2] == dictkeys.REST_ANY:
            out["**"] = TOP
        elif double[2] == dictkeys.REST_KW:
            out.update(extra_keywords(("kw",), (), named | {k for k, _ in double[1]}, evaluate))
    elif double is not False and double[0] == "d":
        out.update((("**", k), evaluate(v)) for k, v in double[1] if k not in named)
    elif double is not False:
        found = evaluate(("kwkeys",))
        if found is TOP:
            out["**"] = TOP
        else:
            out.update((("**", k), evaluate(("kw", k))) for k in found if k not in named)
    return out
