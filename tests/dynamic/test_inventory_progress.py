"""Step counts from the probes to the bar: in this process (CPU) and from worker processes (GPU)."""

from __future__ import annotations

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
