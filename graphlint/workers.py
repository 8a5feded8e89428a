"""Run one task per file in child processes, so that no file can take the run down with it.

A file can crash libcst's native parser (a segfault: nothing to catch), make it allocate
gigabytes, or take minutes. So the check never parses in its own process. Each worker handles one
file at a time, and the parent always knows which file each worker holds:

* a worker that dies (a signal, the kernel's OOM killer) costs its file a finding, never the run:
  a new worker takes its place and the other files go on;
* a file that runs past ``timeout`` seconds, or makes its worker hold more than ``memory`` bytes
  of its own (resident, not shared with the parent; read from ``/proc``, so Linux only), has its
  worker killed and replaced. The seconds are the worker's CPU seconds where ``/proc`` tells them
  (Linux): on a loaded machine a file's wall time grows with the load, and a wall-clock limit made
  which files were analysed -- and so the findings -- depend on it. A worker that is blocked
  rather than busy is still stopped after :data:`WALL_FACTOR` times the timeout of wall time;
  elsewhere the timeout is wall time;
* every file that failed is retried once on its own, after the others (an OOM kill may have hit
  the wrong worker; a loaded machine may have slowed a big file down); a second failure is final.

Workers are forked where the platform allows it (they inherit the parent's imports: starting one
costs milliseconds, so even one file gets one). Each runs the tasks on a thread with a 256 MB
stack and a recursion limit of 20,000: the analysis recurses once per level of a file's nesting,
and :mod:`graphlint.static.budget` lets files nest 1,500 levels deep.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable

from graphlint.workqueue import WorkQueue

STACK_SIZE = 256 << 20
RECURSION_LIMIT = 20_000
POLL_S = 0.1
ORPHAN_POLL_S = 1.0  # how often an idle worker checks that its parent is still there
DEPTH = 2  # items a worker holds: the one it is on, and the next
WALL_FACTOR = 10  # a file's wall time over this many timeouts stops it even when its CPU time is under

Outcome = tuple[Any, str, str]  # (result or None, failure code or "", failure message)


@dataclass(frozen=True)
class Limits:
    timeout: float = 0.0  # seconds per file; 0: none
    memory: int = 0  # bytes of resident memory per worker; 0: none


def context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else None)


def _serve(conn, parent_end, task, initializer, initargs) -> None:
    """A worker's life. Its main thread only receives (so the parent's sends never wait on a busy
    worker), a big-stack thread runs the tasks in order and sends the results.

    A forked worker inherits the parent's end of its own pipe (and of its elder siblings' pipes),
    so the parent's exit alone is no end of file here: it closes its copy of its own, and it also
    leaves when its parent is gone (a parent killed, or one that exited from a thread that never
    stopped its workers), instead of living on and holding the parent's stdout open."""
    if parent_end is not None:
        parent_end.close()
    parent_pid = os.getppid()
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def work() -> None:
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        if initializer is not None:
            initializer(*initargs)
        while (message := inbox.get()) is not None:
            index, item = message
            conn.send((index, task(item)))

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    threading.stack_size(STACK_SIZE)
    thread = threading.Thread(target=work, name="graphlint-worker", daemon=True)
    thread.start()
    while True:
        try:
            while not conn.poll(ORPHAN_POLL_S):
                if os.getppid() != parent_pid:
                    os._exit(0)  # orphaned: nobody will read what this worker sends
            message = conn.recv()
        except (EOFError, OSError):
            message = None
        inbox.put(message)
        if message is None:
            break
    thread.join()


