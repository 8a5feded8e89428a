"""Attribute a runtime event to the user's source line.

An op, a sync callback or a warning fires deep inside torch (or inside graphlint's own probe
code); the line a user can fix is the innermost frame that belongs to neither, and not to the
standard library either (``contextlib`` wrappers, ``functools.partial`` trampolines). Among
those, a frame of the project (not in an installed library: ``site-packages``, or a
``sys.path`` directory outside the working directory, such as a ``pip --target`` dir) wins: an
error raised inside CuTeDSL's JIT executor belongs to the project line that launched the kernel.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
import types
from dataclasses import dataclass
from pathlib import Path

from graphlint.paths import display_path

_GRAPHLINT_DIR = str(Path(__file__).resolve().parent.parent) + os.sep
_STDLIB_DIRS = tuple(
    {str(Path(sysconfig.get_paths()[k]).resolve()) + os.sep for k in ("stdlib", "platstdlib")}
)


def _torch_dir() -> str:
    torch = sys.modules.get("torch")
    return str(Path(torch.__file__).resolve().parent) + os.sep if torch else "\0"


@dataclass(frozen=True)
class UserFrame:
    path: str  # POSIX, relative to the working directory when under it
    line: int
    function: str
    chain: tuple[str, ...] = ()  # "path:line function" of the user frames, outermost first


@functools.lru_cache(maxsize=4096)  # called for every frame of every dispatched op
def is_user_file(filename: str) -> bool:
    if filename.startswith("<"):
        return False
    resolved = str(Path(filename).resolve())
    return not (
        resolved.startswith(_GRAPHLINT_DIR)
        or resolved.startswith(_torch_dir())
        or (resolved.startswith(_STDLIB_DIRS) and not _installed(resolved))
        or "site-packages" + os.sep + "torch" in resolved
    )


def _installed(resolved: str) -> bool:
    """Under site-packages/dist-packages: an installed library (transformers), not the standard
    library, although a venv's or pyenv's ``platstdlib`` directory holds its site-packages."""
    return any(f"{os.sep}{name}{os.sep}" in resolved for name in ("site-packages", "dist-packages"))


_PROJECT_ROOTS: list[str] = []  # the target's own project, wherever it is (see add_project_root)


def add_project_root(path: str | os.PathLike) -> None:
    """Count files under ``path`` as the project's (a target outside the working directory)."""
    root = str(Path(path).resolve())
    if root not in _PROJECT_ROOTS:
        _PROJECT_ROOTS.append(root)


@functools.lru_cache(maxsize=4096)
def _is_library_file(filename: str, cwd: str, path: tuple[str, ...], roots: tuple[str, ...] = ()) -> bool:
    resolved = Path(filename).resolve()
    if {"site-packages", "dist-packages"} & set(resolved.parts):
        return True
    if any(resolved.is_relative_to(root) for root in roots):
        return False
    here = Path(cwd).resolve()
    for entry in path:
        root = Path(entry or cwd).resolve()
        if root == here or root.is_relative_to(here) or here.is_relative_to(root):
            continue  # the project itself (or a folder holding it) is not a library
        if resolved.is_relative_to(root):
            return True
    return False


def is_project_file(filename: str) -> bool:
    """A user file of the project itself: neither graphlint, torch, the standard library nor an
    installed library (see :func:`is_user_file` and the module doc)."""
    return is_user_file(filename) and not _is_library_file(filename, os.getcwd(), tuple(sys.path), tuple(_PROJECT_ROOTS))


def _from_pairs(pairs: list[tuple[str, int, str]]) -> UserFrame | None:
    """``pairs`` innermost first; returns the innermost project frame (else the innermost
    non-torch, non-stdlib frame) with the chain of such frames."""
    user = [(f, ln, fn) for f, ln, fn in pairs if is_user_file(f)]
    if not user:
        return None
    chain = tuple(f"{display_path(f)}:{ln} {fn}" for f, ln, fn in reversed(user[:8]))
    cwd, path, roots = os.getcwd(), tuple(sys.path), tuple(_PROJECT_ROOTS)  # once per event: the tracer's hot path
    filename, line, function = next((pair for pair in user if not _is_library_file(pair[0], cwd, path, roots)), user[0])
    return UserFrame(display_path(filename), line, function, chain)


def current_user_frame(frame: types.FrameType | None = None) -> UserFrame | None:
    """The innermost user frame of the running stack."""
    frame = frame or sys._getframe(1)
    pairs = []
    while frame is not None:
        pairs.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return _from_pairs(pairs)


# Terminal colour codes: CuTeDSL colours its errors ("\x1b[91m\x1b[1merror:\x1b[0m ..."); a
# report is markdown or JSON, where they are noise.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def error_line(exc: BaseException, limit: int | None = 300) -> str:
    """``Type: first line of the message``, colour codes stripped: how every report names an error."""
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}"
    return line[:limit] if limit else line


def traceback_user_frame(tb: types.TracebackType | None) -> UserFrame | None:
    """The innermost user frame of an exception's traceback (where it was raised)."""
    pairs = []
    while tb is not None:
        pairs.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return _from_pairs(list(reversed(pairs)))


def _unwrap(fn):
    """The plain function under bound methods, ``functools.partial`` and decorators
    (``torch.no_grad()(partial(self._layer, i))``)."""
    fn = getattr(fn, "__func__", fn)
    while hasattr(fn, "func") or hasattr(fn, "__wrapped__"):
        fn = getattr(fn, "__wrapped__", None) or fn.func
    return getattr(fn, "__func__", fn)


def function_frame(fn) -> UserFrame | None:
    """Where a region's function is defined: the fallback location for region-level findings."""
    fn = _unwrap(fn)
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "forward", None), "__code__", None)
    if code is None and hasattr(fn, "forward"):
        code = fn.forward.__func__.__code__
    if code is None:
        return None
    return UserFrame(display_path(code.co_filename), code.co_firstlineno, code.co_name)


def region_entry(region) -> str:
    """``path.py:Qual.name`` of a region's function, as ``graphlint check --entry`` takes it."""
    if region.extra.get("entry"):
        return region.extra["entry"]
    fn = _unwrap(region.fn)
    code, qualname = getattr(fn, "__code__", None), getattr(fn, "__qualname__", "")
    if code is None or "<" in qualname or not is_user_file(code.co_filename):
        return ""
    return f"{display_path(code.co_filename)}:{qualname}"


def region_sources(regions) -> list[str]:
    """The files defining the regions' functions, closures included: even when a region cannot
    be a static entry, its file tells the cross-check which package the step lives in."""
    frames = [function_frame(r.fn) for r in regions]
    return sorted({f.path for f in frames
                   if f is not None and not Path(f.path).is_absolute() and is_user_file(f.path)})


def region_entries(regions) -> list[str]:
    """The regions' functions as static entries; ``[]`` when one of them has none (a lambda, a
    closure), because a partial entry list would hide that region's code from the static half."""
    entries = [region_entry(r) for r in regions]
    return list(dict.fromkeys(entries)) if all(entries) else []
