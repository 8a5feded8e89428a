"""Planted hazards and sampled labels of the real-code benchmark (bench/realcode_plant.py, realcode_score.py).

A tiny engine written for the test (no third-party code) stands in for a real one: hazards are
planted into copies of it and graphlint is run on each copy, as ``realcode_score.py --plants`` does
on the fresh engines. The seeded sample of warnings is checked on synthetic findings.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str):
    """Import a bench script by path, once (the scorer imports the fetcher and the planter by name)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


fetch_mod = load("realcode_fetch")
score_mod = load("realcode_score")
plant_mod = load("realcode_plant")

ENGINE = '''\
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        """One layer."""
        y = x * 2
        return y


class Runner:
    def __init__(self):
        self.block = Block()
        self.static = torch.zeros(4, device="cuda")
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.block(self.static)

    def step(self, x):
        self.static.copy_(x)
        self.graph.replay()
        return self.out


def helper(x):
    total = sum(
        [1, 2],
    )
    for i in range(total):
        x = x + i
    return x


def identity(x):
    return x
'''


def plant(**table) -> plant_mod.Plant:
    table = {"name": "p", "file": "eng/model.py", "code": "_planted = x.sum().item()", "rule": "GL101",
             "severity": "error", **table}
    return plant_mod.parse_plants("tiny", (table,))[0]


def test_function_anchor_goes_first_in_the_body_after_the_docstring():
    planted, line = plant_mod.apply(plant(function="Block.forward"), ENGINE)
    lines = planted.splitlines()
    assert line == 7 and lines[line - 1] == "        _planted = x.sum().item()"
    assert lines[line] == "        y = x * 2"


def test_after_anchor_follows_the_whole_statement_or_enters_a_block():
    planted, line = plant_mod.apply(plant(after="total = sum("), ENGINE)
    assert planted.splitlines()[line - 2] == "    )"  # after the statement's last line, not its first
    planted, line = plant_mod.apply(plant(after="for i in range(total):", code="_planted = x.item()"), ENGINE)
    assert planted.splitlines()[line - 1] == "        _planted = x.item()"  # first in the loop body
    assert planted.splitlines()[line] == "        x = x + i"


def test_a_tab_indented_engine_gets_its_plant_indented_with_tabs():
    """tdmpc2 (fresh26) is indented with tabs: a plant indented with spaces would not parse there."""
    source = "def act(obs):\n\tif obs:\n\t\tobs = obs.cuda()\n\treturn obs\n"
    planted, line = plant_mod.apply(plant(after="obs = obs.cuda()", code="_planted = obs.item()"), source)
    assert planted.splitlines()[line - 1] == "\t\t_planted = obs.item()"
    planted, line = plant_mod.apply(plant(function="act", code="_planted = obs.item()"), source)
    assert planted.splitlines()[line - 1] == "\t_planted = obs.item()"


def test_a_statement_sharing_its_openers_line_is_refused():
    """`if x: y = 1`: a plant given that line's prefix would silently run only when x holds."""
    source = "def step(x):\n    if x: y = 1\n    return x\n"
    with pytest.raises(plant_mod.PlantError, match="shares its line"):
        plant_mod.apply(plant(after="if x: y = 1"), source)


@pytest.mark.parametrize(("table", "message"), [
    ({"after": "return x"}, "not exactly one"),
    ({"function": "Block.backward"}, "no function Block.backward"),
    ({"after": "y = x * 2", "code": "if x:"}, "does not parse"),
])
def test_bad_anchors_say_why(table, message):
    with pytest.raises(plant_mod.PlantError, match=message):
        plant_mod.apply(plant(**table), ENGINE)


@pytest.mark.parametrize(("table", "message"), [
    ({"function": "Block.forward", "after": "y = x * 2"}, "exactly one of function or after"),
    ({"function": "Block.forward", "severity": "fatal"}, "severity must be one of"),
    ({"function": "Block.forward", "line": 3}, "unknown keys"),
    ({"function": "Block.forward", "rule": ""}, "missing rule"),
])
def test_plant_tables_are_validated(table, message):
    with pytest.raises(plant_mod.PlantError, match=message):
        plant(**table)


