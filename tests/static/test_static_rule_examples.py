"""Every rule's YAML examples run: bad raises exactly its rule at its marked position, good raises nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from static_helpers import analyze, builtin_rules

from graphlint.rules import load_pack, load_rules, mark_example, marked_positions

STATIC_RULES = [r for r in builtin_rules().values() if r.matcher and not r.dynamic]
BAD = [pytest.param(r.code, ex, id=f"{r.code}-bad{i}") for r in STATIC_RULES for i, ex in enumerate(r.bad)]
GOOD = [pytest.param(r.code, ex, id=f"{r.code}-good{i}") for r in STATIC_RULES for i, ex in enumerate(r.good)]


def test_every_static_rule_has_examples_and_metadata():
    assert len(STATIC_RULES) >= 25
    for rule in STATIC_RULES:
        assert rule.bad and rule.good, rule.code
        assert rule.seed and rule.why and rule.fix, rule.code
        assert int(rule.code[3:]) < 90, "GLx90-x99 are reserved for runtime-only rules"


#: A read-back rule's bad example must first read the value back: that call keeps its host-sync finding.
READBACK_SYNCS = {"GL101", "GL102", "GL104"}


@pytest.mark.parametrize(("code", "example"), BAD)
def test_bad_example_raises_exactly_its_rule_where_it_is_marked(code, example):
    findings = analyze({"example.py": example})
    found = {f.rule for f in findings}
    params = builtin_rules()[code].params
    if params.get("source") == "readback" or params.get("readback_args") is True:
        assert code in found and len(found - {code}) == 1 and found - {code} <= READBACK_SYNCS, found
    else:
        assert found == {code}
    at = {(f.line, f.col) for f in findings if f.rule == code}
    assert at == set(marked_positions(example)), (
        f"{code} is reported at (line, col) {sorted(at)}, not where the example's `# ^` lines mark it; "
        f"the example with markers where the findings are:\n{mark_example(example, at, code)}")


@pytest.mark.parametrize(("code", "example"), GOOD)
def test_good_example_raises_nothing(code, example):
    """Nothing above ``info``: an info finding says why a by-design read or a free synchronize
    costs nothing (GL106's loop reads its token), and fails no gate."""
    assert [(f.rule, f.line_text) for f in analyze({"example.py": example}) if f.severity != "info"] == []


def test_the_rule_pack_guide_example_works(tmp_path):
    """docs/rule-packs.md's example pack loads and its examples do what they say."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "rule-packs.md").read_text()
    pack = next(block for block in re.findall(r"```yaml\n(.*?)```", guide, re.S) if block.startswith("rules:"))
    (tmp_path / "team.yaml").write_text(pack)
    (rule,) = load_pack(tmp_path / "team.yaml")
    rules = load_rules([tmp_path / "team.yaml"])
    assert {f.rule for f in analyze({"m.py": rule.bad[0]}, rules=rules)} == {rule.code}
    assert analyze({"m.py": rule.good[0]}, rules=rules) == []
