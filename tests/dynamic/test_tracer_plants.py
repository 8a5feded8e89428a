"""The CPU half of issue 4's "done when": planted hazards found at the right file:line and category."""

from __future__ import annotations

import pytest

from graphlint.dynamic.run import Request, run_inventory
from graphlint.dynamic.target import DEFAULT_TARGET
from graphlint.rules import runtime_rules

from dynamic_helpers import TARGETS, plants, spec

# What the tracer can see on a CPU: no gpu_trace (GL191), no host/device boundary (GL491),
# and no capture or replay (GL391, GL591, GL592).
CPU_VISIBLE = {"GL190", "GL290", "GL390", "GL393", "GL490"}


def _findings(name: str):
    inv = run_inventory(Request(target=spec(name), cpu=True))
    (device,) = inv.devices
    return device


def test_hazards_found_exactly_at_their_plants():
    device = _findings("hazards.py")
    expected = {(code, line) for code, line in plants(TARGETS / "hazards.py") if code in CPU_VISIBLE}
    assert {(f.rule, f.line) for f in device.findings} == expected
    rules = runtime_rules()
    for f in device.findings:
        assert f.path == "fixtures/targets/hazards.py"
        assert f.category == rules[f.rule].category
        assert f.source == "dynamic" and f.device == "cpu"
        assert f.evidence and f.evidence[0].startswith("tracer:")


def test_every_cpu_visible_rule_is_planted():
    assert {code for code, _ in plants(TARGETS / "hazards.py")} >= CPU_VISIBLE


def test_clean_targets_are_clean_on_cpu():
    for name in ("plain_module.py", "graph_hazards.py"):
        device = _findings(name)
        assert device.findings == [], name
        assert device.outcome("tracer").status == "ran"


def test_probes_that_cannot_run_say_why():
    device = _findings("plain_module.py")
    statuses = {p.probe: (p.status, p.detail) for p in device.probes}
    assert statuses["sync-debug"][0] == "skipped" and "CUDA" in statuses["sync-debug"][1]
    assert statuses["capture"][0] == "skipped" and "need a GPU" in statuses["capture"][1]
    assert statuses["replay"][0] == "skipped"
    assert "soak" not in statuses  # not requested


def test_eager_region_findings_are_marked_outside_the_graph(tmp_path):
    from graphlint.dynamic.tracer import run_tracer

    from dynamic_helpers import snippet_factory

    factory, _ = snippet_factory("total = x.sum().item()", tmp_path, "eager_item")
    target = factory(["cpu"])
    target.capturable = False
    regions = target.regions()
    (finding,), _, _ = run_tracer(target, regions, runtime_rules(), "cpu", cuda=False)
    assert finding.rule == "GL190" and finding.in_graph is False


@pytest.mark.slow
def test_bundled_graph_decoders_have_no_runtime_hazard_in_their_captured_regions():
    """dsv4's graph decoders, traced on the CPU: nothing in a capturable region (the A/B
    decoder's attention is deliberately eager, and only it may allocate per step)."""
    for decoder in ("ab-graph", "full-graph"):
        inv = run_inventory(Request(target=DEFAULT_TARGET, options={"decoder": decoder}, cpu=True))
        (device,) = inv.devices
        in_graph = [f for f in device.findings if f.in_graph is not False]
        assert in_graph == [], (decoder, [(f.rule, f.path, f.line) for f in in_graph])
        assert all(f.region.endswith(".attention") for f in device.findings)


@pytest.mark.slow
def test_bundled_eager_decoder_is_the_before_picture():
    inv = run_inventory(Request(target=DEFAULT_TARGET, options={"decoder": "eager"}, cpu=True))
    (device,) = inv.devices
    rules = {f.rule for f in device.findings}
    assert {"GL290", "GL393"} <= rules  # per-step arange/zeros, Python positions and host counts
    assert all(f.path.startswith("dsv4/") for f in device.findings)


def test_a_growing_tensor_must_be_the_one_kept_not_one_at_its_old_address():
    """dsv4's eager inventory on the CPU reported GL394 at attention.py:105 in one run of three: the
    window's keys, a fresh ``torch.cat`` every step, had landed at the previous step's address. A
    view at that address stands in for the reuse here, deterministically."""
    from graphlint.dynamic.frames import UserFrame
    from graphlint.dynamic.tracer import StepTracer

    import torch

    where, key, buffer = UserFrame("eng.py", 5, "step"), ("eng.py", 5, "aten.cat.default", 1), torch.zeros(8)

    def two_steps(keep: bool) -> dict:
        tracer = StepTracer(runtime_rules(), "cpu")
        tracer.begin_step(1)
        made = buffer[0:2]  # what step 1's op returned
        tracer._check_growth(key, "aten.cat.default", (), {}, made, where)
        if not keep:
            del made  # a temporary: gone before the next step
        tracer.begin_step(2)
        same_place = buffer[0:2]  # step 2's input: same address, shape and stride
        tracer._check_growth(key, "aten.cat.default", ([same_place],), {}, torch.zeros(3), where)
        return tracer.hits

    assert not two_steps(keep=False)
    assert [code for code, _path, _line in two_steps(keep=True)] == ["GL394"]
