"""Kernels that escape a capture (GL593): the attribution from profiler events to a project line.

On the H200 (reports/gpu-exploration-2026-12-02.md) the watch found the torch op issued on the
default stream in graph_hazards.py at its line, and the CuTeDSL kernel launched on stream 0 in
a region that also had captured work (a graph that is not empty). Here: the pure event logic, and
the line annotations the watch writes on the CPU.
"""

from __future__ import annotations

import importlib.util

from graphlint.dynamic.launches import CaptureWatch, Escape, escapes_in


def _x(name, ts, dur, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": args}


WINDOW = _x("graphlint|capture|step", 100, 100)
OUTER = _x("graphlint|line|eng/wrap.py|9|step", 105, 80, **{"External id": 1})
INNER = _x("graphlint|line|eng/kern.py|20|launch", 110, 10, **{"External id": 2})


def test_a_kernel_launched_inside_a_capture_window_is_pinned_on_the_innermost_line():
    events = [WINDOW, OUTER, INNER,
              _x("cuLaunchKernel", 112, 2, "cuda_driver", correlation=7),
              _x("kernel_cutlass_scale_kernel_0", 150, 3, "kernel", correlation=7)]
    assert escapes_in(events) == [Escape("step", "kernel_cutlass_scale_kernel_0", "eng/kern.py", 20, "launch")]


def test_without_a_launch_event_the_external_id_or_the_start_time_places_it():
    by_external = [WINDOW, OUTER, INNER, _x("k", 170, 1, "kernel", **{"External id": 2, "correlation": 9})]
    assert escapes_in(by_external)[0].line == 20
    by_time = [WINDOW, OUTER, INNER, _x("k", 115, 1, "gpu_memset", correlation=10)]
    assert escapes_in(by_time)[0].line == 20


def test_work_launched_outside_a_capture_window_or_captured_is_not_an_escape():
    events = [WINDOW, OUTER,
              _x("cudaLaunchKernel", 50, 2, "cuda_runtime", correlation=3),  # before the capture: eager work
              _x("eager_kernel", 120, 3, "kernel", correlation=3),
              _x("cudaLaunchKernel", 130, 2, "cuda_runtime", correlation=4)]  # captured: it never ran
    assert escapes_in(events) == []


def test_repeated_launches_are_counted_once_per_line():
    events = [WINDOW, INNER] + [e for i in range(3) for e in (
        _x("cuLaunchKernel", 111 + i, 0.5, "cuda_driver", correlation=20 + i),
        _x("k", 150 + i, 1, "kernel", correlation=20 + i))]
    assert escapes_in(events) == [Escape("step", "k", "eng/kern.py", 20, "launch", count=3)]


def test_the_watch_annotates_every_project_line_a_region_runs(tmp_path, monkeypatch):
    """On the CPU (no kernels): the annotations exist, nest, and name project lines only."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eng.py").write_text("import torch\n\n\ndef helper(x):\n    return x + 1\n\n\n"
                                     "def region():\n    x = torch.ones(3)\n    return helper(x)\n")
    spec = importlib.util.spec_from_file_location("eng_for_watch", tmp_path / "eng.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = []
    monkeypatch.setattr("graphlint.dynamic.launches.escapes_in",
                        lambda events: seen.extend(e["name"] for e in events if e["name"].startswith("graphlint|")) or [])
    watch = CaptureWatch(True, False)
    with watch.watching():
        watch.traced("step", module.region)()
    assert watch.error == ""
    assert seen == ["graphlint|capture|step", "graphlint|line|eng.py|9|region", "graphlint|line|eng.py|10|region",
                    "graphlint|line|eng.py|5|helper"]
