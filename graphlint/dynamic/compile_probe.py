"""What ``torch.compile(mode="reduce-overhead")`` would do with each capturable region (opt-in).

Users choosing between hand capture and torch.compile want both answers in one report. This probe
(``graphlint inventory --probe compile``) builds its own instance, warms it up eagerly, asks
``torch._dynamo.explain`` where each region's graph breaks (with the user stack of every break),
then runs a few steps through ``torch.compile(region, mode="reduce-overhead")`` and records the
recompiles (dynamo's ``recompiles`` log: which guard failed) and the reasons inductor gives for
not using CUDA graphs ("skipping cudagraphs due to ..."). Each record names the innermost project
line, so the report can put it beside graphlint's own finding at that line; so does an error
torch.compile raises (dynamo's own user stack, else the message's or the traceback's frames).
Each step begins with ``torch.compiler.cudagraph_mark_step_begin()``, as a compiled decode loop
must: without it CUDA-graph trees treat the previous step's outputs as still in use. Records
only: the report decides how to show them; nothing here is a rule finding.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterator

from graphlint.dynamic.crash import Progress
from graphlint.dynamic.frames import error_line, is_project_file, traceback_frames
from graphlint.dynamic.target import regions_of
from graphlint.inventory import DeviceResult, ProbeOutcome
from graphlint.paths import display_path

COMPILE_STEPS = 3
_SKIP_FUNCTION = "log_cudagraph_skip_and_bump_counter"
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_GUARD = re.compile(r"^\s*- \S+: (.+?)(?:\s+#.*)?$", re.M)  # "- 0/1: len(args) == 3  # source"
_RECOMPILED = re.compile(r"^Recompiling function \S+ in (.+):(\d+)$", re.M)


@dataclass(frozen=True)
class CompileEvent:
    region: str
    kind: str  # "graph break", "recompile", "cudagraphs skipped", "error"
    reason: str  # first line of torch's own text
    path: str = ""
    line: int = 0


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _project_line(frames) -> tuple[str, int]:
    """The innermost project frame of ``(filename, lineno)`` pairs (innermost last)."""
    for filename, lineno in reversed(list(frames)):
        if is_project_file(filename):
            return display_path(filename), lineno
    return "", 0


def _error_event(region: str, exc: BaseException) -> CompileEvent:
    """An error torch.compile raised, at the innermost project line it names: dynamo's user stack
    (``real_stack``, on the error or what caused it), the frames its message quotes (a CUDA-graph
    tree names where an overwritten output was made), or the traceback."""
    chain, seen = [], exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    candidates = [[(f.filename, f.lineno) for f in getattr(e, "real_stack", None) or ()] for e in chain]
    candidates += [[(f, int(n)) for f, n in _FILE_LINE.findall(str(e))] for e in chain]
    candidates += [[(f, n) for f, n, _ in traceback_frames(e.__traceback__)] for e in chain]
    path, line = next((found for found in map(_project_line, candidates) if found[0]), ("", 0))
    return CompileEvent(region, "error", error_line(exc), path, line)


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:300]


@contextmanager
def _listening() -> Iterator[tuple[_Lines, list[str]]]:
    """Dynamo's recompile log and inductor's cudagraph-skip messages, for the duration."""
    import torch
    import torch._dynamo.guards  # noqa: F401 - registers the recompiles artifact logger
    import torch._inductor.cudagraph_utils as cudagraph_utils

    handler, skips = _Lines(), []
    recompiles = logging.getLogger("torch._dynamo.guards.__recompiles")
    dynamo = logging.getLogger("torch._dynamo")
    dynamo_level = dynamo.level
    recompiles.addHandler(handler)
    original = getattr(cudagraph_utils, _SKIP_FUNCTION, None)
    patched = [m for m in list(sys.modules.values()) if original is not None and getattr(m, _SKIP_FUNCTION, None) is original]

    def spy(message, *args, **kwargs):
        skips.append(str(message))
        return original(message, *args, **kwargs)

    for module in patched:
        setattr(module, _SKIP_FUNCTION, spy)
    torch._logging.set_logs(recompiles=True)
    recompiles.propagate = False  # ours to read, not torch's to print
    dynamo.setLevel(logging.ERROR)  # its graph-break warnings are in the report
    try:
        yield handler, skips
    finally:
        torch._logging.set_logs()
        recompiles.propagate = True
        dynamo.setLevel(dynamo_level)
        recompiles.removeHandler(handler)
        for module in patched:
            setattr(module, _SKIP_FUNCTION, original)


def _recompile_events(region: str, messages: list[str]) -> list[CompileEvent]:
    out = []
    for message in messages:
        where = _FILE_LINE.findall(message)
        path, line = _project_line((f, int(n)) for f, n in where) if where else ("", 0)
        if not path:  # no source line for the guard: the function recompiled, at its ``def``
            function = _RECOMPILED.search(message)
            path, line = _project_line([(function.group(1), int(function.group(2)))]) if function else ("", 0)
        guard = _GUARD.search(message)
        out.append(CompileEvent(region, "recompile", (guard.group(1) if guard else _first_line(message))[:300], path, line))
    return out


def _skip_event(region: str, message: str) -> CompileEvent:
    """Inductor's "skipping cudagraphs due to ..." at the project line of its "Found from" stack."""
    path, line = _project_line((f, int(n)) for f, n in _FILE_LINE.findall(message))
    reason = _first_line(message).split(". Found from", 1)[0]
    return CompileEvent(region, "cudagraphs skipped", reason, path, line)


