"""Step counts from the probes to the bar: in this process (CPU) and from worker processes (GPU)."""

from __future__ import annotations

import pytest
import torch

from dynamic_helpers import TARGETS
from graphlint.dynamic import progress
from graphlint.dynamic.run import Request, _worker, planned_steps, run_inventory

SPEC = f"{TARGETS / 'plain_module.py'}:make_target"


def test_the_tracer_phase_in_this_process_reports_each_step():
    events = []
    run_inventory(Request(target=SPEC, cpu=True), on_step=lambda *e: events.append(e))
    assert events == [("cpu", "tracer", 1, 3), ("cpu", "tracer", 2, 3), ("cpu", "tracer", 3, 3)]
    assert planned_steps(Request(target=SPEC, cpu=True), False, 0) == 3


@pytest.mark.slow
def test_a_worker_process_reports_through_its_progress_file():
    events = []
    job = {"target": SPEC, "options": {}, "devices": ["cpu"], "label": "cpu", "phase": "trace",
           "replay_steps": 8, "soak_steps": 0}
    with progress.Relay(lambda *e: events.append(e), interval=0.05) as relay:
        result = _worker(relay.job(job))
    assert result.probes[0].status == "ran"
    assert events == [("cpu", "tracer", 1, 3), ("cpu", "tracer", 2, 3), ("cpu", "tracer", 3, 3)]


def test_graph_phase_steps_are_named_replay_then_soak_and_counted_once():
    events = []

    class Target:
        def stage(self, step):
            pass

    job = {"label": "cuda:0", "phase": "graph", "replay_steps": 4, "soak_steps": 6}
    factory = progress.watch(lambda devices, **options: Target(), job, lambda *e: events.append(e))
    graph, eager = factory(["cpu"]), factory(["cpu"])
    for step in range(6):
        graph.stage(step)
        eager.stage(step)  # the replay probe's second instance: not counted again
    assert events == [("cuda:0", "capture+replay", s, 4) for s in range(1, 5)] + \
        [("cuda:0", "soak", 5, 6), ("cuda:0", "soak", 6, 6)]
    assert progress.planned(job) == 6 and progress.planned({"phase": "trace"}) == 3


def test_watching_keeps_the_factory_signature_and_tolerates_targets_without_stage():
    def make_target(devices, dim=16):
        return object()

    watched = progress.watch(make_target, {"label": "cpu", "phase": "trace"}, lambda *e: None)
    import inspect

    assert list(inspect.signature(watched).parameters) == ["devices", "dim"]
    assert watched([torch.device("cpu")]) is not None


def _inventory():
    from graphlint.inventory import DeviceResult, Inventory, ProbeOutcome

    inv = Inventory("t", "c", "d", "v", True)
    for label in ("cuda:10", "cuda:2"):
        inv.devices.append(DeviceResult(label, probes=[ProbeOutcome("replay", "ran", "ok"),
                                                       ProbeOutcome("capture", "ran", "2/2 captured")],
                                        capture={"layer1": {"status": "captured", "detail": ""},
                                                 "layer0": {"status": "failed", "detail": "boom"}}))
    return inv


def test_capture_test_text_is_sorted_and_plain_off_a_terminal():
    from graphlint.report.capture_test import render_capture_test, sort_failures

    failed = ["m.py:10 GL190 x [cuda:2]", "m.py:9 GL190 x [cuda:2]", "cuda:2 layer0: capture failed boom",
              "a.py:100 GL393 y [cuda:2]"]
    assert sort_failures(failed) == ["cuda:2 layer0: capture failed boom", "a.py:100 GL393 y [cuda:2]",
                                     "m.py:9 GL190 x [cuda:2]", "m.py:10 GL190 x [cuda:2]"]
    text = render_capture_test(_inventory(), sort_failures(failed), cuda=True)
    lines = text.splitlines()
    assert "\x1b[" not in text
    devices = [line.split()[0] for line in lines if line.startswith(" ")]
    assert devices == ["cuda:2"] * 4 + ["cuda:10"] * 4  # natural order, not "cuda:10" < "cuda:2"
    first = [line.split()[1] for line in lines[:4]]
    assert first == ["capture", "replay", "layer1", "layer0"]  # probes in run order, regions in the target's
    assert lines[-1] == "capture-test FAILED" and lines[-5].startswith("FAIL cuda:2 layer0")


def test_capture_test_is_coloured_on_a_terminal_only_and_never_with_no_color(monkeypatch):
    from graphlint.report import use_color
    from graphlint.report.capture_test import render_capture_test

    assert "\x1b[1;31mFAIL" in render_capture_test(_inventory(), ["cuda:2 layer0: capture failed"], True, color=True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(None) and not use_color("out.txt")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(None)
