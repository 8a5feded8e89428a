"""Branch ``optcompile``: what makes a loop's step compiled or eager, and which read is the step's.

- A compile made by a method of its own that nothing on the default path calls (``def compile(self):
  self._decode = torch.compile(self._decode, mode="reduce-overhead")``, the user's to call; a script
  calls it only under ``--benchmark``) is opt-in (:func:`graphlint.static.compileswitch.method_switch`):
  the loop runs its step eagerly by default, so its stop test is a sync of its own. Called
  unconditionally (``main()`` enabling the graphs), it is the step's compile, as before.
- Exactly one read per step around a compiled step is by design (:meth:`graphlint.static.hostreads.
  HostReads.loop`): of eight reads of four scalars after three steps, one is the step's read; a
  re-read of a value computed before the step is not (it fell back to "after the replay").
- In an eager loop, a read bound to a name whose first use is the loop's stop test (``tok =
  nxt.item()``; ``if tok in stop_ids: break``) is that test's read, a sync, as ``if nxt.item() in
  stop_ids:`` is (:func:`graphlint.static.stopchecks.mark_stop_reads`); used first for the host's
  output, it stays the step's one read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "optcompile"


@pytest.mark.parametrize("name", ["method", "points", "eagerstop"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def _rated(findings, path: str) -> dict:
    return {(f.line, f.col, f.rule): f.severity for f in findings if f.path.endswith(path)}


def test_a_compile_method_called_only_for_a_benchmark_is_opt_in(monkeypatch, tmp_path):
    rated = _rated(check_fixture(monkeypatch, tmp_path, FIXTURES, "method").findings, "method/engine.py")
    assert rated[(27, 23, "GL101")] == "warning"  # Model.compile(): eager by default, the stop test a sync
    assert rated[(46, 23, "GL101")] == "info"  # Served.enable_graphs(), always called: the one read


def test_a_compile_method_a_script_always_calls_is_the_steps_compile(monkeypatch, tmp_path):
    copy = tmp_path / "pkg"
    shutil.copytree(FIXTURES / "method", copy)
    cli = copy / "cli.py"
    cli.write_text(cli.read_text().replace("    model = Model()\n", "    model = Model()\n    model.compile()\n"))
    monkeypatch.chdir(tmp_path)
    result = run(resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False))
    assert _rated(result.findings, "pkg/engine.py")[(27, 23, "GL101")] == "info"


def test_one_read_per_step_around_a_compiled_step(monkeypatch, tmp_path):
    rated = _rated(check_fixture(monkeypatch, tmp_path, FIXTURES, "points").findings, "points/engine.py")
    assert sorted(k for k, v in rated.items() if v == "info") == [(32, 41, "GL101")]  # w, this step's
    assert len(rated) == 6 and list(rated.values()).count("warning") == 5


def test_a_read_the_stop_test_uses_first_is_the_stop_tests_sync(monkeypatch, tmp_path):
    rated = _rated(check_fixture(monkeypatch, tmp_path, FIXTURES, "eagerstop").findings, "eagerstop/engine.py")
    assert rated == {(16, 15, "GL101"): "error", (29, 15, "GL101"): "info"}