def run_deep(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a thread with the workers' stack and recursion limit, here in this process:
    for whole-program work (linking) that recurses as deep as the deepest file the budget let in."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    old = threading.stack_size()
    try:
        threading.stack_size(STACK_SIZE)
        thread = threading.Thread(target=target, name="graphlint-deep", daemon=True)
        thread.start()
    finally:
        threading.stack_size(old)
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    if "error" in box:
        raise box["error"]
    return box.get("value")


class _Worker:
    """A worker process and the items it holds, in order: the first is the one it is on."""

    def __init__(self, ctx, task, initializer, initargs):
        parent, child = ctx.Pipe()
        inherited = parent if ctx.get_start_method() == "fork" else None
        self.process = ctx.Process(target=_serve, args=(child, inherited, task, initializer, initargs), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.held: deque[int] = deque()
        self.started = 0.0  # when it began the first item it holds
        self.cpu_started: float | None = None  # its CPU seconds then (None: /proc cannot tell)
        self.kept: set = set()  # the keys of the items it was handed (:mod:`graphlint.workqueue`)

    @property
    def index(self) -> int | None:
        return self.held[0] if self.held else None

    def give(self, index: int, item: Any) -> None:
        """Hand over one item; a worker that died in between is found by its sentinel."""
        if not self.held:
            self._start()
        self.held.append(index)
        try:
            self.conn.send((index, item))
        except OSError:
            pass

    def done(self, index: int) -> None:
        if self.held and self.held[0] == index:
            self.held.popleft()
            self._start()

    def _start(self) -> None:
        self.started = time.monotonic()
        self.cpu_started = cpu_seconds(self.process.pid)

    def seconds(self) -> tuple[float, float]:
        """(CPU seconds, wall seconds) spent on the item it is on; CPU is wall where /proc cannot tell."""
        wall = time.monotonic() - self.started
        now = cpu_seconds(self.process.pid) if self.cpu_started is not None else None
        return (wall if now is None else now - self.cpu_started), wall

    def stop(self, kill: bool = False) -> None:
        if kill and self.process.is_alive():
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(5 if not kill else None)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class Reserve:
    """Workers forked now, while this process is small, for tasks handed out later.

    A forked worker's resident memory counts every page it shares with its parent. Forked after
    the parent has loaded every summary of a large project, the worker that summarizes its largest
    file again (the cross-file pass) peaked 0.4 GB above the same file's first summary (torch:
    1.24 GB against 0.87 GB). Forked before, it shares only the imports and the sources. Workers
    come back here after each :func:`run_tasks` that took them (the next round uses them again);
    one that failed is replaced by a worker forked then. Empty where workers are not forked."""

    def __init__(self) -> None:
        self.workers: list[_Worker] = []
        self.task: Callable | None = None

    def start(self, jobs: int, task: Callable[[Any], Any], initializer: Callable | None = None,
              initargs: tuple = ()) -> None:
        ctx = context()
        if self.workers or ctx.get_start_method() != "fork":
            return
        self.task = task
        try:
            for _ in range(jobs):
                self.workers.append(_Worker(ctx, task, initializer, initargs))
        except OSError:
            self.close()

    def take(self, task: Callable) -> _Worker | None:
        return self.workers.pop() if self.workers and task is self.task else None

    def close(self) -> None:
        workers, self.workers = self.workers, []
        for worker in workers:
            worker.stop()

    def __enter__(self) -> "Reserve":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_tasks(items: list, task: Callable[[Any], Any], *, jobs: int, limits: Limits = Limits(),
              initializer: Callable | None = None, initargs: tuple = (),
              progress: Callable[[int], None] | None = None, reserve: Reserve | None = None,
              key: Callable[[Any], Any] | None = None) -> list[Outcome]:
    """``task(item)`` for every item, in worker processes; outcomes in the order of ``items``.

    ``progress(done)`` is called as items finish. A failed item's outcome is ``(None, code,
    message)``: GL005 for time and memory, GL002 for a worker that died. Where no process can be
    started at all (a sandbox), the tasks run here, unprotected, as they always did before.
    ``reserve``: its workers run the tasks first (:class:`Reserve`), and go back to it after. ``key``: items
    of a key a worker ran before go back to it first (:mod:`graphlint.workqueue`)."""
    if not items:
        return []
    outcomes: list[Outcome | None] = [None] * len(items)
    keys = [key(item) for item in items] if key is not None else None
    try:
        failed = _run(items, range(len(items)), task, max(1, min(jobs, len(items))), limits, initializer,
                      initargs, outcomes, progress, reserve, keys)
    except _CannotStart:
        if initializer is not None:
            initializer(*initargs)
        for index, item in enumerate(items):
            outcomes[index] = (task(item), "", "")
            if progress:
                progress(index + 1)
        return outcomes  # type: ignore[return-value]
    for index, _ in failed:  # once more, each on its own
        again = _run(items, [index], task, 1, limits, initializer, initargs, outcomes, None, reserve, keys)
        if again:
            code, message = again[0][1]
            outcomes[index] = (None, code, message + ", also when retried on its own")
    return outcomes  # type: ignore[return-value]


class _CannotStart(Exception):
    pass


def _start(ctx, task, initializer, initargs) -> _Worker:
    try:
        return _Worker(ctx, task, initializer, initargs)
    except OSError as exc:
        raise _CannotStart(str(exc)) from exc


def _run(items, indices, task, jobs, limits, initializer, initargs, outcomes, progress, reserve=None, keys=None):
    """Each worker holds up to :data:`DEPTH` items, so it never waits for the parent between two."""
    ctx = context()
    failed: list[tuple[int, tuple[str, str]]] = []
    workers: list[_Worker] = []
    done = sum(o is not None for o in outcomes)

    def fill(worker: _Worker) -> None:
        while pending and len(worker.held) < DEPTH:
            index = pending.take(worker)
            worker.give(index, items[index])

    try:
        for _ in range(jobs):
            workers.append((reserve.take(task) if reserve else None) or _start(ctx, task, initializer, initargs))
        pending = WorkQueue(indices, keys, workers)
        for worker in workers:
            fill(worker)
        while any(w.held for w in workers):
            busy = [w for w in workers if w.held]
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], POLL_S)
            for slot, worker in enumerate(workers):
                if not worker.held:
                    continue
                failure = None
                if worker.conn in ready or worker.process.sentinel in ready:
                    try:
                        first = True
                        while worker.held and (first or worker.conn.poll()):
                            first = False
                            index, result = worker.conn.recv()
                            worker.done(index)
                            pending.done(worker, index)
                            outcomes[index] = (result, "", "")
                            done += 1
                            if progress:
                                progress(done)
                    except (EOFError, OSError):
                        failure = _death(worker)
                else:
                    failure = _over_limits(worker, limits)
                if failure is not None:
                    culprit, *others = worker.held
                    failed.append((culprit, failure))
                    pending.lost(worker, others)  # not theirs to pay for
                    worker.held.clear()
                    worker.stop(kill=True)
                    worker = workers[slot] = _start(ctx, task, initializer, initargs)
                fill(worker)
    finally:
        for worker in workers:
            if reserve is not None and reserve.task is task and not worker.held and worker.process.is_alive():
                reserve.workers.append(worker)
            else:
                worker.stop(kill=bool(worker.held))
    for index, (code, message) in failed:
        outcomes[index] = (None, code, message)
    return failed


