"""A speculative round beside a capturing runner (branch ``specverify``): what the round builds for the
model it runs itself is allocated every step, not staged for a graph.

- A host function that runs the captured model directly and reaches no replay (the verify round of a
  speculative runner the engine's step picks by option) is an eager step: a buffer it allocates and
  fills with the round's data is a per-step factory (``hoststeps.eager_rounds``); the graph runner's
  staging beside it stays silent.
- An exported ``generate(model: nn.Module, ...)`` loop calling the model it is handed with the ids it
  sampled the iteration before is a per-token loop (``sampledcarry.parameter_module``), and the call
  resolves by class to the package's models whose ``forward`` takes it (``openreceivers``).
- A layer's ``view.update(...)`` on its parameter runs only the classes the hot callers pass down
  (``hotreceivers``): the view a request's prompt pass builds is not per-token, the view a speculative
  round builds every round is -- decided by the callers, not by names."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import assert_marked, check_fixture
from test_static_fixture import assert_marked as assert_files_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "specverify"


@pytest.mark.parametrize("name", ["eagerround.py"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


@pytest.mark.parametrize("name", ["genloop", "hotviews"])
def test_each_package_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    assert_files_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name).findings, load(FIXTURES / name))


def test_the_round_is_no_host_step_but_the_graph_runner_is(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "eagerround.py")
    by_line = {f.line: f for f in result.findings}
    assert {55, 58} <= set(by_line)  # the round's zeros, filled with its positions and mask
    assert "runs the model itself" in by_line[55].message
    assert 18 in by_line  # the model's own allocation: run eagerly by the round (nothing in the capture)
    assert 33 not in by_line  # the graph runner's staging buffer: the step's data for the replay


def test_a_module_parameter_fed_its_samples_is_the_loop_model(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "genloop")
    hot = {(Path(f.path).name, f.line) for f in result.findings}
    assert ("generate.py", 15) in hot and ("generate.py", 29) in hot  # the timing sync, the id's upload
    assert ("generate.py", 22) not in hot  # the prompt's upload, before the loop
    assert ("model.py", 22) in hot  # the model's forward, run eagerly by the loop (silent in the capture)


def test_a_view_only_the_prompt_pass_builds_is_not_per_token(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "hotviews")
    hot = {(Path(f.path).name, f.line, f.rule) for f in result.findings}
    assert ("views.py", 63, "GL201") in hot  # the round's view: built every round
    assert not {h for h in hot if h[:2] == ("views.py", 31)}  # the prompt's view: its counter sizes nothing per token
