"""The points-to call graph, PyCG-style: one folder per language flow under
``fixtures/static/callgraph/<flow>/`` holds the code and ``callgraph.json``, the expected edges
(caller -> callees, as ``path:qualname`` relative to the folder) of the functions it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphlint.static.callgraph import CallGraph
from graphlint.static.facts import ModuleInfo
from graphlint.static.flowir import render
from graphlint.static.index import Index
from graphlint.static.summarize import summarize_file

from static_helpers import builtin_rules, options

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "callgraph"
FLOWS = sorted(p.name for p in ROOT.iterdir() if (p / "callgraph.json").exists())


def call_graph(folder: Path) -> tuple[CallGraph, list[ModuleInfo]]:
    rules = builtin_rules()
    opts = options(rules)
    infos = []
    for path in sorted(folder.rglob("*.py")):
        summary = summarize_file(path.relative_to(folder).as_posix(), path.read_bytes(), rules, opts)
        assert not summary.errors, summary.errors
        infos.append(summary.data)
    infos.sort(key=lambda i: i.path)
    return CallGraph(infos, Index(infos)), infos


def edges(graph: CallGraph, infos: list[ModuleInfo]) -> dict[str, list[str]]:
    out = {}
    for info in infos:
        for qual, fn in info.functions.items():
            callees = {f"{p}:{q}" for site in fn.calls if not site.reference
                       for p, q in graph.site_targets(info, qual, site)}
            callees |= {f"{p}:{q}" for (p, q), _ in graph.implicit_sites(info, qual)}
            out[f"{info.path}:{qual}"] = sorted(callees)
    return out


def test_every_flow_has_a_fixture():
    assert len(FLOWS) >= 20


@pytest.mark.parametrize("flow", FLOWS)
def test_call_graph(flow):
    folder = ROOT / flow
    expected = json.loads((folder / "callgraph.json").read_text())
    graph, infos = call_graph(folder)
    found = edges(graph, infos)
    assert {caller: found.get(caller) for caller in expected} == expected
    if (folder / "unresolved.json").exists():  # the blind spots, where a flow's folder says them
        blind = {f"{p}:{q}": [render(s.expr).lstrip(".") for s in sites] for (p, q), sites in graph.unresolved.items()}
        assert blind == json.loads((folder / "unresolved.json").read_text())


def test_unresolved_project_calls_are_listed_and_library_calls_are_not(tmp_path):
    (tmp_path / "main.py").write_text(
        "import os\nimport torch\n\n"
        "class Runner:\n"
        "    def __init__(self, model):\n"
        "        self.model = model\n\n"
        "    def step(self, x):\n"
        "        self.model.forward(x)\n"      # the model is never built here: unresolved
        "        torch.zeros(3)\n"             # a library call: never counted
        "        os.path.join('a', 'b')\n"
        "        x.view(-1)\n"
        "        len(x)\n"
    )
    graph, infos = call_graph(tmp_path)
    edges(graph, infos)
    unresolved = {fid: [s.expr for s in sites] for fid, sites in graph.unresolved.items()}
    assert unresolved == {("main.py", "Runner.step"): [("a", ("a", ("n", "self"), "model"), "forward")]}
    assert graph.unresolved_count([("main.py", "Runner.step")]) == 1


def test_unresolved_calls_of_the_hot_functions_only_inside_their_hot_loops(tmp_path):
    """The seam the decode-path headline reads: per hot function (None: all of it; else the loops
    whose calls are hot), its unresolved calls, spelled back from the flow IR."""
    from graphlint.static.flowir import render

    (tmp_path / "main.py").write_text(
        "class Runner:\n"
        "    def __init__(self, model_forward):\n"
        "        self.model_forward = model_forward\n\n"
        "    def run(self, x, n):\n"
        "        self.setup(x)\n"                   # before the loop: not hot when only the loop is
        "        for _ in range(n):\n"
        "            x = self.model_forward(x)\n"  # nothing passes a forward here: unresolved
        "        return x\n"
    )
    graph, infos = call_graph(tmp_path)
    edges(graph, infos)
    fid = ("main.py", "Runner.run")
    loop = next(iter(infos[0].functions["Runner.run"].loops)).id
    whole = [render(site.expr) for _, site in graph.unresolved_in({fid: None})]
    assert whole == ["self.setup", "self.model_forward"]
    assert [render(site.expr) for _, site in graph.unresolved_in({fid: frozenset((loop,))})] == ["self.model_forward"]


def test_a_library_object_is_resolved_to_the_library_not_unresolved(tmp_path):
    """Library objects are a points-to value of their own: a module built from a library class,
    a parameter typed by one, what such an object's attribute or call gives. Calling them runs
    no project code and is no blind spot; an attribute nothing gives a value still is."""
    (tmp_path / "main.py").write_text(
        "from torch import nn\n"
        "from tokenizers import Tokenizer\n\n"
        "class Runner:\n"
        "    def __init__(self, model):\n"
        "        self.proj = nn.Linear(4, 4)\n"
        "        self.model = model\n\n"
        "    def step(self, x, tok: Tokenizer):\n"
        "        tok.decode(x)\n"             # a library class's method
        "        y = self.proj(x)\n"          # a module built from torch's class
        "        self.proj.extra(y)\n"        # an attribute of a library object
        "        return self.model.run(y)\n"  # nothing gives self.model a value: unresolved
    )
    graph, infos = call_graph(tmp_path)
    edges(graph, infos)
    unresolved = {fid: [s.expr for s in sites] for fid, sites in graph.unresolved.items()}
    assert unresolved == {("main.py", "Runner.step"): [("a", ("a", ("n", "self"), "model"), "run")]}


def test_an_import_by_string_loads_a_narrow_set_and_leaves_a_family_out(monkeypatch):
    """``class_path_family`` names twenty architectures by path (through ``MODULE_MAP.copy()`` of an
    imported registry): more modules than a node holds, so the import loads none of them and the
    runner's field keeps the graph runner alone (:mod:`graphlint.static.classpaths`). With room for
    all twenty, the same strings load every class -- the strings do flow; the cut is the decision."""
    import graphlint.static.classpaths as classpaths
    import graphlint.static.pointsto as pointsto

    folder = ROOT / "class_path_family"
    graph, infos = call_graph(folder)
    assert edges(graph, infos)["fam/build.py:build_model"] == ["fam/build.py:class_from_qualname"]
    monkeypatch.setattr(classpaths, "NARROW", 64)
    monkeypatch.setattr(pointsto, "CAP", 64)
    graph, infos = call_graph(folder)
    found = edges(graph, infos)
    assert len(found["fam/build.py:build_model"]) == 21
    assert "fam/models/arch07.py:Arch07ForCausalLM.forward" in found["fam/build.py:Runner.step"]


def test_only_strings_that_name_a_project_module_are_values(tmp_path):
    """``"torch.float16"`` names no module of the project: it holds nothing, so a library's dotted
    names never enter the solve; ``"pkg.mod:A"`` does, and loads its class through a helper that
    splits it (:mod:`graphlint.static.classpaths`)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("class A:\n    def forward(self, x):\n        return x\n")
    (tmp_path / "main.py").write_text(
        "import importlib\n\n"
        'DTYPE = "torch.float16"\n'
        'PATH = "pkg.mod:A"\n\n\n'
        "def load(path):\n"
        '    module, name = path.split(":")\n'
        "    return getattr(importlib.import_module(module), name)\n\n\n"
        "def run(x):\n"
        "    load(DTYPE)\n"
        "    return load(PATH)()(x)\n"
    )
    graph, infos = call_graph(tmp_path)
    strings = {v[1] for v in graph.solver.value_of if v[0] == "Str"}
    assert "torch.float16" not in strings and {"pkg.mod:A", "pkg.mod", "A"} <= strings
    assert edges(graph, infos)["main.py:run"] == ["main.py:load", "pkg/mod.py:A.forward"]
