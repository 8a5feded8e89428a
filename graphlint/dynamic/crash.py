"""A probe that crashed: where it was, and the first line that says why.

A worker can die without a word to its parent: a device-side assert aborts the process from a
destructor (SIGABRT), a segfault in an extension kills it. So every worker keeps a small progress
file (probe, step, what was running) and runs with ``faulthandler`` on, and its parent turns the
exit status, that file and the worker's output into a :class:`Crash`: the step, the probe, the
innermost project frame, and the first *useful* error line -- the device assert's own message
(``Indexing.cu:1515: indexSelectSmallIndex: ... Assertion `srcIndex < srcSelectDimSize` failed``),
not the last C++ frame of a stack. Pure functions over text, so tested without a GPU.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
import sys
from dataclasses import dataclass

_ASSERT = re.compile(r"(?P<file>[\w./-]+\.cuh?):(?P<line>\d+): (?P<kernel>[^:]+): .*?(?P<msg>Assertion .* failed\.?)")
_PY_ERROR = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)\b: .+")
_TB_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+),? in (?P<fn>\S+)')
_NOISE = re.compile(r"^\s*(frame #\d+|Exception raised from|0x[0-9a-f]+|\[|Compile with|For debugging|"
                    r"CUDA kernel errors might|Search for `cudaErrorAssert`|Device-side assertions)")
DEVICE_ASSERT = "device-side assert"
# A capture whose first failing operation reports this never reached its own hazard: the capture
# was already invalid when it began, left so by an earlier failure in the process.
CASCADE_TEXT = "operation failed due to a previous error during capture"


@dataclass(frozen=True)
class Crash:
    probe: str  # the probe that was running
    step: int | None
    running: str  # a region, "stage(5)", "build", ...
    error: str  # the first useful error line
    where: tuple[str, int, str] | None  # innermost project frame (path, line, function)
    how: str  # "exit code 1", "killed by SIGABRT"

    def describe(self) -> str:
        at = f" at step {self.step}" if self.step is not None else ""
        place = f" in {self.running}" if self.running else ""
        frame = f" (last project frame {self.where[0]}:{self.where[1]} in {self.where[2]})" if self.where else ""
        return f"worker {self.how}{at}{place} during {self.probe}: {self.error}{frame}"

    @property
    def device_assert(self) -> bool:
        return DEVICE_ASSERT in self.error or "Assertion" in self.error


def is_cascade(capture_detail: str) -> bool:
    """A capture failed because of an earlier one, not because of anything in its region (the
    detail's first error, before " (then: ...)", is the cascade text)."""
    return CASCADE_TEXT in capture_detail.split(" (then: ")[0]


class SharedPage:
    """A small file mapped MAP_SHARED. A write is a memory copy, not a syscall, and the kernel keeps
    the page when the process dies, so the parent reads the last write after any crash."""

    def __init__(self, path: str, size: int) -> None:
        with open(path, "wb") as fh:
            fh.write(b"\0" * size)
        self._file = open(path, "r+b")  # noqa: SIM115 - open for the life of the worker
        self._map = mmap.mmap(self._file.fileno(), size)
        self.size = size

    def write(self, data: bytes) -> None:
        data = data[:self.size - 1]
        self._map[:len(data) + 1] = data + b"\0"


def read_page(path: str, size: int) -> str | None:
    """What a :class:`SharedPage` at ``path`` last held (``None`` without the file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size).split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        return None


class Progress:
    """Where a worker is, for its parent to read after the worker died (or ``None``).

    It is called before every region of every step, so it writes into a :class:`SharedPage`: a
    file rewritten and renamed each time cost 130 us a call on this project's CI machine, 2% of
    a launch-bound eager step and 10% of a replayed one. The parent reads it only once the
    worker has exited, so no read races a write."""

    SIZE = 1024

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._page: SharedPage | None = None

    def __call__(self, probe: str, step: int | None = None, running: str = "") -> None:
        if not self.path:
            return
        if self._page is None:
            self._page = SharedPage(self.path, self.SIZE)
        self._page.write(json.dumps({"probe": probe, "step": step, "running": running[:400]}).encode("utf-8"))

    def snapshot(self, data: dict) -> None:
        """What the worker has observed so far (a DeviceResult as a dict), for a parent whose worker
        dies later: the capture matrix and the replay verdict are not lost with it."""
        if not self.path:
            return
        tmp = self.path + ".partial.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, default=str)
        os.replace(tmp, self.path + ".partial")


def read_progress(path: str) -> dict:
    try:
        data = json.loads(read_page(path, Progress.SIZE) or "")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def read_partial(progress_path: str) -> dict | None:
    try:
        with open(progress_path + ".partial", encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def first_useful_error(text: str) -> str:
    """The device assert's message, else the last Python error line, else a C++ ``what()``, else
    the last line that is not a stack frame."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        m = _ASSERT.search(ln)
        if m:
            where = f"{os.path.basename(m.group('file'))}:{m.group('line')}"
            return f"device-side assert in {m.group('kernel').strip()} ({where}): {m.group('msg')}"
    errors = [ln.strip() for ln in lines if _PY_ERROR.match(ln.strip())]
    if errors:
        return errors[-1][:400]
    whats = [ln.split("what():", 1)[1].strip() for ln in lines if "what():" in ln]
    if whats:
        return whats[0][:400]
    useful = [ln.strip() for ln in lines if not _NOISE.match(ln) and not _TB_FRAME.match(ln)]
    return (useful[-1] if useful else "no output")[:400]


def frames(text: str) -> list[tuple[str, int, str]]:
    """Python frames in ``text`` (tracebacks and faulthandler dumps), innermost first."""
    out, block, innermost_first = [], [], False
    for ln in text.splitlines():
        if "most recent call first" in ln or "most recent call last" in ln:
            out += block if innermost_first else block[::-1]
            block, innermost_first = [], "first" in ln
            continue
        m = _TB_FRAME.match(ln)
        if m:
            block.append((m.group("path"), int(m.group("line")), m.group("fn")))
    out += block if innermost_first else block[::-1]
    return out


def crash_of(returncode: int, output: str, progress: dict, is_project_file,
             last_line: tuple[str, int, str] | None = None) -> Crash:
    """What a dead worker's exit status, output and progress file say happened; ``last_line`` (a
    :class:`LastLine` record) names the line when no stack in the output has a project frame."""
    project = [f for f in frames(output) if is_project_file(f[0])]
    return Crash(progress.get("probe", "startup"), progress.get("step"), progress.get("running", ""),
                 first_useful_error(output), project[0] if project else last_line, how_it_ended(returncode))


class LastLine:
    """The last project line a worker ran, in a shared file mapping that outlives the process.

    Only the ``CUDA_LAUNCH_BLOCKING=1`` re-run that locates a device-side assert records it. With
    launches synchronous the assert surfaces inside the op of the line that launched the kernel,
    but the process then aborts from C++, where neither a traceback nor ``faulthandler`` names a
    project frame (the H200, 2026-12-02: SIGABRT, no frame). A line tracer limited to project
    files writes ``path, line, function`` into the mapping at every line; the kernel keeps a
    MAP_SHARED page when its process dies, so the parent reads the line the worker was on.
    Tracing costs the re-run time, never the probes: nothing else turns it on.
    """

    SIZE = 1024

    def __init__(self, path: str, is_project_file) -> None:
        self._page = SharedPage(path, self.SIZE)
        self._is_project_file = is_project_file
        self._project: dict[str, bool] = {}

    def _write(self, frame) -> None:
        code = frame.f_code
        self._page.write(f"{code.co_filename}\t{frame.f_lineno}\t{code.co_name}".encode("utf-8", "replace"))

    def _owned(self, frame) -> bool:
        name = frame.f_code.co_filename
        owned = self._project.get(name)
        if owned is None:
            owned = self._project[name] = self._is_project_file(name)
        return owned

    def _local(self, frame, event, arg):
        if event == "line":
            self._write(frame)
        elif event == "return" and frame.f_back is not None and self._owned(frame.f_back):
            self._write(frame.f_back)  # back in the caller's line, which may launch the next op
        return self._local

    def _global(self, frame, event, arg):
        return self._local if self._owned(frame) else None

    def start(self) -> None:
        sys.settrace(self._global)

    def stop(self) -> None:
        sys.settrace(None)


def read_last_line(path: str) -> tuple[str, int, str] | None:
    """What a :class:`LastLine` recorded at ``path`` (``None`` when nothing was)."""
    raw = read_page(path, LastLine.SIZE)
    parts = (raw or "").split("\t")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2]


def assert_message(output: str) -> str:
    """The device assert line in a worker's output ('' when there is none)."""
    error = first_useful_error(output)
    return error if error.startswith(DEVICE_ASSERT) else ""