def test_judge_grades_what_is_reported_at_the_line():
    p = plant(function="Block.forward", severity="error")
    at = {"path": "eng/model.py", "line": 7}
    assert plant_mod.judge(p, 7, [{**at, "rule": "GL101", "severity": "error"}]).status == "found"
    assert plant_mod.judge(p, 7, [{**at, "rule": "GL101", "severity": "warning"}]).status == "weaker"
    assert plant_mod.judge(p, 7, [{**at, "rule": "GL201", "severity": "error"}]).status == "other rule"
    assert plant_mod.judge(p, 7, [{**at, "line": 8, "rule": "GL101", "severity": "error"}]).status == "missed"


MANIFEST = """\
[engines.tiny]
description = "a captured step written for this test"
repo = "https://example.invalid/me/tiny"
commit = "0123456789abcdef0123456789abcdef01234567"
paths = ["eng"]
captures = true

[[engines.tiny.plant]]
name = "item-in-captured-layer"
file = "eng/model.py"
function = "Block.forward"
code = "_planted = x.sum().item()"
rule = "GL101"
severity = "error"

[[engines.tiny.plant]]
name = "item-in-dead-helper"
file = "eng/model.py"
after = "x = x + i"
code = "_planted = x.sum().item()"
rule = "GL101"
severity = "error"
"""


