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
        return absolute.resolve().relative_to(here.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11's resolve)
        return absolute.as_posix()
