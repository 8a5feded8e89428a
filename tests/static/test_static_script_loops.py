"""A benchmark script's decode loop at module level whose step is an engine method, and a compiled
step held as a lambda on ``self`` (MagicDec's shape, issue 19): ``self.step_fn = lambda model, ids,
lens: model.step(ids, lens)``, rebound to ``torch.compile(self.step_fn, mode="max-autotune")`` and
called ``self.step_fn(model=self.net, ...)``. The lambda is a function of its own whose parameters
each call binds (:meth:`graphlint.static.flows.FlowRecorder.lambda_scope`), so the compiled model's
methods and layers are graph code; the script imports the checkout under its own package name
(``from lambdabench.engine.backend import Backend``, :meth:`graphlint.static.index.Index.under_own_name`),
so its loop reaches the engine's replaying methods and is the host step around them. ``# expect:``
markers are the findings, ``GL123/severity`` their severity."""

from __future__ import annotations

from pathlib import Path

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "scriptloop"


def test_lambda_step_and_script_loop_report_what_the_markers_say(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "lambdastep")
    assert_marked(result.findings, load(FIXTURES / "lambdastep"))


def test_compiled_lambdas_are_graph_roots_and_the_script_loop_a_host_step(monkeypatch, tmp_path):
    entries = check_fixture(monkeypatch, tmp_path, FIXTURES, "lambdastep").entries
    found = {(e.context, e.function[1]) for e in entries}
    assert {("graph", "Backend.__init__.<lambda0>"), ("graph", "Backend.__init__.<lambda1>")} <= found
    assert {("host", "Backend.verify"), ("host", "Backend.speculate"), ("host", "<module>")} <= found
    loop = next(e for e in entries if e.function[1] == "<module>")
    assert loop.loops and "Backend.speculate" in loop.reason
    assert not any(e.guessed for e in entries)
