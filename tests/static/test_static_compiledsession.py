"""Branch ``compiledsession``: captures an engine builds at run time, and the host step around them.

- A session object compiles its model's ``__call__`` with a library's compile configuration
  (``torch.compile(model.__call__, **CompileConfig().to_dict())``: transformers' ``CompileConfig``
  defaults to mode "reduce-overhead", :mod:`graphlint.static.compileconfigs`): calling the field it
  is stored in replays, and the ``while`` loop that verifies through the session every step is the
  host step around it. Its twin sets a mode without CUDA graphs: nothing is replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "compiledsession"


@pytest.mark.parametrize("name", ["session", "nographs"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_library_compile_configuration_asks_for_graphs_by_default():
    import libcst as cst

    from graphlint.static.compileconfigs import splat_captures
    from graphlint.static.regions import _graph_mode

    imports = {"CompileConfig": "transformers.CompileConfig", "asdict": "dataclasses.asdict"}
    test = lambda src: splat_captures(cst.parse_expression(src), imports, _graph_mode)  # noqa: E731
    assert test("CompileConfig().to_dict()") and test("asdict(CompileConfig(fullgraph=True))")
    assert test('CompileConfig(mode="max-autotune").to_dict()')
    assert not test('CompileConfig(mode="default").to_dict()')
    assert not test("compile_config.to_dict()")  # handed in: the caller's choice
    assert not test("OtherConfig().to_dict()")
