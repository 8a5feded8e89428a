"""Import a target the way pytest imports a test file: from the user's project, installed or not.

``--target mymodel/target.py:make_target`` must work in a project that was never pip-installed,
where ``target.py`` says ``from mymodel.model import Decoder``. As pytest's ``prepend`` import
mode does for test files, the target file's *package base* -- the first parent directory without
an ``__init__.py`` -- goes at the front of ``sys.path``, and a file inside a package is imported
under its dotted name (``mymodel.target``), so its relative imports work and its package is not
imported twice under two names. The *project root* -- the nearest directory at or above the file
that holds a ``pyproject.toml`` -- goes on ``sys.path`` too (a flat ``mymodel/`` folder without
``__init__.py`` is then importable as ``mymodel``).

A ``module:FACTORY`` spec imports with the working directory and the project root above it on
``sys.path``, as ``python -m`` would: the ``graphlint`` console script does not put the working
directory there by itself.

Decisions: the entries stay on ``sys.path`` for the life of the process (a factory that imports
lazily, inside ``make_target`` or a step, needs them then); every worker process derives the same
entries from the same spec and working directory. A file outside any package is imported under
a private name (``graphlint_target_<stem>``) so that two targets both called ``target.py`` in one
pytest session do not collide; a dotted name already imported from another file falls back to the
private name too (pytest calls that an "import file mismatch").
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def package_base(file: Path) -> Path:
    """The first parent of ``file`` that is not a package (has no ``__init__.py``)."""
    directory = file.parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


def project_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a ``pyproject.toml``."""
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


def import_roots(file: Path | None = None) -> list[Path]:
    """What goes on ``sys.path`` (front first) for a target file, or for a module spec (None)."""
    if file is not None:
        file = file.resolve()
        roots = [package_base(file), project_root(file.parent)]
    else:
        cwd = Path.cwd().resolve()
        roots = [cwd, project_root(cwd)]
    return list(dict.fromkeys(r for r in roots if r is not None))


def prepend_roots(file: Path | None) -> None:
    """Put the target's project on ``sys.path`` as importing it will (a module spec: ``file`` None)."""
    _prepend(import_roots(file))


def _prepend(roots: list[Path]) -> None:
    for root in reversed(roots):
        entry = str(root)
        if entry not in sys.path:
            sys.path.insert(0, entry)


def dotted_name(file: Path) -> str | None:
    """``mymodel.target`` for ``mymodel/target.py`` inside a package, else None."""
    file = file.resolve()
    base = package_base(file)
    if base == file.parent:
        return None
    parts = [*file.parent.relative_to(base).parts, file.stem]
    return ".".join(parts) if file.stem != "__init__" else ".".join(parts[:-1])


def import_file(file: Path) -> ModuleType:
    """Import ``file`` with its project on ``sys.path``; exceptions from the file propagate."""
    file = file.resolve()
    _prepend(import_roots(file))
    name = dotted_name(file)
    if name is not None and _same_file_or_new(name, file):
        return importlib.import_module(name)
    private = f"graphlint_target_{file.stem}"
    spec = importlib.util.spec_from_file_location(private, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[private] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(private, None)  # no half-initialised module left for a later import
        raise
    return module


def _same_file_or_new(name: str, file: Path) -> bool:
    loaded = sys.modules.get(name)
    if loaded is None:
        return True
    where = getattr(loaded, "__file__", None)
    return bool(where) and os.path.realpath(where) == os.path.realpath(file)


def import_module(name: str) -> ModuleType:
    _prepend(import_roots(None))
    return importlib.import_module(name)
