"""The host step of a serving engine, found from evidence (issue 19 item 2): one folder per shape
under ``fixtures/static/hoststep/``, each linked on its own, reporting exactly its ``# expect:``
markers with their severities (see ``test_static_fixture``), and taking exactly the functions
listed here for the host step.

- ``scheduler_loop``: a ``while not self.stopped`` loop three calls above the replay: the loop's
  other calls (the batch it builds, the stop check) and the functions on the way (metadata with an
  ``.item()``, sampling) are host code; the prefill branch, the warm-up loop and once-per-request
  code are not.
- ``callback_loop``: the step functions are callbacks a generic loop receives as arguments.
- ``capture_and_replay``: one function captures a batch size on first sight and replays after;
  its staging is host code, its capture branch (warm-up, output buffer) is not.
- ``second_call``: a wrapper that runs eagerly on its first call, captures on its second and
  replays after, driven by a token loop.
- ``first_call``: wrappers that capture on their first call *and replay there once*, then stage
  and replay on every later call (in the ``else``, or after the capture branch returns); stored in
  a streaming state made once per stream (a generic base's ``_init_state``) and called by the
  decoder's step: the staging and the step are host code, the state's set-up, the captured step's
  mask update (visited through the same helper as ``start``) and an uncalled training ``forward``
  are not; a branch that counts itself down (``if skip: ...; skip -= 1``) is no step, nor a
  streaming module's fallback state (``state = self._state; if state is None: state = ...``); a
  local the captured step concatenates onto itself grows nothing (GL207 only on the attribute).
- ``worker_process``: a worker process's serve loop (receive a command, run the engine step, send
  the result) is the step loop, three calls above the replay: the engine calls its runner by name
  (``runner.call("run", batch)``, ``getattr(self, name)(*args)`` on a runner with more fields than
  a points-to node keeps), beside a control handler handing it a name read from a message (so the
  helper runs every method named anywhere: ``run``, and the cold ``exit``) and a shut-down naming
  ``exit``. The upload of the unpickled input and the ``.cpu()`` that ships the step's hidden state
  back (the runner read the ids already) are per-step costs; the shut-down after the loop
  (``engine.exit()``, the runner's ``exit``) is not.
- ``solver_request``: a policy's inference per request: encoder and prefix graphs replayed once per
  call, then a solver loop (``x = x + dt * v``) replaying one Euler step of the expert: the whole
  function is the host step (:func:`graphlint.static.steploops.solver_run`), so its per-request reads
  and constants, and a planner it calls after the first replay, are warnings; ``decode_request`` is its
  negative twin (a decode loop feeding the sampled token back: the code before it is the prompt's pass).
- ``installed_wrapper``: a wrapper installed as a library model's ``forward`` that records the kept
  original on first sight and replays after; the capture routine is no replay point, so a read
  before the replay is a per-step cost (warning), not the step's result.
- ``setup_only`` (GOOD): warm-up loops that replay, a loop over batch sizes capturing and checking
  each graph, a function capturing and replaying in one go: no host step, nothing reported; a
  benchmark loop timing replays is a host step whose findings are warnings only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from static_helpers import analyze, builtin_rules, host_steps, options, summarize
from test_static_fixture import assert_marker_severities, expected, load

from graphlint.static.link import link

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "hoststep"

HOST = {  # shape -> the functions taken for the host step, "(loop)" when only a loop's body
    "scheduler_loop": {"graph_runner.py:GraphRunner.replay", "model_runner.py:ModelRunner.forward",
                       "executor.py:Executor.step", "scheduler.py:Scheduler.serve (loop)"},
    "callback_loop": {"graphs.py:DecodeGraph.run", "worker.py:Worker.run_model", "loop.py:run_loop (loop)"},
    "capture_and_replay": {"model.py:Model.decode", "engine.py:Engine.decode_step", "engine.py:Engine.generate (loop)"},
    "second_call": {"wrapper.py:GraphWrapper.__call__", "wrapper.py:graph_wrap.call",
                    "adapter.py:Adapter.__call__", "generate.py:generate (loop)"},
    "setup_only": {"bench.py:bench_replays (loop)"},
    "worker_process": {"runner.py:Runner.run", "runner.py:Runner.call", "engine.py:Engine.step",
                       "worker.py:run_worker (loop)"},
    "first_call": {"graphed.py:Graphed.__call__", "graphed.py:GraphedAfter.__call__", "decoder.py:Decoder.step",
                   "serve.py:serve (loop)"},
    "solver_request": {"graphs.py:Graph.replay", "runners.py:EncoderRunner.forward", "runners.py:PrefixRunner.forward",
                       "runners.py:ExpertRunner.forward", "policy.py:PolicyScheduler.step"},
    "decode_request": {"graphs.py:Graph.replay", "runners.py:PrefillRunner.forward", "runners.py:DecodeRunner.forward",
                       "generate.py:Generator.generate (loop)"},
    "installed_wrapper": {"wrapper.py:GraphedForward.__call__"},
}


def host_step(shape: str) -> set[str]:
    return host_steps(load(SHAPES / shape), f"fixtures/static/hoststep/{shape}/")


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    findings = analyze(files)
    found = {(f.path, f.line, f.rule) for f in findings}
    assert sorted(found - expected(files)) == [], "unexpected findings"
    assert sorted(expected(files) - found) == [], "missed hazards"
    assert_marker_severities(findings, files)


@pytest.mark.parametrize("shape", sorted(HOST))
def test_the_host_step_is_the_step_loop_and_the_way_down_to_the_replay(shape):
    assert host_step(shape) == HOST[shape]


def test_nothing_in_the_good_shapes_is_an_error():
    assert all(f.severity != "error" for f in analyze(load(SHAPES / "setup_only")))


def test_a_forwarding_wrapper_is_transparent_without_a_step_loop():
    """No step loop in the analysed files (the token loop is the caller's): the replaying function's
    direct callers are its host step, and a wrapper that only passes its call on does not count as
    one (its callers call the replay through it)."""
    files = {name: data for name, data in load(SHAPES / "second_call").items() if not name.endswith("generate.py")}
    rules = builtin_rules()
    entries: list = []
    link(summarize(files), rules, options(rules), entries_out=entries)
    assert {e.function[1] for e in entries if e.context == "host"} == {
        "GraphWrapper.__call__", "graph_wrap.call", "Adapter.__call__"}
