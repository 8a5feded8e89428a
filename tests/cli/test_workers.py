"""A file that crashes, hangs or eats memory costs that file a finding, never the run
(graphlint.workers): the worker is replaced, the file retried once on its own, the rest checked.

The misbehaviour is injected by patching ``summarize_file`` in this process: workers are forked
from it and inherit the patch."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

import pytest

from graphlint.workers import Limits, resident_bytes, run_tasks

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork and /proc: the isolation is Linux-tested")


def misbehave(monkeypatch, how):
    import graphlint.static.summarize as summarize

    real = summarize.summarize_file

    def patched(path, source, rules, options, *facts):
        if "bad" in path:
            how(path)
        return real(path, source, rules, options, *facts)

    monkeypatch.setattr(summarize, "summarize_file", patched)


def project_with_bad_file(project, n=20):
    for i in range(n):
        project.write(f"src/m{i:02d}.py", project.hot_item.replace("decode_step", f"decode_step{i}"))
    project.write("src/bad.py", project.hot_item.replace("decode_step", "decode_bad"))
    return project.item_code()


def rules_by_path(result):
    return {(f["path"], f["rule"]) for f in result.json()["findings"]}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_segfault_costs_one_file_and_is_retried_alone(project, monkeypatch, jobs):
    code = project_with_bad_file(project)
    # a real segfault (a read of address 0), not os.kill(SIGSEGV): a handler that returns (Rust's,
    # once libcst's native parser has run in the worker, chained after pytest's faulthandler)
    # survives a sent signal, never a fault, which repeats until the process dies
    misbehave(monkeypatch, lambda path: ctypes.string_at(0))
    result = project.run("src", "--format", "json", "--jobs", jobs)
    assert result.rc == 2  # GL002: graphlint failed on a file, the result is incomplete
    found = result.json()["findings"]
    (crash,) = [f for f in found if f["path"] == "src/bad.py"]
    assert crash["rule"] == "GL002" and crash["message"] == (
        "internal error: the process analysing this file died (SIGSEGV), also when retried on its own")
    assert rules_by_path(result) - {("src/bad.py", "GL002")} == {(f"src/m{i:02d}.py", code) for i in range(20)}


def test_a_crash_that_does_not_happen_again_alone_costs_nothing(project, monkeypatch, tmp_path):
    code = project_with_bad_file(project)
    marker = tmp_path / "crashed-once"

    def once(path):
        if not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would

    misbehave(monkeypatch, once)
    result = project.run("src", "--format", "json", "--jobs", "2")
    assert result.rc == 1 and ("src/bad.py", code) in rules_by_path(result) and marker.exists()


def spin(path):
    """An analysis that never ends: busy, as a hang in the walk would be."""
    while True:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("how", [spin, lambda path: time.sleep(60)], ids=["busy", "blocked"])
def test_a_hang_is_stopped_at_the_file_timeout(project, monkeypatch, how):
    """A busy hang at its CPU seconds; a blocked one (no CPU time) at WALL_FACTOR timeouts of wall time."""
    import graphlint.workers as workers

    monkeypatch.setattr(workers, "WALL_FACTOR", 3)
    project_with_bad_file(project, n=3)
    misbehave(monkeypatch, how)
    start = time.perf_counter()
    result = project.run("src", "--format", "json", "--file-timeout", "1")
    assert time.perf_counter() - start < 20  # about 2 s busy, 6 s blocked: the limit, and once more alone
    (hang,) = [f for f in result.json()["findings"] if f["path"] == "src/bad.py"]
    assert (hang["rule"], hang["line"]) == ("GL005", 1)
    assert hang["message"] == ("not analysed: took more than 1 s (file-timeout); raise file-timeout or exclude the "
                               "file, also when retried on its own")
    assert result.rc == 1 and len(result.json()["findings"]) == 4


def test_the_file_timeout_counts_cpu_seconds_not_the_wait_for_a_core(monkeypatch):
    """On a loaded machine a file waits for a core: that wait is wall time, not the file's cost."""
    import graphlint.workers as workers

    pid = os.getpid()
    assert workers.cpu_seconds(pid) is not None and workers.cpu_seconds(-1) is None
    worker = workers._Worker.__new__(workers._Worker)
    worker.process = type("P", (), {"pid": pid})()
    worker._start()
    time.sleep(1.2)  # waiting, as for a core: wall time passes, CPU time does not
    cpu, wall = worker.seconds()
    assert wall >= 1.2 and cpu < 0.5
    assert not workers._over_time(worker, 1.0)
    assert workers._over_time(worker, 0.1)  # past WALL_FACTOR (10) timeouts of wall time


def test_memory_is_bounded_per_worker(project, monkeypatch):
    project_with_bad_file(project, n=2)

    def hog(path):
        block = bytearray(400 << 20)  # touched: resident
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(5)

    misbehave(monkeypatch, hog)
    result = project.run("src", "--format", "json", "--file-memory", "200MB")
    (hog_finding,) = [f for f in result.json()["findings"] if f["path"] == "src/bad.py"]
    assert hog_finding["rule"] == "GL005" and "needed more than 200 MB of memory (file-memory)" in hog_finding["message"]


