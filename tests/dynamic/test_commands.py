"""graphlint inventory / capture-test without a GPU, called through the real CLI entry."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from dynamic_helpers import ROOT, TARGETS, plant_lines, spec

ITEM_LINE = plant_lines(TARGETS / "hazards.py", "GL190")[0]
from graphlint.cli import main

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="documents the no-CUDA behaviour")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.slow
def test_capture_test_without_cuda_runs_the_tracer_and_says_capture_was_skipped(capsys):
    assert main(["capture-test", "--target", spec("plain_module.py")]) == 0
    out = capsys.readouterr().out
    assert "CAPTURE SKIPPED: no CUDA device" in out
    assert "passed (tracer only: capture was not tested)" in out


def test_capture_test_fails_on_tracer_errors_in_capturable_regions(capsys):
    assert main(["capture-test", "--target", spec("hazards.py")]) == 1
    out = capsys.readouterr().out
    assert f"FAIL fixtures/targets/hazards.py:{ITEM_LINE} GL190" in out
    assert "capture-test FAILED" in out


def test_capture_test_require_gpu_fails_without_cuda(capsys):
    assert main(["capture-test", "--target", spec("plain_module.py"), "--require-gpu"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["missing.py:make_target", "fixtures/targets/hazards.py:nope", "no-colon"])
def test_bad_target_is_a_usage_error(target, capsys):
    assert main(["inventory", "--target", target]) == 2
    assert "graphlint: error:" in capsys.readouterr().err


def test_bad_option_is_a_usage_error(capsys):
    assert main(["inventory", "--target", spec("plain_module.py"), "--option", "no-equals"]) == 2


@pytest.mark.slow
def test_inventory_markdown_has_the_seed_shape(tmp_path, capsys):
    report = tmp_path / "inv.md"
    assert main(["inventory", "--target", spec("hazards.py"), "--no-progress", "-o", str(report)]) == 1
    text = report.read_text()
    for heading in ("## Summary", "## CATEGORY 1: host-sync", "## CATEGORY 5: capture-hygiene",
                    "## Capture matrix", "## Soak"):
        assert heading in text
    assert "**Capture skipped: no CUDA device.**" in text
    assert f"| `fixtures/targets/hazards.py` | {ITEM_LINE} | GL190" in text
    said = capsys.readouterr().err
    assert f"wrote {report}:" in said and "8 finding(s); the gate fails: 7 failing finding(s); capture skipped (no CUDA device" in said


@pytest.mark.slow
def test_inventory_json_round_trips(capsys):
    from graphlint.inventory import Inventory

    assert main(["inventory", "--target", spec("hazards.py"), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    inv = Inventory.from_dict({k: v for k, v in data.items() if k != "cross_reference"})
    assert {f.rule for f in inv.findings()} == {"GL190", "GL290", "GL390", "GL393", "GL490"}
    assert "ran" in data["cross_reference"]


@pytest.mark.slow
def test_default_target_is_the_bundled_engine(capsys):
    assert main(["capture-test"]) == 1  # the eager decoder is full of hazards
    assert "FAIL dsv4/" in capsys.readouterr().out


@pytest.mark.slow
def test_dynamic_modules_do_not_import_torch():
    code = ("import sys, graphlint.dynamic.commands, graphlint.dynamic.pytest_plugin, graphlint.report.inventory, "
            "graphlint.crossref, graphlint.inventory; assert 'torch' not in sys.modules, 'torch'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("args, says", [
    (["--target", spec("plain_module.py"), "--option", "dimm=32"], "takes no option 'dimm'; did you mean dim?"),
    (["--decoder", "fullgraph"], "takes decoder as one of eager, ab-graph, full-graph, None; did you mean full-graph?"),
    pytest.param(["--preset", "flash"], "never built", marks=pytest.mark.slow),  # the factory itself says no
    (["--option", "n_layer=2"], "takes no option 'n_layer'; did you mean n_layers?"),
])
def test_options_the_factory_refuses_are_usage_errors(args, says, capsys):
    assert main(["inventory", "--no-soak", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.startswith("graphlint: error:")


def test_gpus_are_deduplicated_in_order():
    from graphlint.dynamic.commands import _gpus

    assert _gpus("2,0,2") == [2, 0]
