"""Which files ``graphlint check`` reads, and reading them: discovery walks directories for
``*.py`` in sorted order (iteratively), skips hidden directories and the usual build/venv/cache
directories, follows directory symlinks but never enters a directory twice (a symlink loop is
skipped with a warning), and reads only regular files; a directory it cannot list is a GL000.
``exclude`` globs apply to explicitly named files too (pre-commit passes every changed file;
excluded ones must stay excluded, ruff's ``force-exclude``)."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from graphlint.check_settings import Settings
from graphlint.paths import display_path

SKIP_DIRS = frozenset({
    "__pycache__", "node_modules", "venv", "env", "build", "dist", "site-packages", "__pypackages__",
})


@dataclass
class Source:
    path: str  # display path, the key everything else uses
    data: bytes | None = None
    sha256: str = ""
    error: str = ""


@dataclass
class Walked:
    """What discovery saw besides the files: for the gate-off notice and GL000s on directories."""

    excluded: int = 0  # entries under walked directories (and named roots) that ``exclude`` matched
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (directory, why) it could not be listed


def discover(settings: Settings, warnings: list[str], walked: Walked | None = None) -> list[Path]:
    """Every file to analyse, deduplicated by real path, in a stable order. Iterative: a directory
    tree as deep as the file system allows cannot exhaust the stack."""
    walked = walked if walked is not None else Walked()
    found: dict[str, Path] = {}
    visited_dirs: set[tuple[int, int]] = set()

    def add(path: Path) -> None:
        found.setdefault(os.path.realpath(path), path)

    def entries_of(directory: Path) -> list[os.DirEntry] | None:
        try:
            info = directory.stat()
        except OSError as exc:
            warnings.append(f"skipping {display_path(directory)}: {exc.strerror or exc}")
            return None
        if (info.st_dev, info.st_ino) in visited_dirs:
            warnings.append(f"skipping {display_path(directory)}: symlink loop or directory already visited")
            return None
        visited_dirs.add((info.st_dev, info.st_ino))
        try:
            with os.scandir(directory) as listing:
                return sorted(listing, key=lambda e: e.name)
        except OSError as exc:  # unreadable: whatever it holds goes unchecked, so it is a finding
            walked.unreadable.append((display_path(directory), f"cannot read directory: {exc.strerror or exc}"))
            return None

    def walk(top: Path) -> None:
        stack = [top]
        while stack:
            entries = entries_of(stack.pop())
            subdirs = []
            for entry in entries or ():
                path = Path(entry.path)
                if settings.exclude(path):
                    walked.excluded += 1
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    if not entry.name.startswith(".") and entry.name not in SKIP_DIRS:
                        subdirs.append(path)
                elif entry.name.endswith(".py"):
                    add(path)
            stack.extend(reversed(subdirs))  # depth first, in sorted order

    roots: dict[str, Path] = {}
    for root in settings.analysis_paths:  # `check dsv4/` with `paths = ["dsv4"]` names it twice
        roots.setdefault(os.path.realpath(root), root)
    for root in roots.values():
        if settings.exclude(root):
            walked.excluded += root.is_dir()  # a named file that is excluded: pre-commit's normal case
            continue
        if root.is_dir():
            walk(root)
        else:
            add(root)  # explicitly named: read it even without .py, report if unreadable
    return sorted(found.values(), key=display_path)


def read_source(path: Path) -> Source:
    source = Source(display_path(path))
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            source.error = "not a regular file"
            return source
        source.data = path.read_bytes()
    except OSError as exc:
        source.error = f"cannot read file: {exc.strerror or exc}"
        return source
    source.sha256 = hashlib.sha256(source.data).hexdigest()
    return source
