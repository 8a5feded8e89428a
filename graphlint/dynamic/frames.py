"""Attribute a runtime event to the user's source line.

An op, a sync callback or a warning fires deep inside torch (or inside graphlint's own probe
code); the line a user can fix is the innermost frame that belongs to neither, and not to the
standard library either (``contextlib`` wrappers, ``functools.partial`` trampolines). Among
those, a frame of the target's own project (:mod:`graphlint.dynamic.project`: not an installed
library, ``site-packages``, a ``pip --target`` dir, the standard library) wins: an error raised
inside CuTeDSL's JIT executor belongs to the project line that launched the kernel.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from graphlint.dynamic import project
from graphlint.paths import display_path

_GRAPHLINT_DIR = str(Path(__file__).resolve().parent.parent) + os.sep
_STDLIB_DIRS = tuple(d + os.sep for d in project.stdlib_dirs())


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
    """Neither graphlint, torch nor the standard library, judged by the path as spelled and with
    links resolved (Debian's stdlib ``sitecustomize.py`` is a link into ``/etc``)."""
    if filename.startswith("<"):
        return False
    return not any(_not_user(p) for p in {os.path.abspath(filename), str(Path(filename).resolve())})


def _not_user(path: str) -> bool:
    return (path.startswith(_GRAPHLINT_DIR) or path.startswith(_torch_dir())
            or (path.startswith(_STDLIB_DIRS) and not _installed(path))
            or "site-packages" + os.sep + "torch" in path)


def _installed(resolved: str) -> bool:
    """Under site-packages/dist-packages: an installed library (transformers), not the standard
    library, although a venv's or pyenv's ``platstdlib`` directory holds its site-packages."""
    return any(f"{os.sep}{name}{os.sep}" in resolved for name in ("site-packages", "dist-packages"))


def is_project_file(filename: str) -> bool:
    """A user file that no library owns: the target's project, or a file elsewhere (a script in a
    temporary directory); see :mod:`graphlint.dynamic.project`. Findings are pinned on these first."""
    return is_user_file(filename) and project.is_project_file(filename)


def is_own_file(filename: str) -> bool:
    """A source file of the target's own project, which the static cross-check may read: a user
    file (not graphlint, torch or the standard library) strictly inside the project."""
    return is_user_file(filename) and project.is_project_file(filename, strict=True)


def _from_pairs(pairs: list[tuple[str, int, str]]) -> UserFrame | None:
    """``pairs`` innermost first; returns the innermost project frame (else the innermost
    non-torch, non-stdlib frame) with the chain of such frames."""
    user = [(f, ln, fn) for f, ln, fn in pairs if is_user_file(f)]
    if not user:
        return None
    chain = tuple(f"{display_path(f)}:{ln} {fn}" for f, ln, fn in reversed(user[:8]))
    context = (os.getcwd(), tuple(sys.path), project.roots(), project.torch_dir())  # once per event: a hot path
    filename, line, function = next((pair for pair in user if project.owns(pair[0], *context)), user[0])
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


def traceback_frames(tb: types.TracebackType | None) -> list[tuple[str, int, str]]:
    """(file, line, function) of each traceback entry, outermost first."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return frames


def traceback_user_frame(tb: types.TracebackType | None) -> UserFrame | None:
    """The innermost user frame of an exception's traceback (where it was raised)."""
    return _from_pairs(list(reversed(traceback_frames(tb))))


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


def _called(call) -> list:
    """The code objects of the target's own project ``call()`` ran, in call order. One call under
    the recorder (:mod:`graphlint.dynamic.recorder`): nothing is recorded after it."""
    from graphlint.dynamic.recorder import Recorder

    recorder = Recorder(is_own_file)
    with recorder.recording():
        call()
    return list(recorder.codes)


def _spans(codes) -> list[str]:
    """``path.py:first-last``: the lines of each of the target's own functions among ``codes``."""
    spans = []
    for code in codes:
        if not is_own_file(code.co_filename):
            continue
        lines = [line for *_, line in code.co_lines() if line is not None] if hasattr(code, "co_lines") else []
        spans.append(f"{display_path(code.co_filename)}:{code.co_firstlineno}-{max(lines, default=code.co_firstlineno)}")
    return list(dict.fromkeys(spans))


def ran_during(call) -> list[str]:
    """``path.py:first-last`` of every function of the target's own project ``call()`` ran: the code
    a probed step ran, so the cross-reference lists static findings only there (a clean full-graph
    decoder's report must not list the eager decoder's hazards beside it)."""
    return _spans(_called(call))


def staged(stage, step: int, ran: list[str] | None = None) -> list[str]:
    """Call ``stage(step)`` and return ``path.py:Qual.name`` of every function of the target's own
    project it ran, in call order (with ``ran``: their line spans are appended to it, as
    :func:`ran_during` gives them).

    ``stage()`` is the host half of every step: a buffer it rebinds is what a graph then reads
    stale (GL292), and the static half flags such lines (GL204) only when it is told they are on
    the decode path. The region functions alone do not say so, so the cross-reference adds these."""
    from graphlint.dynamic.recorder import qualname

    codes = _called(lambda: stage(step))
    if ran is not None:
        ran += _spans(codes)
    return list(dict.fromkeys(f"{display_path(code.co_filename)}:{qualname(code)}" for code in codes
                              if "<" not in getattr(code, "co_qualname", code.co_name)))


def with_staged(entries: list[str], stage_functions: list[str]) -> list[str]:
    """The regions' entries and the functions ``stage()`` ran; ``[]`` stays ``[]`` (the static half
    then uses its default entries, which a list of stage functions alone would narrow)."""
    return list(dict.fromkeys([*entries, *stage_functions])) if entries else []
