"""The suite's speed policy: ``python -m pytest`` runs the fast tests (about a minute on 2 cores);
tests marked ``slow`` run in CI and on demand.

A test is ``@pytest.mark.slow`` when it takes 1.5 s or more (setup and call) on the project's 2-core
CPU machine: it starts worker processes, builds an engine, runs an inventory or the seed lab, or
installs graphlint into a fresh environment (pre-commit, pip). Everything else -- the static
analyzer, the rules' examples, the CLI, the reports -- stays in the default run. (The import-graph
check, 2.7 s, stays in it too: it is the architecture's guard.)

* ``python -m pytest`` (or a file, ``python -m pytest tests/test_snippets.py``) -- the fast tests:
  :func:`pytest_configure` makes the marker expression ``not slow`` when none is given;
* ``python -m pytest -m "slow or not slow" -n 2`` -- everything, on two workers (what ``.ci/run``
  runs: the README's quick-start test command); ``-m slow`` -- only the slow ones;
* a test named by its node id (``tests/test_snippets.py::test_the_precommit_snippet_runs_as_written``)
  runs whether it is slow or not: naming it is asking for it.

``-n 2`` is for the CPU (CI has no GPU): on a GPU machine run the GPU tests without ``-n``, or two
workers share the device and its timings. pyproject's ``--dist loadfile`` sends each test file
to one worker, so a module-scoped fixture is built once (the seed lab traces its 33 faults in 18
s; split over two workers, as ``--dist load`` did, both traced them), and the files holding slow
tests are scheduled first (the longest jobs first leave no 25-second test alone at the end while
the other core idles). Measured here, all tests on two workers: ``load`` 211 s wall and 391
CPU-seconds, ``loadfile`` 185 s and 348 (``loadgroup`` with ``xdist_group`` marks did not group
with pytest 9 and xdist 3.8: the marks were dropped from the node ids).

So that the default run stays fast as tests are added, the terminal summary names every test
*not* marked slow that took more than :data:`REPORT_OVER` seconds (twice the policy's threshold,
which leaves room for a loaded machine).
"""

from __future__ import annotations

import os
import sys

REPORT_OVER = 3.0

# Bytecode is written, also where PYTHONDONTWRITEBYTECODE says not to (this project's CI machine): the
# suite starts hundreds of Python processes (CLI runs, workers, snippets), each of which would compile
# graphlint again -- and the README's test install skips pip's compiling of all of torch and
# transformers (`pip install --no-compile`), so that what the tests import is compiled once, here.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Each xdist worker is one of the cores: torch's own thread pool (and the worker processes the
    # tests start, which inherit this) would put two threads on each core and spin in OpenMP's
    # barriers, which cost the whole suite more time than the second worker saved.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_configure(config):
    if not config.option.markexpr and not any("::" in str(arg) for arg in config.args):
        config.option.markexpr = "not slow"

def pytest_collection_modifyitems(config, items):
    if config.getoption("numprocesses", None) or os.environ.get("PYTEST_XDIST_WORKER"):
        # whole modules, in their own order: a module-scoped fixture is built once per worker only while
        # its module's tests run together
        slow_modules = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow_modules)


_too_slow: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if report.when in ("setup", "call") and "slow" not in report.keywords:
        _too_slow[report.nodeid] = _too_slow.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    slow = sorted(((s, n) for n, s in _too_slow.items() if s > REPORT_OVER), reverse=True)
    if slow:
        terminalreporter.section("tests to mark @pytest.mark.slow (tests/conftest.py)")
        for seconds, nodeid in slow:
            terminalreporter.write_line(f"{seconds:6.1f}s {nodeid}")