def _death(worker: _Worker) -> tuple[str, str]:
    worker.process.join(1)
    code = worker.process.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == getattr(signal, "SIGKILL", 9):
            return "GL005", f"not analysed: its process was killed ({name}: most likely out of memory)"
        return "GL002", f"internal error: the process analysing this file died ({name})"
    return "GL002", f"internal error: the process analysing this file exited (exit code {code})"


def _over_limits(worker: _Worker, limits: Limits) -> tuple[str, str] | None:
    if limits.timeout and _over_time(worker, limits.timeout):
        return "GL005", (f"not analysed: took more than {limits.timeout:g} s (file-timeout); raise file-timeout "
                         "or exclude the file")
    if limits.memory and all_resident_bytes(worker.process.pid) > limits.memory:  # else its own part is not either
        rss = resident_bytes(worker.process.pid)
        if rss > limits.memory:
            return "GL005", (f"not analysed: needed more than {limits.memory >> 20} MB of memory (file-memory); "
                             "raise file-memory or exclude the file")
    return None


def _over_time(worker: _Worker, timeout: float) -> bool:
    cpu, wall = worker.seconds()
    return cpu > timeout or wall > WALL_FACTOR * timeout


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int | None) -> float | None:
    """User and system CPU seconds of a process, its threads included (``/proc/PID/stat``);
    None where ``/proc`` cannot tell (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()  # the name in parentheses may hold spaces
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, ValueError, IndexError):
        return None


def all_resident_bytes(pid: int | None) -> int:
    """Every resident page of a process, shared ones included: an upper bound of
    :func:`resident_bytes` that costs one read of ``statm`` (``smaps_rollup`` walks the page
    tables: checking it at every poll cost the parent about a tenth of a core). Where ``statm``
    cannot tell, a bound no limit is under, so that the exact reading decides."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 1 << 62


def resident_bytes(pid: int | None) -> int:
    """The memory a process holds of its own: resident pages not shared with another process
    (a forked worker shares its parent's pages until it writes them; those are not its cost).
    From ``/proc/PID/smaps_rollup`` (Linux 4.14+), else all resident pages from ``statm``; 0 where
    ``/proc`` cannot tell (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            fields = dict(line.split(b":", 1) for line in handle.read().splitlines()[1:] if b":" in line)
        return (int(fields[b"Private_Clean"].split()[0]) + int(fields[b"Private_Dirty"].split()[0])) * 1024
    except (OSError, ValueError, KeyError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0
