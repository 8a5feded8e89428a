"""Functions that put their result where a parameter says: ``fetch(params, "slots", "cpu")``.

``def fetch(params, key, device, default=_missing)`` reads a tensor from a dict and returns its
copy on ``device`` (``value.to(device, non_blocking=...)``), memoized per device in a dict keyed by
``(id(value), device)``; called with the literal ``"cpu"`` it hands back a host tensor, and
``slots.tolist()`` of that reads nothing from a device. The function's return shape says so
(:data:`PLACED`: ``at:<position>:<parameter>``), carried to callers like any return fact
(:mod:`.valueflow`), and a call passing a CPU device there is a host tensor (:mod:`.cputensors`).

A return counts as placed when it is ``x.to(p, ...)`` / ``x.to(device=p)`` / a torch factory or
``x.new_*`` given ``device=p``, a local every binding of which is one, another placing function's
call given ``p`` where it places, or a read of a memo keyed by ``p`` (``memo.get((id(v), p))``,
``hit[1]``: a cache whose key holds the device holds that device's copies, and the function
stores into it). The other returns may only be ``None`` or a parameter with a default (the
caller's own fallback, ``default=None``: the shape lists it, and a call passing anything but
``None`` there is not vouched for). One return of anything else and nothing is said.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder

#: the prefix of a placing function's return shape
PLACED = "at:"
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
NEW_METHODS = frozenset(("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"))


def is_placed(shape) -> bool:
    return isinstance(shape, str) and shape.startswith(PLACED)


def positional_params(fn: cst.FunctionDef, in_class: bool) -> list[str]:
    """The parameters a caller passes by position (``self`` / ``cls`` of a method left out)."""
    names = [p.name.value for p in fn.params.params]
    is_static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in fn.decorators)
    if in_class and not is_static and names[:1] in (["self"], ["cls"]):
        names = names[1:]
    return names


def placed_shape(fn: cst.FunctionDef, in_class: bool, returned) -> str | None:
    """``at:<pos>:<param>[/<pos>:<fallback>...]`` when ``fn`` places every result it makes on one
    parameter (the module docstring); ``returned``: a call's known return shape."""
    positional = positional_params(fn, in_class)
    every = {p.name.value: p for p in (*fn.params.params, *fn.params.kwonly_params)}
    values, stored, returns = _body_facts(fn)
    if returns is None:
        return None
    for param in every:
        if param in values or param in ("self", "cls"):
            continue  # rebound: no longer what the caller passed
        placed, fallbacks = False, set()
        for ret in returns:
            if ret is None or type(ret) is cst.Name and ret.value == "None":
                continue
            if type(ret) is cst.Name and ret.value in every and ret.value != param \
                    and every[ret.value].default is not None and ret.value not in values:
                fallbacks.add(ret.value)
                continue
            if not _placed(ret, param, values, stored, returned, set()):
                break
            placed = True
        else:
            if placed:
                at = positional.index(param) if param in positional else 1000
                return PLACED + "/".join([f"{at}:{param}"] + [
                    f"{positional.index(n) if n in positional else 1000}:{n}" for n in sorted(fallbacks)])
    return None


def _body_facts(fn: cst.FunctionDef):
    """Local name -> the values bound to it (None for a binding that is no plain ``=``), the names of
    containers stored into by key (``memo[k] = ...``), and the values returned (None for a bare one;
    the list is None for a generator)."""
    values: dict[str, list] = {}
    stored: set[str] = set()
    returns: list = []
    stack: list[cst.CSTNode] = [fn.body]
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        if type(node) in (cst.Yield, cst.Await):
            return values, stored, None  # a generator or a coroutine: its call returns no tensor
        if type(node) is cst.Return:
            returns.append(node.value)
        elif type(node) is cst.Assign:
            for t in node.targets:
                _bind(t.target, node.value, values, stored)
        elif type(node) in (cst.AugAssign, cst.AnnAssign):
            _bind(node.target, None, values, stored)
        elif type(node) in (cst.For, cst.CompFor):
            _bind(node.target, None, values, stored)
        elif type(node) is cst.NamedExpr:
            _bind(node.target, None, values, stored)
        elif type(node) is cst.WithItem and node.asname is not None:
            _bind(node.asname.name, None, values, stored)
        elif type(node) is cst.ExceptHandler and node.name is not None:
            _bind(node.name.name, None, values, stored)
        stack.extend(node.children)
    return values, stored, returns


