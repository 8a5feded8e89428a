"""The link's repeated work skipped (branch `speed15`): the argument-value fixpoint flows a call edge
again only when its caller's values changed, with the same findings as flowing every edge each round."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.argvalues import ArgValues
from graphlint.static.link import link
from static_helpers import analyze, builtin_rules, options, summarize

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "argvalues"


def fixture_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}


def test_an_edge_is_flowed_again_only_after_its_callers_values_changed(monkeypatch):
    flows: list[tuple] = []
    solves = [0]
    original_flow, original_solve = ArgValues._flow, ArgValues.solve

    def solve(self, *args, **kwargs):
        solves[0] += 1
        return original_solve(self, *args, **kwargs)

    def flow(self, caller, callee, site, values, args):
        flows.append((solves[0], caller, callee, id(site), args, self._stamp.get(caller, 0)))
        return original_flow(self, caller, callee, site, values, args)

    monkeypatch.setattr(ArgValues, "solve", solve)
    monkeypatch.setattr(ArgValues, "_flow", flow)
    rules = builtin_rules()
    contexts = []
    link(summarize(fixture_files(), rules), rules, options(rules), contexts_out=contexts)
    assert contexts[0].decided >= 5  # the fixture's branches are decided: the fixpoint ran rounds
    assert flows and len(flows) == len(set(flows))  # never the same edge at the same caller values twice


def test_the_fixture_findings_stand():
    files = fixture_files()
    found = sorted((f.path, f.line) for f in analyze(files) if f.rule.startswith("GL1"))
    live = next(i for i, text in enumerate(files["model.py"].splitlines(), 1) if "# LIVE" in text)
    assert found == [("model.py", live)]


def test_the_solves_attribute_memos_are_let_go_once_it_is_over(monkeypatch):
    from graphlint.static.callgraph import CallGraph
    from graphlint.static.facts import ModuleInfo
    from graphlint.static.implicit import Implicit
    from graphlint.static.index import Index
    from graphlint.static.objects import Objects

    asked = []
    bound, from_library = Implicit.bound, Objects.inherited_from_library
    monkeypatch.setattr(Implicit, "bound", lambda self, v, attr: asked.append("bound") or bound(self, v, attr))
    monkeypatch.setattr(Objects, "inherited_from_library",
                        lambda self, v, attr: asked.append("lib") or from_library(self, v, attr))
    files = {"m.py": (
        "import torch\n"
        "class Proxy:\n"
        "    def __init__(self, inner):\n        self.inner = inner\n"
        "    def __getattr__(self, name):\n        return getattr(self.inner, name)\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n        return self.weight(x)\n"
        "def run(x):\n    p = Proxy(M())\n    p.step(x)\n    return M().forward(x)\n")}
    rules = builtin_rules()
    infos = [s.data for s in summarize(files, rules) if isinstance(s.data, ModuleInfo)]
    graph = CallGraph(infos, Index(infos))
    assert "bound" in asked and "lib" in asked  # the fixture asks both questions during the solve
    assert graph.objects.from_library == {} and graph.linker.implicit.bound_memo == {}
