"""What makes a loop per-token (:mod:`graphlint.static.outerloops`): a loop whose every model call
runs a decode of its own (a window, request, prompt or fallback loop) is an outer loop, cold; the
innermost loop that runs the model step stays the per-token loop. One fixture file per shape in
``fixtures/static/outerloops/``, each linked on its own; ``# expect:`` markers are its findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import expected
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "outerloops"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "eager_speculative.py": {("eager", "draft_tokens"), ("eager", "generate")},
    "window_generate.py": {("eager", "WindowTask._token_loop")},
    "fallback_decode.py": {("eager", "generate")},
    "request_serving.py": {("graph", "Net.forward"), ("host", "Engine.step"), ("host", "Engine.run_until_done")},
    "section_jobs.py": {("eager", "sample_steps")},
    "queue_verify.py": {("eager", "Jobs.loop"), ("eager", "draft_loop")},
    "clip_denoise.py": {("eager", "Generator.generate")},
    "token_flowhead.py": {("eager", "Speaker.speak")},
    "counter_cases.py": {("eager", "decode_n"), ("eager", "generate_direct"), ("eager", "generate_with_helper"),
                         ("eager", "search"), ("eager", "ping"), ("eager", "pong"),
                         # loops inside the model or a helper are loops of their own (not this module's business)
                         ("eager", "Shared.forward"), ("eager", "refresh")},
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_shape_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    found = {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"}
    path = (FIXTURES / name).relative_to(ROOT).as_posix()
    assert found == expected({path: (FIXTURES / name).read_bytes()})
    assert {(e.context, e.function[1]) for e in result.entries} == ENTRIES[name]


def test_a_window_loop_around_a_decode_task_is_an_outer_loop(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "window_generate.py")
    assert "transcribe" not in {e.function[1] for e in result.entries}
    lines = {f.line for f in result.findings}
    src = (FIXTURES / "window_generate.py").read_text().splitlines()
    window_body = {i for i, text in enumerate(src, 1) if "tolist()" in text or ".item()" in text}
    assert window_body and not lines & window_body  # the aligner's and the window loop's read-backs: cold
    # ``suppress`` is called by both loops: the token loop keeps its allocation reported
    assert any("torch.zeros" in src[line - 1] for line in lines)


def test_the_outer_loop_is_said_in_the_decode_path(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "window_generate.py")
    outer = result.decode_path.outer_loops
    assert [(o.function[1], o.decoder[1]) for o in outer] == [("transcribe", "WindowTask._token_loop")]


def test_graphlint_entries_ends_with_each_outer_loop_at_its_line(monkeypatch, tmp_path):
    from graphlint.report.entries import render_entries
    from graphlint.static.decode_record import decode_path_record
    from graphlint.static.entry_lines import entry_rows

    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "window_generate.py")
    record = decode_path_record(result.decode_path)
    src = (FIXTURES / "window_generate.py").read_text().splitlines()
    line = next(i for i, text in enumerate(src, 1) if text.strip().startswith("while seek < total"))
    path = (FIXTURES / "window_generate.py").relative_to(ROOT).as_posix()
    assert record["outer_loops"] == [{"path": path, "line": line, "function": "transcribe",
                                      "runs": "WindowTask._token_loop"}]
    text = render_entries(entry_rows(result.entries), decode=record)
    assert f"Outer loop, not per token: {path}:{line}  transcribe runs the decode loop of WindowTask._token_loop" in text
    # the headline's record reads no file for it
    assert decode_path_record(result.decode_path, lines="headline")["outer_loops"][0]["line"] == 0


def test_a_speculative_step_verifying_a_draft_decode_stays_per_token(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "eager_speculative.py")
    assert [(o.function[1], o.decoder[1]) for o in result.decode_path.outer_loops] == [("answer_all", "generate")]


def test_a_job_queue_around_a_sampler_whose_result_is_only_post_processed_is_an_outer_loop(monkeypatch, tmp_path):
    """The worker runs the VAE after the sampler, on what it sampled, but the pixels never come back
    to the sampler and the worker returns nothing (:mod:`graphlint.static.handedback`): no verification."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "section_jobs.py")
    assert [(o.function[1], o.decoder[1]) for o in result.decode_path.outer_loops] == [("Jobs.loop", "sample_steps")]


def test_a_job_queue_whose_job_stores_the_verified_draft_stays_per_step(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "queue_verify.py")
    assert not result.decode_path.outer_loops


def test_a_clip_loop_around_a_denoising_loop_of_its_function_runs_chunks(monkeypatch, tmp_path):
    """Only the denoising loop's body is the entry (:mod:`graphlint.static.chunkloops`); a token loop
    around a flow head picks its token and stays the per-token loop."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "clip_denoise.py")
    assert [(o.function[1], o.decoder[1]) for o in result.decode_path.outer_loops] == [("Generator.generate",) * 2]
    assert len([e for e in result.entries if e.function[1] == "Generator.generate"]) == 1
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "token_flowhead.py")
    assert not result.decode_path.outer_loops


def test_a_discovery_is_freed_without_the_collector(monkeypatch, tmp_path):
    """The link runs with the cyclic collector paused (``check.run``) and builds a discovery up to
    three times: none may stay in a reference cycle (the outer loops held a bound method of theirs,
    and every replaced discovery kept its call graph: about 10 MB each on all of torch)."""
    import gc

    from graphlint.static.entries import Discovery

    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        result = check_fixture(monkeypatch, tmp_path, FIXTURES, "request_serving.py")
        assert result.entries
        assert not [o for o in gc.get_objects() if type(o) is Discovery]
    finally:
        if enabled:
            gc.enable()