def test_a_killed_worker_reads_as_memory(project, monkeypatch):
    project_with_bad_file(project, n=2)
    misbehave(monkeypatch, lambda path: os.kill(os.getpid(), signal.SIGKILL))
    (killed,) = [f for f in project.run("src", "--format", "json").json()["findings"] if f["path"] == "src/bad.py"]
    assert killed["rule"] == "GL005" and "killed (SIGKILL: most likely out of memory)" in killed["message"]


def _double(x):
    return x * 2


def _slow_or_double(x):
    if x == 3:
        time.sleep(30)
    return x * 2


def test_run_tasks_keeps_order_and_reports_progress():
    seen = []
    outcomes = run_tasks(list(range(50)), _double, jobs=3, progress=seen.append)
    assert outcomes == [(x * 2, "", "") for x in range(50)] and seen == list(range(1, 51))
    outcomes = run_tasks([1, 2, 3, 4], _slow_or_double, jobs=2, limits=Limits(timeout=0.5))
    assert [o[0] for o in outcomes] == [2, 4, None, 8] and outcomes[2][1] == "GL005"


def test_workers_recurse_as_deep_as_the_budget_allows():
    assert run_tasks([1], _deep, jobs=1)[0][0] == 5000


def _deep(_, n=5000):
    return 0 if n == 0 else 1 + _deep(None, n - 1)


def test_resident_bytes():
    assert resident_bytes(os.getpid()) > 1 << 20 and resident_bytes(None) == 0


def test_a_batch_of_mutated_files_through_the_workers(project):
    """Mutated fixtures (bench/mutations.py), sixteen files or more: parallel workers, the CLI,
    JSON out -- no traceback, no GL002."""
    import importlib.util
    import random
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("graphlint_bench_mutations_cli", root / "bench" / "mutations.py")
    mutations = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mutations)
    fixtures = sorted(p for p in (root / "fixtures" / "static").rglob("*.py") if p.stat().st_size < 20_000)
    rng = random.Random(23)
    for i in range(24):
        data, _ = mutations.mutate(fixtures[i % len(fixtures)].read_bytes(), rng, 2)
        project.write(f"src/m{i:02d}.py", data)
    result = project.run("src", "--format", "json", "--exit-zero", "--jobs", "2", "--max-depth", "300",
                         "--max-file-size", "64KB")
    assert result.rc == 0 and "Traceback" not in result.err, result.err
    assert not [f for f in result.json()["findings"] if f["rule"] == "GL002"]


ORPHAN = """
import os, sys, time
from graphlint.workers import _Worker, context

workers = [_Worker(context(), abs, None, ()) for _ in range(2)]
print(" ".join(str(w.process.pid) for w in workers), flush=True)
os._exit(0)  # like a parent killed, or one whose thread never stopped its workers
"""


def test_workers_leave_when_their_parent_is_gone_without_stopping_them():
    # a forked worker holds the parent's end of its own pipe (and of its elder siblings'), so
    # the parent's exit is no end of file to it: it used to live on and hold the parent's stdout
    import subprocess

    out = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.monotonic() + 15
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and "Z" not in _state(p)]
    assert not alive, f"orphaned workers still running: {alive}"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((line for line in f if line.startswith("State:")), "")
    except OSError:
        return "Z"


def _own_rss(_):
    from graphlint.workers import all_resident_bytes

    return os.getpid(), all_resident_bytes(os.getpid())


def test_a_reserve_runs_later_tasks_on_workers_forked_before_the_parent_grew():
    """Workers forked after the parent loaded everything count its pages in their resident
    memory (torch's cross-file pass: 1.24 GB for a file whose first summary peaked at 0.87 GB);
    a reserve's workers were forked before, are reused from one call to the next, and stop with it."""
    from graphlint.workers import Reserve, all_resident_bytes

    with Reserve() as reserve:
        reserve.start(2, _own_rss)
        forked_early = {w.process.pid for w in reserve.workers}
        grown = bytearray(os.urandom(1 << 20) * 96)  # the parent loads 96 MB of summaries
        first = run_tasks(list(range(6)), _own_rss, jobs=2, reserve=reserve)
        second = run_tasks(list(range(6)), _own_rss, jobs=2, reserve=reserve)
        late = run_tasks([0], _own_rss, jobs=1)  # no reserve: forked now, from the grown parent
        assert {o[0][0] for o in first + second} <= forked_early and len(reserve.workers) == 2
        assert max(o[0][1] for o in first) + (64 << 20) < late[0][0][1] <= all_resident_bytes(os.getpid())
        assert run_tasks([0], abs, jobs=1, reserve=reserve)[0][0] == 0  # another task: not the reserve's workers
    assert not reserve.workers and len(grown) == 96 << 20
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{p}") and "Z" not in _state(p) for p in forked_early):
        assert time.monotonic() < deadline, "the reserve's workers outlived it"
        time.sleep(0.1)