def _bind(target, value, values: dict, stored: set) -> None:
    if type(target) is cst.Name:
        values.setdefault(target.value, []).append(value)
    elif type(target) in (cst.Tuple, cst.List):
        for el in target.elements:
            _bind(el.value, None, values, stored)
    elif type(target) is cst.Subscript and type(target.value) is cst.Name:
        stored.add(target.value.value)


def _placed(node, param: str, values: dict, stored: set, returned, seen: set) -> bool:
    if type(node) is cst.Name:
        bound = values.get(node.value)
        if not bound or node.value in seen:
            return False
        seen = seen | {node.value}
        return all(v is not None and _placed(v, param, values, stored, returned, seen) for v in bound)
    if type(node) is cst.Subscript:  # ``hit[1]``: an element of a memo's entry
        return _memo_read(node.value, param, values, stored, seen)
    if type(node) is not cst.Call:
        return False
    if _memo_lookup(node, param, values, stored):
        return True
    func = node.func
    if type(func) is cst.Attribute and func.attr.value == "to" and node.args and node.args[0].keyword is None \
            and not node.args[0].star and _is(node.args[0].value, param):
        return True
    device = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None and _is(device, param) and (
            type(func) is cst.Attribute and func.attr.value in ("to", *NEW_METHODS) or _torch_name(func)):
        return True
    shape = returned(node)
    return is_placed(shape) and _is(argument(node, shape), param) and fallbacks_absent(node, shape)


def _memo_read(node, param: str, values: dict, stored: set, seen: set) -> bool:
    """``hit`` bound only to ``memo.get(key)`` / ``memo[key]``, a memo keyed by ``param``."""
    if type(node) is cst.Subscript:
        return _memo_lookup(node, param, values, stored)
    if type(node) is not cst.Name or node.value in seen:
        return False
    bound = values.get(node.value)
    return bool(bound) and all(v is not None and _memo_lookup(v, param, values, stored) for v in bound)


def _memo_lookup(node, param: str, values: dict, stored: set) -> bool:
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "get" \
            and node.args and node.args[0].keyword is None:
        memo, key = node.func.value, node.args[0].value
    elif type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
        memo, key = node.value, node.slice[0].slice.value
    else:
        return False
    return type(memo) is cst.Name and memo.value in stored and _keyed_by(key, param, values)


def _keyed_by(key, param: str, values: dict) -> bool:
    """``p``, ``(id(v), p)``, or a local bound only to such a tuple."""
    if _is(key, param):
        return True
    if type(key) is cst.Tuple:
        return any(type(el) is cst.Element and _is(el.value, param) for el in key.elements)
    if type(key) is cst.Name and key.value != param:
        bound = values.get(key.value)
        return bool(bound) and all(type(v) is cst.Tuple and _keyed_by(v, param, {}) for v in bound)
    return False


def _is(node, name: str) -> bool:
    return type(node) is cst.Name and node.value == name


def _torch_name(func) -> bool:
    while type(func) is cst.Attribute:
        func = func.value
    return type(func) is cst.Name and func.value == "torch"


def argument(call: cst.Call, shape: str, index: int = 0) -> cst.BaseExpression | None:
    """What ``call`` passes where the placing shape's ``index``-th parameter is (None: not passed)."""
    at, _, name = shape[len(PLACED):].split("/")[index].partition(":")
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional[:int(at) + 1]) or int(at) >= len(positional):
        return None
    return positional[int(at)].value


def fallbacks_absent(call: cst.Call, shape: str) -> bool:
    """Every fallback parameter the shape lists is left out or given ``None`` (the caller's own value
    is otherwise what may come back)."""
    for i in range(1, len(shape[len(PLACED):].split("/"))):
        value = argument(call, shape, i)
        if value is not None and not _is(value, "None"):
            return False
    return True
