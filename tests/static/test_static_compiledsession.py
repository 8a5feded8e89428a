"""Branch ``compiledsession``: captures an engine builds at run time, and the host step around them.

- A session object compiles its model's ``__call__`` with a library's compile configuration
  (``torch.compile(model.__call__, **CompileConfig().to_dict())``: transformers' ``CompileConfig``
  defaults to mode "reduce-overhead", :mod:`graphlint.static.compileconfigs`): calling the field it
  is stored in replays, and the ``while`` loop that verifies through the session every step is the
  host step around it. Its twin sets a mode without CUDA graphs: nothing is replayed.
- A graph recorded on the first pass of the step loop that needs it (``if graph is None: record``,
  the replay after it) makes the loop the host step (:func:`graphlint.static.replaybranches.records_lazily`),
  not a warm-up over batch sizes; there, a static cache's ``get_seq_length()`` (a 0-dim device
  tensor, :mod:`graphlint.static.statelength`) taken for a range bound is a read-back.
- Placeholders a set-up method below the host step makes (``self.args = torch.empty(...)``) are
  device tensors in the host step too (the class's pre-scan), so Python floats written into them
  every step are reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "compiledsession"


@pytest.mark.parametrize("name", ["session", "nographs", "lazyloop", "executor"])
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


def test_a_lazy_recording_in_a_loop_over_sizes_stays_a_warm_up():
    import libcst as cst

    from graphlint.static.replaybranches import records_lazily

    def check(src: str) -> bool:
        loop = cst.parse_module(src).body[0]
        replay = next(n for n in __import__("graphlint.static.cstwalk", fromlist=["preorder"]).preorder(loop)
                      if type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "replay")
        captures = lambda node: "capture" in cst.Module([]).code_for_node(node)  # noqa: E731
        return records_lazily(loop, replay, captures)

    assert check("while step < n:\n    if g is None:\n        capture(g)\n    g.replay()\n")
    assert check("for i in range(n):\n    if g is None:\n        capture(g)\n    g.replay()\n")
    assert not check("for bs in sizes:\n    if bs not in gs:\n        capture(bs)\n    gs[bs].replay()\n")
