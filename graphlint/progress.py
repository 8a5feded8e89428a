"""Terminal progress for ``check`` and ``inventory``: which phase runs, and a count of what it counts.

A bar stuck at 100% for a minute (check's linking) or at 0% for a whole inventory says nothing;
each line names its phase and counts its unit: files for ``check`` ("analysing 412/600 files",
"cross-file pass 24/24 files", "linking 600 files"), steps for ``inventory`` ("cuda:0 soak step
120/512", the bar counting devices x probes x steps). Only on a terminal (stderr), never with
``--no-progress``, and transient: nothing is left in the scrollback or in a pipe.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

UNITS = {"analysing": "files", "cross-file pass": "files"}

#: The locks of the bars drawing now. rich's refresh thread keeps the clock ticking while a phase
#: sends no news (one 25,000-line file held the whole-torch check's bar still for 40-50 s, and it
#: looked hung); the check forks its workers, so each fork waits until no thread is drawing (holds
#: these locks): a child never starts with a half-written stderr buffer or a held rich lock.
_DRAWING: list[threading.RLock] = []


def _hold_for_fork() -> None:
    for lock in _DRAWING:
        lock.acquire()


def _release_after_fork() -> None:
    for lock in reversed(_DRAWING):
        lock.release()


def _release_in_child() -> None:
    _release_after_fork()
    _DRAWING.clear()  # the child draws nothing


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_hold_for_fork, after_in_parent=_release_after_fork, after_in_child=_release_in_child)


def wanted(no_progress: bool, stream: Any = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    return not no_progress and bool(getattr(stream, "isatty", lambda: False)())


def _progress(console, auto_refresh: bool):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                    TimeElapsedColumn(), console=console or Console(stderr=True), transient=True,
                    auto_refresh=auto_refresh, refresh_per_second=4)


def _fork_safe_lock(progress) -> threading.RLock | None:
    """The lock rich's refresh thread draws under (``Live._lock``), when this rich has one."""
    lock = getattr(getattr(progress, "live", None), "_lock", None)
    return lock if hasattr(lock, "acquire") and hasattr(os, "register_at_fork") else None


def _set(progress, task, description: str, done: int, total: int | None, unit: str, refresh: bool = False) -> None:
    """``total=None``: a phase that cannot be counted (the bar pulses; rich's ``update`` cannot
    unset a total, so it is set on the task)."""
    count = f"{done}/{total} {unit}".rstrip() if total is not None else ""
    progress.update(task, description=description, completed=done, count=count)
    progress.tasks[progress.task_ids.index(task)].total = total
    if refresh:
        progress.refresh()


class CheckProgress:
    """``graphlint check``'s bar, driven by the check's ``(done, total, phase)`` callback, its clock
    and spinner kept moving by rich's refresh thread between callbacks. The check forks worker
    processes, and forking while another thread holds a lock is how pools deadlock: every fork
    waits for the drawing lock (:data:`_DRAWING`); where that lock cannot be found, the bar is
    drawn from ``update`` only, as before.
    """

    def __init__(self, console=None) -> None:
        probe = _progress(console, auto_refresh=True)
        self._lock = _fork_safe_lock(probe)
        self._progress = probe if self._lock is not None else _progress(console, auto_refresh=False)
        self._task = self._progress.add_task("graphlint: finding files", total=None, count="")
        self._files = 0
        if self._lock is not None:
            _DRAWING.append(self._lock)
        self._progress.start()

    def update(self, done: int, total: int | None, phase: str = "analysing") -> None:
        if phase == "analysing" and total is not None:
            self._files = total
        description = f"graphlint: {phase}"
        if phase == "linking":  # one step over every summary: nothing to count but the files linked
            description = f"graphlint: linking the call graph of {self._files} files"
        _set(self._progress, self._task, description, done, total, UNITS.get(phase, ""), refresh=True)

    def close(self) -> None:
        self._progress.stop()
        if self._lock is not None and self._lock in _DRAWING:
            _DRAWING.remove(self._lock)


class InventoryProgress:
    """``graphlint inventory``'s bar: total = the steps every device's phases will stage
    (:func:`graphlint.dynamic.run.planned_steps`), each phase counted by the furthest step it
    reached (the replay probe's two instances stage each step; a re-run after a failed capture
    starts again at 1 and does not count twice)."""

    def __init__(self, total: int, devices: int, console=None) -> None:
        self._progress = _progress(console, auto_refresh=True)
        plural = "s" if devices != 1 else ""
        self._task = self._progress.add_task(f"graphlint: probing {devices} device{plural}", total=total,
                                             count=f"0/{total} steps")
        self._total = total
        self._furthest: dict[tuple[str, str], int] = {}

    def __enter__(self) -> "InventoryProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.stop()

    def step(self, device: str, probe: str, step: int, total: int) -> None:
        phase = "trace" if probe == "tracer" else "graph"
        key = (device, phase)
        self._furthest[key] = max(self._furthest.get(key, 0), step)
        _set(self._progress, self._task, f"graphlint: {device} {probe} step {step}/{total}",
             sum(self._furthest.values()), self._total, "steps")

    def done(self, what: str) -> None:
        self._progress.update(self._task, description=f"graphlint: {what} done")
