"""What makes a loop per-token (issue 19 item 2): it runs the model step (or a replay) and carries
what the step produced into its next iteration. A loop that reads and writes only the element its
index picks -- patching, quantizing, loading or placing each layer through a function it is handed
-- carries nothing (:func:`graphlint.static.loopnames.own_element`); a model reached only through set-up
(a constructor's check forward) is no model step per iteration; a per-token loop no entry point
runs ranks below one an entry point runs (:meth:`graphlint.static.entries.Discovery.unused`). One
fixture file per shape in ``fixtures/static/tokenloops/``, each linked on its own; ``# expect:``
markers are its findings, ``GL123/severity`` their severity."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marker_severities, expected
from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "tokenloops"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "patch_layers.py": {("eager", "generate")},
    "load_shards.py": {("eager", "Runner.decode")},
    "tuner.py": set(),
    "counter_cases.py": {("eager", "decode_n_tokens"), ("eager", "stream"), ("eager", "fill")},
    "replay_loops.py": {("graph", "Net.forward"), ("host", "GraphRunner.generate"), ("host", "GraphRunner.step"),
                        ("host", "Engine.serve")},
    "unused_loop.py": {("eager", "batched_generate"), ("eager", "generate")},
    "library_loops.py": {("eager", "greedy"), ("eager", "sampled")},
    "cli_table.py": {("eager", "generate"), ("eager", "batched_generate")},
    "rebound.py": {("eager", "extend")},
    "speculative_step.py": {("eager", "generate"), ("eager", "spec_step")},
    "prefill_then_loop.py": {("graph", "next_token"), ("eager", "generate")},
    "cached_models.py": {("eager", "speak"), ("eager", "speak_windows")},
    "handed_model.py": {("eager", "fallback_stream")},
    "solver_after_decode.py": {("eager", "decode_tokens")},
    "solver_per_patch.py": {("eager", "PatchDecoder.generate")},
    "shifted_carry.py": {("eager", "generate")},
    "strategy_state.py": {("eager", "Runner.decode_batch")},
    "denoise_steps.py": {("eager", "Sampler.progressive"), ("eager", "Sampler.sample")},
    "schedule_experts.py": {("eager", "Pipeline.generate")},
    "schedule_beside_capture.py": {("graph", "TokenNet.forward"), ("host", "Engine.generate")},
    "microbatch_states.py": {("eager", "decode_text")},
    "plain_parameter.py": {("eager", "generate")},
    "stop_flag.py": {("eager", "Game.run")},
    "model_modes.py": {("eager", "Viewer.run")},
    "agent_modes.py": {("eager", "Collector.collect")},
}


def _path(name: str) -> str:
    return (FIXTURES / name).relative_to(ROOT).as_posix()


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_shape_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    found = {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"}
    files = {_path(name): (FIXTURES / name).read_bytes()}
    assert found == expected(files)
    assert_marker_severities(result.findings, files)
    assert {(e.context, e.function[1]) for e in result.entries} == ENTRIES[name]


def test_a_patch_loop_over_layers_is_no_token_loop_and_what_it_reaches_is_cold(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "patch_layers.py")
    assert "Patcher.patch_linears" not in {e.function[1] for e in result.entries}
    src = (FIXTURES / "patch_layers.py").read_text().splitlines()
    load_time = {i for i, text in enumerate(src, 1) if ".item()" in text or ".cuda()" in text}
    assert load_time and not load_time & {f.line for f in result.findings}


def test_a_loop_over_devices_placing_layers_is_no_token_loop(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "load_shards.py")
    assert not {"Runner.load_blocks", "Runner.place"} & {e.function[1] for e in result.entries}


def test_an_element_loop_that_carries_a_state_stays_per_token(monkeypatch, tmp_path):
    """``out, state = model(frames[i], state)``: the frame is this iteration's element, the state
    goes round; ``outs[i] = model(outs[i])`` carries nothing."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "counter_cases.py")
    names = {e.function[1] for e in result.entries}
    assert {"stream", "fill"} <= names and "refine" not in names


def test_an_uncalled_token_loop_ranks_below_the_one_the_engine_runs(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "unused_loop.py")
    entry = next(e for e in result.entries if e.function[1] == "batched_generate")
    assert "no entry point of the checked paths runs batched_generate: at most a warning" in entry.reason
    other = next(e for e in result.entries if e.function[1] == "generate")
    assert "no entry point" not in other.reason
    weak = [f for f in result.findings if f.severity == "warning" and f.rule == "GL106"]
    assert len(weak) == 1 and "per-token loop that ranks below the decode path -- no entry point of the checked paths runs it" in weak[0].message


def test_a_command_table_handed_to_a_cli_library_is_run_by_the_entry_point(monkeypatch, tmp_path):
    """``fire.Fire(COMMANDS)``: the functions a module-level table holds are callbacks of the
    library it is handed to, so the entry point reaches ``generate`` through ``generate_main``."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "cli_table.py")
    reasons = {e.function[1]: e.reason for e in result.entries}
    assert "no entry point" in reasons["batched_generate"] and "no entry point" not in reasons["generate"]


def test_a_speculative_step_with_its_own_draft_loop_is_no_whole_decode(monkeypatch, tmp_path):
    """``spec_step`` verifies with the target model after its draft loop: the loop calling it once
    per step is the per-token loop, not an outer loop."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "speculative_step.py")
    assert not result.decode_path.outer_loops


@pytest.mark.parametrize("name", ["tool_beside_library", "tool_only"])
def test_a_command_line_tool_inside_a_library_ranks_below_the_library_loop(monkeypatch, tmp_path, name):
    """A module that builds its argument parser at import is a tool a launcher runs: beside the
    library's own decode loop its loop ranks lower (at most a warning); alone, it is the engine
    (:mod:`graphlint.static.scriptloops`)."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result, FIXTURES, name)
    reasons = {e.function[1]: e.reason for e in result.entries if e.context == "eager"}
    assert ("no entry point" in reasons["main"]) == (name == "tool_beside_library")


def test_a_retry_loop_ending_in_break_is_no_token_loop(monkeypatch, tmp_path):
    """``while True: try: ...; except: continue; break`` goes round only after a failure: the
    loader's weight reads are not checked, the decode loop is (:mod:`graphlint.static.retryloops`)."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "retry_load.py")
    assert {e.function[1] for e in result.entries} == {"generate"}
    assert_marked(result, FIXTURES, "retry_load.py")
