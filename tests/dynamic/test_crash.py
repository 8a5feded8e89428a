"""A worker that dies says where: the parsing of its output, and the line recorder of the re-run
that locates a device-side assert (a process that aborts from C++ leaves no project frame)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from graphlint.dynamic.crash import LastLine, Progress, crash_of, first_useful_error, read_last_line, read_progress

ASSERT_OUTPUT = """\
/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1515: indexSelectSmallIndex: block: [0,0,0], thread: [0,0,0] \
Assertion `srcIndex < srcSelectDimSize` failed.
terminate called after throwing an instance of 'c10::AcceleratorError'
  what():  CUDA error: device-side assert triggered
Fatal Python error: Aborted

Thread 0x00007f (most recent call first):
  File "/usr/lib/python3.12/threading.py", line 355 in wait
"""


def test_the_device_assert_line_is_the_error_not_the_cpp_frames():
    assert first_useful_error(ASSERT_OUTPUT) == ("device-side assert in indexSelectSmallIndex (Indexing.cu:1515): "
                                                 "Assertion `srcIndex < srcSelectDimSize` failed.")


def test_a_crash_without_a_project_frame_takes_the_recorded_line():
    def project(path):
        return path.startswith("/work/engine/")

    recorded = ("/work/engine/cache.py", 33, "lookup")
    crash = crash_of(-6, ASSERT_OUTPUT, {"probe": "reference", "step": 32, "running": "lookup"}, project, recorded)
    assert crash.where == recorded and crash.how == "killed by SIGABRT"
    assert crash.describe().endswith("(last project frame /work/engine/cache.py:33 in lookup)")
    with_frame = ASSERT_OUTPUT + '  File "/work/engine/model.py", line 7 in forward\n'
    assert crash_of(-6, with_frame, {}, project, recorded).where == ("/work/engine/model.py", 7, "forward")
    assert crash_of(-6, ASSERT_OUTPUT, {}, project).where is None


@pytest.mark.slow
def test_the_recorded_line_survives_a_process_that_aborts(tmp_path):
    """The mechanism itself: a MAP_SHARED page written before ``abort()`` is there for the parent."""
    victim = tmp_path / "victim.py"
    victim.write_text(textwrap.dedent("""\
        import os


        def lookup(i):
            j = i + 1
            os.abort()
        """))
    record = tmp_path / "last-line"
    script = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from graphlint.dynamic.crash import LastLine
        lines = LastLine({str(record)!r}, lambda f: f.endswith("victim.py"))
        lines.start()
        import victim
        victim.lookup(1)
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode < 0  # killed by SIGABRT, as the H200's worker was
    assert read_last_line(str(record)) == (str(victim), 6, "lookup")


def test_progress_is_the_last_write_of_a_process_that_aborts_and_shorter_writes_leave_no_tail(tmp_path):
    path = tmp_path / "progress"
    script = textwrap.dedent(f"""\
        import os
        from graphlint.dynamic.crash import Progress
        progress = Progress({str(path)!r})
        progress("reference", 41, "stage(41) with a long description of what ran")
        progress("reference", 42, "layer3")
        os.abort()
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode < 0
    assert read_progress(str(path)) == {"probe": "reference", "step": 42, "running": "layer3"}
    assert read_progress(str(tmp_path / "never-written")) == {}
    Progress(None)("soak", 1)  # no path: nothing is written, nothing fails


def test_the_recorder_follows_the_caller_back_and_ignores_other_files(tmp_path):
    record = tmp_path / "last-line"
    lines = LastLine(str(record), lambda f: f == __file__)
    lines.start()
    try:
        _callee()
        line = sys._getframe().f_lineno  # the caller's line after the callee returned
    finally:
        lines.stop()
    path, at, function = read_last_line(str(record))
    assert (path, function) == (__file__, "test_the_recorder_follows_the_caller_back_and_ignores_other_files")
    assert line - 1 <= at <= line + 1
    assert read_last_line(str(tmp_path / "missing")) is None


def _callee():
    return textwrap.dedent("x")  # a library call: its lines are never recorded
