"""``inventory --record``: the decode path of a target, by the roles its protocol declares.

The probes know what each part of a step is, so nothing is detected here: in the recorded step
(step 1, the first after the warm-up: the capture step in the graph phase, the first traced step
on the CPU), what ``stage()`` runs is ``host``, what a capturable region runs is ``captured``
(whether this machine captured it or not: a CPU inventory writes the same file as a GPU one),
and what a deliberately eager region (``capturable=False``) runs is ``eager``. The eager
reference instance and the warm-up are never recorded. One step is enough (the same code runs
every step), and recording only it keeps the probes' own timing clean.

A worker that is given a ``record_file`` records (:func:`begin`), the probes mark their roles
(:func:`step`, :func:`role`), and the worker writes the file (:func:`finish`) with display paths;
the command turns them into paths relative to ``--record FILE``.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

from graphlint.decode_path_file import write
from graphlint.dynamic.recorder import Recorder, qualname

RECORDED_STEP = 1
ACTIVE: Recorder | None = None


def begin() -> None:
    from graphlint.dynamic.frames import is_own_file

    global ACTIVE
    ACTIVE = Recorder(is_own_file)


@contextmanager
def step(number: int):
    """Record while the probe runs its step ``number`` (only the recorded step)."""
    if ACTIVE is None or number != RECORDED_STEP:
        yield
        return
    with ACTIVE.recording():
        yield


def role(name: str):
    return ACTIVE.window(name) if ACTIVE is not None and ACTIVE.running else nullcontext()


def region_role(region) -> str:
    return "captured" if region.capturable else "eager"


def run_step(target, regions, number: int) -> None:
    """One step of a target with its roles marked (the benchmark and tests; the probes interleave
    the same marks with their own work)."""
    with step(number):
        with role("host"):
            target.stage(number)
        for region in regions:
            with role(region_role(region)):
                region.fn()


def finish(path: str) -> None:
    """Write what was recorded (display paths) to ``path``; nothing when nothing recorded."""
    global ACTIVE
    recorder, ACTIVE = ACTIVE, None
    if recorder is None:
        return
    recorder.stop()
    write(recorder.result(_name), path)


def _name(code) -> tuple[str, str] | None:
    from graphlint.paths import display_path

    qual = qualname(code)
    return None if "<" in qual else (display_path(code.co_filename), qual)
