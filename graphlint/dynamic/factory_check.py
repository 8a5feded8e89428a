"""Refuse a misspelt factory, option or option value from the target's *source*, before anything runs.

``graphlint inventory --decoder eagr`` used to import the target (torch, the engine: 4-6 s) before
the factory said no, and ``--option n_layer=2`` never listed the names it would take. The factory's
``def`` already says most of it, so it is read with :mod:`ast` -- no import, no torch -- and a usage
error comes back in a fraction of a second, with a "did you mean" and the valid names:

* the factory: a module-level ``def NAME`` of the target's file; a name the file binds another way
  (an import, an assignment, a class) is left to the import;
* option names: the factory's keyword parameters (after ``devices``), and, for ``**options:
  Unpack[Overrides]``, the fields of the class ``Overrides`` (a ``TypedDict``, or a dataclass: the
  annotated names of its body), defined in that file or imported into it from a file it can find;
  a bare ``**options`` accepts anything here, and the factory itself decides;
* option values: a parameter or field annotated ``Literal[...]`` (also ``Literal[...] | None``,
  ``Optional[Literal[...]]``, or a module-level alias of one) takes only those values.

Silent whenever the source cannot say (not found, not parsable, computed signatures): the import
and :func:`graphlint.dynamic.target.check_options` still decide then. Decision: static reading over
importing the target early -- importing is what made it slow, and the source is what the user wrote.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlint.dynamic.target import TargetError


@dataclass
class _Signature:
    name: str
    keywords: dict[str, ast.expr | None] = field(default_factory=dict)  # name -> annotation
    open_ended: bool = False  # **kwargs without a readable Unpack[...]: any name may be valid


def precheck(spec: str, options: dict[str, Any]) -> None:
    """Raise :class:`TargetError` for what the factory's source shows is wrong; else return."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        return
    source = Path(where) if where.endswith(".py") else module_source(where)
    tree = _parse(source)
    if tree is None:
        return
    found = _factory(tree, name)
    if found is None:
        _no_such_factory(tree, where, name)
        return
    signature = _signature(found, tree, source)
    for key, value in options.items():
        annotation = signature.keywords.get(key)
        if key not in signature.keywords:
            if not signature.open_ended:
                known = sorted(signature.keywords)
                guess = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {guess[0]}?" if guess else ""
                raise TargetError(f"--option {key}: {name}(devices, ...) takes no option {key!r}{hint} "
                                  f"(it takes: {', '.join(known) or 'no options'})")
            continue
        allowed = _literals(annotation, tree)
        if allowed is not None and value not in allowed:
            shown = [a if isinstance(a, str) else repr(a) for a in allowed]
            guess = difflib.get_close_matches(str(value), [str(a) for a in allowed if a is not None], n=1)
            hint = f"; did you mean {guess[0]}?" if guess else ""
            raise TargetError(f"--option {key}={value!r}: {name}() takes {key} as one of {', '.join(shown)}{hint}")


