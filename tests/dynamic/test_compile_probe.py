"""``--probe compile``: torch.compile's graph breaks and recompiles, at their lines, beside graphlint's.

CPU, with dynamo's eager backend (the same breaks and guards as inductor's, without compiling);
"skipping cudagraphs" reasons come from inductor on a GPU and are only listed as torch gives them.
"""

from __future__ import annotations

import torch

from dynamic_helpers import TARGETS, plant_lines
from graphlint.crossref import CrossRef
from graphlint.dynamic.compile_probe import compile_events
from graphlint.dynamic.target import load_factory
from graphlint.inventory import DeviceResult, Inventory
from graphlint.report.inventory import render_markdown


def _events(name: str):
    target = load_factory(f"{TARGETS / name}:make_target")([torch.device("cpu")])
    regions = target.regions()
    target.stage(0)
    for region in regions:
        region.fn()
    return compile_events(target, regions, backend="eager")


def test_graph_breaks_and_recompiles_are_found_at_their_lines():
    events = _events("hazards.py")
    path = "fixtures/targets/hazards.py"
    breaks = {(e.region, e.line) for e in events if e.kind == "graph break" and e.path == path}
    assert ("sync_item", plant_lines(TARGETS / "hazards.py", "GL190")[0]) in breaks  # .item()
    assert {r for r, _ in breaks} >= {"sync_item", "bincount", "nonzero"}
    recompiles = {(e.region, e.line) for e in events if e.kind == "recompile"}
    # the step-varying Python values graphlint calls GL393 are what torch.compile guards on
    assert {("frozen_step", plant_lines(TARGETS / "hazards.py", "GL391")[0])} <= recompiles
    assert all("== " in e.reason for e in events if e.kind == "recompile")


def test_a_clean_module_compiles_without_a_break_or_recompile():
    assert [e for e in _events("plain_module.py") if e.kind != "cudagraphs skipped"] == []


def test_the_report_puts_each_event_beside_graphlints_findings():
    from graphlint.finding import Finding

    ours = Finding("GL393", "x", "data-dependent", "error", "eng.py", 7, 0, "m", source="dynamic", device="cuda:0")
    dev = DeviceResult("cuda:0", findings=[ours], records={"compile": [
        {"region": "step", "kind": "recompile", "reason": "self.pos == 2", "path": "eng.py", "line": 7},
        {"region": "step", "kind": "graph break", "reason": "Dynamic shape operator", "path": "eng.py", "line": 9}]})
    text = render_markdown(Inventory("t", "c", "d", "torch", True, devices=[dev]), CrossRef(True, "checked"))
    assert "| cuda:0 | step | recompile | self.pos == 2 | `eng.py:7` | GL393 |" in text
    assert "| cuda:0 | step | graph break | Dynamic shape operator | `eng.py:9` | nothing (a line graphlint does not flag) |" in text
