"""Our own alias resolution: ``import torch as T`` makes ``T.cuda.synchronize`` mean
``torch.cuda.synchronize``.

libcst's QualifiedNameProvider would do this too, but it needs the scope analysis, which costs
several times the parse itself. Imports are almost always at module level and rarely
shadowed, so one flat table per file is enough; a name bound both by an import and by a
local assignment resolves to the import (documented imprecision).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from functools import lru_cache

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` -> "a.b.c"; anything that is not a plain name chain -> None."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def record_import(node: cst.Import | cst.ImportFrom, imports: dict[str, str]) -> None:
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                imports[alias.asname.name.value] = full
            else:  # ``import torch.nn.functional`` binds ``torch``
                root = full.split(".", 1)[0]
                imports[root] = root
        return
    if isinstance(node.names, cst.ImportStar):
        return
    module = dotted_name(node.module) if node.module is not None else ""
    prefix = "." * len(node.relative) + (module or "")
    for alias in node.names:
        if not isinstance(alias.name, cst.Name):
            continue
        name = alias.name.value
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        sep = "" if prefix.endswith(".") or not prefix else "."
        imports[local] = f"{prefix}{sep}{name}"


#: Decorators that compile a function with a kernel DSL instead of running it as Python.
DEVICE_CODE_DECORATORS = frozenset({
    "cutlass.cute.jit", "cutlass.cute.kernel", "cutlass.jit", "cutlass.kernel",
    "triton.jit", "triton.autotune", "triton.heuristics", "numba.cuda.jit", "numba.jit", "numba.njit",
})


def is_device_code(decorators, imports: dict[str, str]) -> bool:
    for decorator in decorators:
        node = decorator.decorator
        node = node.func if isinstance(node, cst.Call) else node  # ``@triton.autotune(configs=...)``
        if resolve(node, imports) in DEVICE_CODE_DECORATORS:
            return True
    return False


def resolve(node: cst.BaseExpression, imports: dict[str, str]) -> str | None:
    """The qualified name an expression refers to, through this file's imports.

    Names that are not imported come back unchanged (``int``, a local def), so rule packs
    can match builtins by their bare name.
    """
    name = dotted_name(node)
    if name is None:
        return None
    root, _, rest = name.partition(".")
    target = imports.get(root)
    if target is None:
        return name
    if not rest:
        return target
    sep = "" if target.endswith(".") else "."
    return f"{target}{sep}{rest}"


def is_imported_root(node: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """Whether a name chain starts at an imported name (``torch.cuda``, ``F``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value in imports


def module_name(path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg`` (paths as given).

    Never an empty part: a dot directory (``/home/u/.venv/...``) or a leading ``/`` would make
    one, and relative imports, resolved part by part, would then miss their module.
    """
    norm = posixpath.normpath(path.replace("\\", "/"))
    if norm.endswith(".py"):
        norm = norm[:-3]
    if norm.endswith("/__init__"):
        norm = norm[: -len("/__init__")]
    return ".".join(part for part in norm.replace("/", ".").split(".") if part)


@lru_cache(maxsize=64)
def name_matcher(patterns: tuple[str, ...], ignore_case: bool = False) -> "re.Pattern[str]":
    """One compiled regex for fnmatch patterns (``fnmatchcase`` per pattern per name was a
    measurable share of the analysis: every ``if`` test and every function name is asked)."""
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or "(?!)", flags)


def norm_path(path: str) -> str:
    """A path as entries compare it: POSIX separators, no ``./`` or ``a/../``."""
    return posixpath.normpath(path.replace("\\", "/"))


def callee_key(func: cst.BaseExpression, cls: str) -> str | None:
    """How a call site names its callee in the return facts (:mod:`.valuekinds`): ``helper``,
    ``ops.helper``, ``Cls|self.helper`` (a method is known per class: two classes of one file may
    both have ``self.step``), ``Cls|self.field.method`` (a method of what the class's field holds)."""
    name = dotted_name(func)
    if name is None:
        return None
    if name.startswith("self."):
        return f"{cls}|{name}" if name.count(".") <= 2 and cls else None
    return name