def module_source(module: str) -> Path | None:
    """The file of ``a.b.c`` without importing it (nor ``a``): its top-level package is looked up
    with the target's project on ``sys.path`` (as the import will have it), then the rest by path."""
    from graphlint.dynamic import loading

    loading.prepend_roots(None)
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        return Path(spec.origin) if spec.origin and spec.origin.endswith(".py") else None
    for base in spec.submodule_search_locations or ():
        path = Path(base, *rest[:-1])
        for candidate in (path / f"{rest[-1]}.py", path / rest[-1] / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _parse(source: Path | None) -> ast.Module | None:
    if source is None or not source.is_file():
        return None
    try:
        return ast.parse(source.read_text(encoding="utf-8"), str(source))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _factory(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node  # the last definition wins, as at runtime
    return found


def _bound_names(tree: ast.Module) -> tuple[set[str], bool]:
    """(names the module binds at the top level, whether it may bind names we cannot see)."""
    names, hidden = set(), False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            hidden |= any(alias.name == "*" for alias in node.names)
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("globals", "setattr", "exec"):
            hidden = True
    return names, hidden


def _no_such_factory(tree: ast.Module, where: str, name: str) -> None:
    names, hidden = _bound_names(tree)
    if name in names or hidden or "__getattr__" in names:
        return  # bound some other way: the import decides
    functions = sorted(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and not n.name.startswith("_"))
    guess = difflib.get_close_matches(name, functions, n=1)
    hint = f"; did you mean {where}:{guess[0]}?" if guess else (
        f" (it defines: {', '.join(functions[:8])})" if functions else " (it defines no public function)")
    raise TargetError(f"{where} has no factory {name!r}{hint}")


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module, source: Path) -> _Signature:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    signature = _Signature(fn.name)
    for arg in [*positional[1:], *args.kwonlyargs]:  # the first positional parameter is `devices`
        if arg not in args.posonlyargs:
            signature.keywords[arg.arg] = arg.annotation
    if args.kwarg is not None:
        fields = _unpacked_fields(args.kwarg.annotation, tree, source)
        if fields is None:
            signature.open_ended = True
        else:
            signature.keywords.update({k: v for k, v in fields.items() if k not in signature.keywords})
    return signature


def _unpacked_fields(annotation: ast.expr | None, tree: ast.Module, source: Path) -> dict[str, ast.expr] | None:
    """The fields of ``X`` in ``**options: Unpack[X]``, or None when they cannot be read."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if not (isinstance(annotation, ast.Subscript) and _name(annotation.value) == "Unpack"):
        return None
    cls_name = _name(annotation.slice)
    if not cls_name:
        return None
    found = _class_fields(tree, cls_name)
    if found is not None:
        return found
    for node in tree.body:  # `from package.config import Overrides`: one hop, by path
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == cls_name for a in node.names):
            original = next(a.name for a in node.names if (a.asname or a.name) == cls_name)
            other = _parse(_imported_file(node, source))
            return _class_fields(other, original) if other is not None else None
    return None


def _imported_file(node: ast.ImportFrom, source: Path) -> Path | None:
    if node.level:
        base = source.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = (node.module or "").split(".") if node.module else []
        path = base.joinpath(*parts)
        return path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    return module_source(node.module or "")


def _class_fields(tree: ast.Module, name: str) -> dict[str, ast.expr] | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {s.target.id: s.annotation for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return None


def _name(node: ast.expr | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _literals(annotation: ast.expr | None, tree: ast.Module, depth: int = 0) -> list[Any] | None:
    """The values a ``Literal[...]`` annotation allows (with None for ``| None``/``Optional``), or
    None when the annotation is anything else."""
    if annotation is None or depth > 3:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _literals(ast.parse(annotation.value, mode="eval").body, tree, depth + 1)
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [_literals(annotation.left, tree, depth + 1), _literals(annotation.right, tree, depth + 1)]
        none = [side for side in (annotation.left, annotation.right)
                if isinstance(side, ast.Constant) and side.value is None]
        literal = [s for s in sides if s is not None]
        if len(literal) == 1 and len(none) == 1:
            return [*literal[0], None]
        return [*literal[0], *literal[1]] if len(literal) == 2 else None
    if isinstance(annotation, ast.Subscript):
        head = _name(annotation.value)
        items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if head == "Literal" and all(isinstance(i, ast.Constant) for i in items):
            return [i.value for i in items]
        if head == "Optional" and len(items) == 1:
            inner = _literals(items[0], tree, depth + 1)
            return None if inner is None else [*inner, None]
        return None
    if isinstance(annotation, ast.Name):  # a module-level alias: Decoder = Literal["eager", ...]
        for node in tree.body:
            value = None
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == annotation.id for t in node.targets):
                value = node.value
            elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == annotation.id:
                value = node.value
            if value is not None:
                return _literals(value, tree, depth + 1)
    return None
