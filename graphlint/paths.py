"""How graphlint spells a file: one function for the static and the dynamic half.

The inventory matches static and dynamic findings by (path, line), so both halves must spell a
file the same way. A path is shown relative to the working directory when it is under it, else
absolute. It is tried as given first (symlinks kept: a file that is a link inside the project
keeps its project path, as the user typed it) and then with links resolved on both sides (a
checkout reached through a link, where Python's ``co_filename`` and ``os.getcwd()`` disagree on
the prefix, still reads relative).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path


def display_path(path: str | os.PathLike) -> str:
    return _display_path(os.fspath(path), os.getcwd())


@functools.lru_cache(maxsize=4096)  # the tracer asks for every user frame of every op
def _display_path(path: str, cwd: str) -> str:
    here = Path(cwd)
    absolute = Path(os.path.normpath(os.path.join(cwd, path)))
    try:
        return absolute.relative_to(here).as_posix()
    except ValueError:
        pass
    try:
        return _resolved(absolute).relative_to(_resolved_dir(str(here))).as_posix()
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11's resolve)
        return absolute.as_posix()


def _resolved(path: Path) -> Path:
    """``path.resolve()``, from its directory's resolved once: a file that is not itself a link
    resolves to its resolved directory plus its name (checking a tree outside the working
    directory resolved every file's whole path: a second of the serial start on torch's files)."""
    if path.name and not path.is_symlink():
        return _resolved_dir(str(path.parent)) / path.name
    return path.resolve()


@functools.lru_cache(maxsize=1024)
def _resolved_dir(path: str) -> Path:
    return Path(path).resolve()
