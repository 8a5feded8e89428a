"""Which tensors a target holds, and by what path: ``decoder.model.blocks[3]._parameters['wq']``.

Two probes need to name a buffer the way its engine does: the stale-address check (a captured
region reads ``decoder._tokens``; has ``stage()`` rebound it?) and the determinism check (two
instances from the factory: which buffer differs?). Both walk the objects reachable from the
target (attributes, dict and list items, a region function's ``self``, closure cells and
``functools.partial`` arguments) breadth-first, so every tensor gets its shortest path. Torch-free
apart from the ``isinstance`` check the caller passes in.
"""

from __future__ import annotations

import functools
import types
from collections import deque
from typing import Any, Callable, Iterator

Step = tuple[str, Any]  # ("attr", name) | ("item", key) | ("cell", index) | ("self", None) | ("func", None) | ...
Path = tuple[Step, ...]

_ATOMS = (str, bytes, int, float, complex, bool, type(None), range, slice)
_OPAQUE = (types.ModuleType, type, types.BuiltinFunctionType, types.CodeType, types.FrameType)


def _children(obj: Any) -> Iterator[tuple[Step, Any]]:
    if isinstance(obj, dict):
        for key, value in list(obj.items()):
            if isinstance(key, (str, int)):
                yield ("item", key), value
        return
    if isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            yield ("item", index), value
        return
    if isinstance(obj, types.MethodType):
        yield ("self", None), obj.__self__
        yield ("func", None), obj.__func__
        return
    if isinstance(obj, types.FunctionType):
        for index, cell in enumerate(obj.__closure__ or ()):
            try:
                yield ("cell", index), cell.cell_contents
            except ValueError:  # an empty cell
                continue
        if hasattr(obj, "__wrapped__"):
            yield ("attr", "__wrapped__"), obj.__wrapped__
        return
    if isinstance(obj, functools.partial):
        yield ("attr", "func"), obj.func
        yield ("attr", "args"), obj.args
        yield ("attr", "keywords"), obj.keywords
        return
    namespace = getattr(obj, "__dict__", None)
    if isinstance(namespace, dict):
        for key, value in list(namespace.items()):
            yield ("attr", key), value
    for name in getattr(type(obj), "__slots__", ()):
        if isinstance(name, str) and hasattr(obj, name):
            yield ("attr", name), getattr(obj, name)


def tensors_by_path(roots: dict[str, Any], is_tensor: Callable[[Any], bool], *,
                    max_depth: int = 10, max_objects: int = 200_000) -> dict[Path, Any]:
    """Every tensor reachable from ``roots``, under its shortest path (first root first)."""
    found: dict[Path, Any] = {}
    seen_tensors: set[int] = set()
    seen: set[int] = set()
    queue: deque[tuple[Path, Any]] = deque(((("root", name),), obj) for name, obj in roots.items())
    while queue and len(seen) < max_objects:
        path, obj = queue.popleft()
        if is_tensor(obj):
            if id(obj) not in seen_tensors:
                seen_tensors.add(id(obj))
                found[path] = obj
            continue
        if isinstance(obj, _ATOMS) or isinstance(obj, _OPAQUE) or id(obj) in seen or len(path) > max_depth:
            continue
        seen.add(id(obj))
        try:
            for step, child in _children(obj):
                queue.append(((*path, step), child))
        except Exception:  # noqa: BLE001 - an exotic object that cannot be walked is skipped, not fatal
            continue
    return found


def resolve(roots: dict[str, Any], path: Path) -> Any:
    """The object at ``path`` now, or ``None`` when the path no longer leads anywhere."""
    kind, name = path[0]
    obj = roots.get(name)
    for kind, key in path[1:]:
        try:
            if kind == "item":
                obj = obj[key]
            elif kind == "attr":
                namespace = getattr(obj, "__dict__", None)
                obj = namespace[key] if isinstance(namespace, dict) and key in namespace else getattr(obj, key)
            elif kind == "self":
                obj = obj.__self__
            elif kind == "func":
                obj = obj.__func__
            elif kind == "cell":
                obj = obj.__closure__[key].cell_contents
            else:
                return None
        except (KeyError, IndexError, AttributeError, TypeError, ValueError):
            return None
    return obj


def describe(path: Path) -> str:
    """``decoder.model.blocks[3].wq``: the path as the engine's code would spell it (the root,
    then attributes and items; nn.Module's ``_parameters``/``_buffers``/``_modules`` are elided)."""
    out = path[0][1] if path[0][1] != "target" else ""
    hidden = {"_parameters", "_buffers", "_modules"}
    after_hidden = False
    for kind, key in path[1:]:
        if kind == "attr" and key in hidden:
            after_hidden = True
            continue
        if kind == "item" and after_hidden:
            out += f".{key}" if not str(key).isdigit() else f"[{key}]"
        elif kind == "attr":
            out += f".{key}"
        elif kind == "item":
            out += f"[{key!r}]"
        elif kind == "cell":
            out += f".<closure {key}>"
        elif kind == "self":
            out += ".__self__"
        after_hidden = False
    return out.lstrip(".") or "<target>"


def owner_and_attr(roots: dict[str, Any], path: Path) -> tuple[Any, str]:
    """The object holding the last attribute of ``path`` and that attribute's name (``(None, '')``
    when the path does not end in an attribute, e.g. a dict item)."""
    if len(path) < 2 or path[-1][0] != "attr":
        return None, ""
    return resolve(roots, path[:-1]), path[-1][1]
