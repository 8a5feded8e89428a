"""Which files are the target's own project: what findings are pinned on first, and all that the
static cross-reference ever checks.

The most specific directory that contains a file decides. *Library locations* are the standard
library, site-/dist-packages directories, graphlint's own package, torch, and the ``sys.path``
entries that are there only to find libraries: an entry outside the working directory, or one
holding ``*.dist-info`` folders (a ``pip install --target`` directory, even inside the checkout).
*Project roots* are the target's own package (:func:`target_roots`). A file under a root that lies
deeper than any library location containing it is the project's, wherever it is (an engine outside
the working directory, or pip-installed and named as ``module:FACTORY``); a file under a library
location is not, even inside the working directory; any other file is the project's when it is
under the working directory.

Both the path as Python spells it and the path with symlinks resolved are judged, and a file is
the project's only if neither form is a library's. Debian's ``/usr/lib/python3.X/sitecustomize.py``
is a link to ``/etc/python3.X/``: judged by the resolved path alone it counted as the project,
and the H200 inventories (2026-12-02) then ran ``graphlint check`` over the whole standard library.

Decision: graphlint is never the target's code. A target that lives in graphlint
(``graphlint.targets.hf:make_target``) has no root, and the report says that nothing of graphlint
was cross-referenced. Torch-free; every worker and the parent derive the same answer from the
same spec, working directory and ``sys.path``.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

import graphlint

GRAPHLINT_DIR = Path(graphlint.__file__).resolve().parent
_PACKAGE_DIRS = ("site-packages", "dist-packages")
_ROOTS: list[str] = []  # this process's project roots (see add_root)


def stdlib_dirs() -> tuple[str, ...]:
    """The standard library's directories, as configured and with links resolved."""
    names = [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")]
    dirs = {os.path.normpath(d) for d in names if d} | {str(Path(d).resolve()) for d in names if d}
    return tuple(sorted(dirs))


def _package_dir_of(path: str) -> str | None:
    """The ``.../site-packages`` (or ``dist-packages``) directory that ``path`` is in, if any."""
    parts = Path(path).parts
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in _PACKAGE_DIRS:
            return str(Path(*parts[: i + 1]))
    return None


def is_stdlib(path: str) -> bool:
    """In the standard library (spelled or resolved), not in a site-packages directory inside it."""
    spellings = {os.path.abspath(path), str(Path(path).resolve())}
    return any(_depth(p, stdlib_dirs()) >= 0 and not _package_dir_of(p) for p in spellings)


def _holds_distributions(entry: str) -> bool:
    try:
        return any(name.endswith(".dist-info") for name in os.listdir(entry))
    except OSError:
        return False


def torch_dir() -> str | None:
    torch = sys.modules.get("torch")
    return str(Path(torch.__file__).resolve().parent) if getattr(torch, "__file__", None) else None


@functools.lru_cache(maxsize=64)
def library_locations(cwd: str, path: tuple[str, ...], torch_dir: str | None = None) -> tuple[str, ...]:
    """Every directory whose files are libraries, given the working directory and ``sys.path``."""
    here = Path(cwd).resolve()
    found = {str(GRAPHLINT_DIR), *stdlib_dirs(), *(p for p in [torch_dir] if p)}
    for key in ("purelib", "platlib"):
        if sysconfig.get_paths().get(key):
            found.add(os.path.normpath(sysconfig.get_paths()[key]))
    for entry in path:
        root = Path(entry or cwd)
        root = root if root.is_absolute() else Path(cwd) / root
        resolved = root.resolve()
        if resolved.suffix in (".zip", ".egg") or _package_dir_of(str(resolved)):
            found.add(str(resolved))
        elif here == resolved or here.is_relative_to(resolved):
            continue  # the project itself, or a folder holding it, is not a library
        elif not resolved.is_relative_to(here) or _holds_distributions(str(resolved)):
            found.add(str(resolved))  # outside the project, or a `pip --target` dir inside it
    return tuple(sorted(found))


def _depth(path: str, directories) -> int:
    """Parts of the deepest of ``directories`` containing ``path`` (-1 for none)."""
    best = -1
    for d in directories:
        if path == d or path.startswith(d.rstrip(os.sep) + os.sep):
            best = max(best, len(Path(d).parts))
    return best


def _verdict(path: str, cwd: str, libraries: tuple[str, ...], roots: tuple[str, ...]) -> str:
    """'library', 'project' or 'other' for one spelling of a file."""
    package_dir = _package_dir_of(path)
    library = max(_depth(path, libraries), len(Path(package_dir).parts) if package_dir else -1)
    root = _depth(path, roots)
    if root >= 0 and root >= library:  # a root is on sys.path (loading put it there), so it ties
        return "project"
    if library >= 0:
        return "library"
    return "project" if _depth(path, (cwd,)) >= 0 else "other"


@functools.lru_cache(maxsize=8192)  # the tracer asks for every frame of every op
def classify(filename: str, cwd: str, path: tuple[str, ...], roots: tuple[str, ...],
             torch_dir: str | None = None) -> str:
    """'project' (the working directory or a root), 'library', 'other' (anywhere else: a script in a
    temporary directory) or '' (not a file name: ``<string>``) for ``filename`` as ``co_filename``,
    ``__file__`` or a finding spells it."""
    if not filename or filename.startswith("<"):
        return ""
    spelled = os.path.normpath(os.path.join(cwd, filename))
    libraries = library_locations(cwd, path, torch_dir)
    verdicts = {_verdict(p, os.path.normpath(cwd), libraries, roots) for p in {spelled, str(Path(spelled).resolve())}}
    return "library" if "library" in verdicts else "project" if "project" in verdicts else "other"


def owns(filename: str, cwd: str, path: tuple[str, ...], roots: tuple[str, ...], torch_dir: str | None = None) -> bool:
    """Not a library's: what a finding is pinned on first (a project file, or one elsewhere)."""
    return classify(filename, cwd, path, roots, torch_dir) in ("project", "other")


def is_project_file(filename: str, roots: tuple[str, ...] | None = None, *, strict: bool = False) -> bool:
    """``filename`` judged with this process's working directory, ``sys.path`` and roots. ``strict``:
    only the target's own project (under the working directory or a root) and an existing file:
    what the static cross-reference may check (``torch.ops``' module says its file is ``_ops.py``)."""
    kind = classify(filename, os.getcwd(), tuple(sys.path), tuple(_ROOTS) if roots is None else tuple(roots),
                    torch_dir())
    if strict:
        return kind == "project" and os.path.isfile(filename)
    return kind in ("project", "other")


def add_root(path: str | os.PathLike) -> None:
    """Count files under ``path`` as the project's (see :func:`target_roots`)."""
    root = str(Path(path).resolve())
    if root not in _ROOTS:
        _ROOTS.append(root)


def roots() -> tuple[str, ...]:
    return tuple(_ROOTS)


def target_roots(spec: str) -> tuple[list[str], str]:
    """(the project roots of a ``--target`` spec, a note for the report or '').

    ``FILE.py:FACTORY``: the file's package base (the first directory above it without
    ``__init__.py``, as :mod:`graphlint.dynamic.loading` puts on ``sys.path``). ``module:FACTORY``:
    the directory of the module's top-level package, found without importing it. Never graphlint,
    never a library location itself (a target file directly in site-packages has no root)."""
    from graphlint.dynamic.loading import import_roots, package_base

    where = spec.rpartition(":")[0]
    if where.endswith(".py"):
        origin = Path(where).resolve()
        root = package_base(origin)
    else:
        top = where.split(".")[0]
        search = [str(p) for p in import_roots(None)] + [p for p in sys.path if p]
        try:  # sys.path and the import roots first, then the meta path (an editable install's finder)
            found = importlib.machinery.PathFinder.find_spec(top, search) or importlib.util.find_spec(top)
        except (ImportError, ValueError):
            found = None
        locations = list(getattr(found, "submodule_search_locations", None) or [])
        origin = Path(locations[0] if locations else getattr(found, "origin", None) or "").resolve()
        if not locations and not getattr(found, "origin", None):
            return [], ""
        root = origin if origin.is_dir() else origin.parent
    if origin == GRAPHLINT_DIR or origin.is_relative_to(GRAPHLINT_DIR):
        return [], (f"the target `{spec}` is graphlint's own code: nothing of graphlint is cross-referenced")
    if str(root) == _package_dir_of(str(root)) or str(root) in stdlib_dirs():
        return [], ""
    return [str(root)], ""
