"""Selecting a fault by name (``python -m dsv4 generate --fault``, the target's ``fault=`` option,
``graphlint inventory --option fault=``) and the lab's report generator, on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dsv4.__main__ import main as dsv4_main
from dsv4.faults.__main__ import load, main as lab_main
from dsv4.target import make_target
from graphlint.dynamic.target import TargetError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_generate_with_a_fault_runs_the_full_graph_variant(capsys):
    assert dsv4_main(["generate", "--fault", "mhc-item", "--steps", "3", "--device", "cpu"]) == 0
    tokens, summary = capsys.readouterr().out.strip().splitlines()
    assert summary.startswith("full-graph fault=mhc-item preset=tiny devices=cpu steps=3")
    assert dsv4_main(["generate", "--decoder", "full-graph", "--steps", "3", "--device", "cpu"]) == 0
    assert capsys.readouterr().out.split("\n")[0] == tokens  # a capture hazard, not a different model


@pytest.mark.parametrize("args", [["--fault", "no-such-fault"], ["--fault", "mhc-item", "--decoder", "eager"]])
def test_generate_refuses_unknown_faults_and_other_decoders(args):
    with pytest.raises(SystemExit) as exit_info:
        dsv4_main(["generate", *args, "--steps", "2", "--device", "cpu"])
    assert exit_info.value.code == 2


def test_the_target_takes_a_fault_by_name_and_refuses_what_it_cannot_build():
    target = make_target(["cpu"], fault="bincount-counts", n_layers=2, compress_ratios=(4, 16))
    assert type(target.decoder).__name__ == "BincountCounts"
    assert type(target.model.blocks[0].moe).__name__ == "MoE"  # the target's model is the clean one
    with pytest.raises(TargetError, match="unknown fault"):
        make_target(["cpu"], fault="no-such-fault")
    with pytest.raises(TargetError, match="full-graph decoder"):
        make_target(["cpu"], fault="bincount-counts", decoder="ab-graph")


@pytest.mark.slow
def test_inventory_takes_the_fault_option_and_reports_the_planted_line(tmp_path):
    from dsv4.faults import planted

    report = tmp_path / "inv.json"
    proc = subprocess.run([sys.executable, "-m", "graphlint", "inventory", "--option", "fault=offsets-branch",
                           "--option", "n_layers=2", "--option", "compress_ratios=(4, 16)", "--cpu", "--no-progress",
                           "--format", "json", "-o", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # an error-severity finding in a capturable region
    findings = json.loads(report.read_text())["devices"][0]["findings"]
    path, line = planted("offsets-branch")[0]
    assert [(f["rule"], f["path"], f["line"]) for f in findings] == [("GL190", path.relative_to(ROOT).as_posix(), line)]


def test_list_names_every_fault_with_its_planted_line(capsys):
    from dsv4.faults import FAULTS

    assert lab_main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == list(FAULTS)
    assert all(".py:" in line for line in out)


@pytest.mark.slow
def test_report_on_the_cpu_writes_the_table_and_the_observations(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    markdown, saved = tmp_path / "lab.md", tmp_path / "lab.json"
    code = lab_main(["report", "--cpu", "--fault", "bincount-counts", "--fault", "growing-history", "--fault",
                     "verbose-item", "-o", str(markdown), "--json", str(saved)])
    assert code == 0  # growing-history is missed on a CPU, but only a GPU's soak could see it
    text = markdown.read_text()
    assert "| 3.4 | `bincount-counts` | `dsv4/faults/moe.py:" in text and "| GL301 | GL390 (tracer); on a GPU expected GL390, GL590 (not run) | both |" in text
    assert "`verbose-item` (control)" in text and "| clean |" in text
    assert "missed (dynamic: needs CUDA)" in text and "not run: needs CUDA" in text
    assert "| 6.9 |" in text and "not applicable:" in text  # every seed row, also the ones without a fault
    observations, baseline, cuda = load(str(saved))
    assert not cuda and set(observations) == {"bincount-counts", "growing-history", "verbose-item"}
    assert observations["bincount-counts"].dynamic == {"GL390": ["tracer"]}
    assert "1 missed or false alarm (growing-history); 1 of them need what this machine lacks" in capsys.readouterr().err


def test_the_exit_code_counts_only_what_this_machine_can_show():
    from dsv4.faults import FAULTS
    from dsv4.faults.__main__ import _visible_here

    assert not _visible_here(FAULTS["growing-history"].fault, 0) and _visible_here(FAULTS["growing-history"].fault, 1)
    assert not _visible_here(FAULTS["positions-to-rope-device"].fault, 1)
    assert _visible_here(FAULTS["positions-to-rope-device"].fault, 2)
    assert _visible_here(FAULTS["verbose-item"].fault, 0)  # a control's alarm always counts


def test_report_refuses_unknown_faults():
    assert lab_main(["report", "--cpu", "--fault", "no-such-fault"]) == 2


def test_the_gpu_columns_render_from_gpu_observations():
    """The GPU run happens once, on the lead's H200: its rendering is checked here on made-up
    observations shaped like the worker results (capture failed, stale replay, memory growth)."""
    from dsv4.faults.lab import BASELINE, Observation
    from dsv4.faults.report import render, symptom

    replay_ok = {"replay": "ran: graph vs eager over steps 1-7: identical within tolerance"}
    baseline = Observation(BASELINE, [], probes=replay_ok, timing={"graph_s": 0.001, "eager_s": 0.020})
    observations = {
        "mhc-item": Observation("mhc-item", ["dsv4/faults/layers.py:30"], static=["GL101"],
                                dynamic={"GL190": ["sync-debug", "tracer"], "GL590": ["capture"]},
                                capture={"step@cuda:0": "failed: RuntimeError: operation not permitted when stream is capturing"},
                                probes=replay_ok),
        "python-n-comp": Observation("python-n-comp", ["dsv4/faults/layers.py:160"], static=["GL308"],
                                     region={"GL391 dsv4/full_graph.py:42": ["replay"]},
                                     capture={"step@cuda:0": "captured"},
                                     probes={"replay": "ran: graph vs eager over steps 1-7: first mismatch at step 3"},
                                     timing={"graph_s": 0.001, "eager_s": 0.021}),
        "growing-history": Observation("growing-history", ["dsv4/faults/step.py:194"],
                                       region={"GL291 dsv4/full_graph.py:42": ["soak"]},
                                       capture={"step@cuda:0": "captured", "record": "eager: deliberately eager"},
                                       probes=replay_ok, timing={"graph_s": 0.0012, "eager_s": 0.020}),
    }
    assert symptom(observations["mhc-item"], baseline, True).startswith(
        "capture error in step@cuda:0: RuntimeError: operation not permitted")
    assert symptom(observations["python-n-comp"], baseline, True) == (
        "stale replay from step 3; step time vs clean: graph 1.00x, eager 1.05x")
    assert symptom(observations["growing-history"], baseline, True).startswith("memory growth; step time vs clean: graph 1.20x")
    text = render(observations, baseline, cuda=True, header=["(made up)"])
    assert "| GL101 | GL190 (sync-debug, tracer), GL590 (capture) | both |" in text
    assert "| GL308 | GL391 (replay, region-level) | both |" in text
    assert "| — | GL291 (soak, region-level) | dynamic only |" in text
    assert "step 1.000 ms graph, 20.000 ms eager" in text