def compile_events(target, regions, steps: int = COMPILE_STEPS, backend: str | None = None) -> list[CompileEvent]:
    """Graph breaks, recompiles and cudagraph skips of every capturable region of ``target``
    (warmed up and staged at step 0 by the caller). ``backend`` overrides inductor (tests)."""
    import torch

    import logging as _logging

    events: list[CompileEvent] = []
    capturable = [r for r in regions if r.capturable]
    quiet = _logging.getLogger("torch._dynamo")
    level = quiet.level
    quiet.setLevel(_logging.ERROR)  # explain() warns about each break; the report lists them
    target.stage(1)
    for region in regions:
        if not region.capturable:
            region.fn()
            continue
        try:
            explained = torch._dynamo.explain(region.fn)()
        except Exception as exc:  # noqa: BLE001 - one region that cannot be explained is reported, not fatal
            events.append(_error_event(region.name, exc))
            continue
        for reason in explained.break_reasons:
            path, line = _project_line((f.filename, f.lineno) for f in reason.user_stack or ())
            events.append(CompileEvent(region.name, "graph break", _first_line(reason.reason), path, line))
    quiet.setLevel(level)
    torch._dynamo.reset()
    options = {"backend": backend} if backend else {"mode": "reduce-overhead"}
    compiled = {r.name: torch.compile(r.fn, **options) for r in capturable}
    step_begins = getattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)
    with _listening() as (handler, skips):
        for step in range(2, 2 + steps):
            step_begins()
            target.stage(step)
            for region in regions:
                before, skipped = len(handler.messages), len(skips)
                try:
                    compiled.get(region.name, region.fn)()
                except Exception as exc:  # noqa: BLE001 - the region runs eagerly from then on
                    events.append(_error_event(region.name, exc))
                    compiled.pop(region.name, None)
                events += _recompile_events(region.name, handler.messages[before:])
                events += [_skip_event(region.name, message) for message in skips[skipped:]]
    torch._dynamo.reset()
    return list(dict.fromkeys(events))


def event_counts(events: list[CompileEvent]) -> str:
    """``2 errors, 0 graph breaks, ...``: errors first, and only when there are any (a region
    torch.compile failed on must never read as one that compiled cleanly)."""
    counts = {kind: sum(e.kind == kind for e in events) for kind in ("error", "graph break", "recompile",
                                                                     "cudagraphs skipped")}
    if not counts["error"]:
        del counts["error"]
    return ", ".join(f"{n} {kind}{'s' if n != 1 and kind != 'cudagraphs skipped' else ''}" for kind, n in counts.items())


def run_compile_probe(factory, devices, options, label: str, progress: Progress | None = None) -> DeviceResult:
    started = time.perf_counter()
    (progress or Progress(None))("compile")
    target = factory(devices, **options)
    regions = regions_of(target)
    target.stage(0)
    for region in regions:
        region.fn()
    events = compile_events(target, regions)
    detail = f"torch.compile(mode='reduce-overhead'), {COMPILE_STEPS} steps: {event_counts(events)}"
    result = DeviceResult(label, probes=[ProbeOutcome("compile", "ran", detail)])
    result.records["compile"] = [asdict(e) for e in events]
    result.seconds["compile probe"] = time.perf_counter() - started
    return result