@pytest.mark.slow
def test_plants_end_to_end_on_copies(tmp_path: Path, capsys):
    engine = tmp_path / "checkouts" / "tiny" / "eng"
    engine.mkdir(parents=True)
    (engine / "model.py").write_text(ENGINE)
    (tmp_path / "fresh.toml").write_text(MANIFEST)
    code = score_mod.main([str(tmp_path / "checkouts"), "--manifest", str(tmp_path / "fresh.toml"), "--plants"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "item-in-captured-layer" in out and "eng/model.py:7 expected GL101 error: GL101 error -> FOUND" in out
    assert "item-in-dead-helper" in out and "-> MISSED" in out  # nothing calls helper(): not hot
    assert "planted hazards found: 1/2" in out
    assert (engine / "model.py").read_text() == ENGINE  # the checkout itself is never touched
    score_mod.main([str(tmp_path / "checkouts"), "--manifest", str(tmp_path / "fresh.toml"), "--plants",
                    "--markdown"])
    assert "| **overall** | | | | | 1/2 found |" in capsys.readouterr().out


def finding(line: int, severity: str, rule: str = "GL201", category: str = "allocation") -> dict:
    return {"path": "eng/model.py", "line": line, "column": 1, "rule": rule, "category": category,
            "severity": severity, "line_text": "", "function": "f", "message": ""}


def label(line: int, verdict: str, category: str = "allocation") -> score_mod.Label:
    return score_mod.Label("eng/model.py", line, line, category, verdict == "true", "finding", "why", "x:1")


def test_warning_sample_is_seeded_and_only_warnings():
    findings = [finding(n, "warning") for n in range(1, 41)] + [finding(99, "error")]
    first = score_mod.warning_sample(findings, 30, 19)
    assert first == score_mod.warning_sample(list(reversed(findings)), 30, 19)  # order does not matter
    assert len(first) == 30 and not any(key.startswith("eng/model.py:99:") for key in first)
    assert score_mod.warning_sample(findings, 30, 20) != first
    assert len(score_mod.warning_sample(findings[:5], 30, 19)) == 5  # fewer than the sample: all of them


def test_sampled_scoring_counts_what_is_outside_the_sample():
    findings = [finding(n, "warning") for n in range(1, 6)] + [finding(9, "error", "GL101", "host-sync")]
    sample = score_mod.warning_sample(findings, 2, 19)
    sampled_lines = sorted(int(key.split(":")[1]) for key in sample)
    labels = [label(n, "true") for n in sampled_lines] + [label(9, "false", "host-sync")]
    result = score_mod.score("tiny", findings, labels, sample=2, seed=19)
    assert not result.unlabelled and result.unsampled == 3
    assert score_mod.precision_all(result) == "2/3 = 0.67 (+3 unlabelled outside the sample)"
    unsampled_warning = next(n for n in range(1, 6) if n not in sampled_lines)
    result = score_mod.score("tiny", findings, labels + [label(unsampled_warning, "false")], sample=2, seed=19)
    assert result.unsampled == 2  # a label outside the sample still counts
    # an unlabelled error, or an unlabelled warning in the sample, blocks the figures
    result = score_mod.score("tiny", findings, labels[:1], sample=2, seed=19)
    assert {f["line"] for f in result.unlabelled} == {sampled_lines[1], 9}
    assert score_mod.precision_all(result).startswith("?")


def test_manifest_rejects_bad_sample_and_plant_keys(tmp_path: Path):
    base = MANIFEST.split("\n\n[[")[0] + "\n"
    for extra, message in [("sample = -1\n", "sample must be"), ("plant = 3\n", "plant must be an array")]:
        (tmp_path / "m.toml").write_text(base + extra)
        with pytest.raises(fetch_mod.ManifestError, match=message):
            fetch_mod.load_manifest(tmp_path / "m.toml")
    (tmp_path / "m.toml").write_text(base + "sample = 30\nsample_seed = 19\n")
    engine = fetch_mod.load_manifest(tmp_path / "m.toml")["tiny"]
    assert (engine.sample, engine.sample_seed, engine.plants) == (30, 19, ())


def test_fresh_engines_are_apart_from_the_other_sets_and_their_plants_parse():
    """The independent measurement stays independent: no engine, repository or labels file shared."""
    fresh = fetch_mod.load_manifest(fetch_mod.FRESH)
    others = {**fetch_mod.load_manifest(fetch_mod.MANIFEST), **fetch_mod.load_manifest(fetch_mod.HOLDOUT)}
    assert len(fresh) >= 3 and not set(fresh) & set(others)
    assert not {e.repo for e in fresh.values()} & {e.repo for e in others.values() if e.repo}
    assert all(e.labels.parent.name == "fresh" and e.labels.is_file() and e.sample for e in fresh.values())
    assert sum(e.captures for e in fresh.values()) >= 2 and not all(e.captures for e in fresh.values())
    plants = [p for engine in fresh.values() for p in plant_mod.parse_plants(engine.name, engine.plants)]
    assert {p.engine for p in plants} == set(fresh)  # every fresh engine has planted hazards


def test_the_second_fresh_set_is_apart_from_every_other_set_and_its_plants_parse():
    """fresh2.toml replaces fresh.toml as the independent check: no engine, repository or labels file shared."""
    fresh2 = fetch_mod.load_manifest(fetch_mod.FRESH2)
    others = {**fetch_mod.load_manifest(fetch_mod.MANIFEST), **fetch_mod.load_manifest(fetch_mod.HOLDOUT),
              **fetch_mod.load_manifest(fetch_mod.FRESH)}
    assert len(fresh2) >= 3 and not set(fresh2) & set(others)
    assert not {e.repo for e in fresh2.values()} & {e.repo for e in others.values() if e.repo}
    assert all(e.labels.parent.name == "fresh2" and e.labels.is_file() and e.sample for e in fresh2.values())
    assert sum(e.captures for e in fresh2.values()) >= 2 and not all(e.captures for e in fresh2.values())
    plants = [p for engine in fresh2.values() for p in plant_mod.parse_plants(engine.name, engine.plants)]
    assert {p.engine for p in plants} == set(fresh2)  # every engine of the second set has planted hazards


def test_copy_paths_skips_a_dangling_link(tmp_path: Path) -> None:
    """A checkout may commit a link to its author's machine; the copy skips it and keeps the rest."""
    root = tmp_path / "engine"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "model.py").write_text("x = 1\n")
    (root / "pkg" / "elsewhere").symlink_to(tmp_path / "missing" / "pkg")
    target = tmp_path / "copy"
    plant_mod.copy_paths(root, ("pkg",), target)
    assert (target / "pkg" / "model.py").read_text() == "x = 1\n"
    assert not (target / "pkg" / "elsewhere").exists()
