"""ruff-grade output: concise and grouped formats, --statistics, stdin for editors, the rules table
piped or narrow, help lines that are whole sentences, rule messages without a bare placeholder."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest

from graphlint.report.context import rule_kind, rule_message
from graphlint.report.rules_table import render_rules
from graphlint.report.text import first_sentence
from graphlint.rules import load_rules

#: The same hazard twice in one file and once in another: the help must appear once in grouped.
TWICE = """\
import torch

def decode_step(x: torch.Tensor, y: torch.Tensor):
    a = x.sum().item()
    b = y.sum().item()
    return torch.zeros(4, device="cuda")


def generate(x, y, steps):  # the per-token loop: evidence, so the errors stay errors
    for _ in range(steps):
        x = decode_step(x, y)
    return x
"""


@pytest.fixture
def three(project):
    project.write("src/a.py", TWICE)
    project.write("src/b.py", TWICE.replace("decode_step", "decode_b"))
    return project


def test_concise_is_one_line_per_finding_with_no_help(three):
    result = three.run("src", "--format", "concise")
    lines = [line for line in result.out.splitlines() if re.match(r"src/\w\.py:\d+:\d+: GL\d{3} ", line)]
    assert result.rc == 1 and len(lines) == 6
    assert "= help:" not in result.out and "    |" not in result.out
    assert "Found 6 findings in 2 of 2 files" in result.out
    assert three.run("src", "--output-format", "concise").out == result.out  # ruff's spelling works too


def test_grouped_lists_findings_under_their_file_and_each_rule_help_once(three):
    result = three.run("src", "--format", "grouped")
    assert result.rc == 1
    out = result.out
    assert out.index("src/a.py:\n") < out.index("src/b.py:\n") < out.index("help:\n")
    assert "  4:9  " in out and "| a = x.sum().item()" in out
    helps = [line for line in out.splitlines() if line.startswith("  GL")]
    codes = [line.split()[0] for line in helps]
    assert sorted(codes) == sorted(set(codes)) and len(codes) == 2  # .item() and torch.zeros: once each
    full = three.run("src").out
    assert full.count("= help:") == 6  # the full format keeps one help per finding


def test_statistics_counts_each_rule_most_frequent_first(three):
    result = three.run("src", "--statistics")
    rows = [line.split() for line in result.out.splitlines() if re.match(r"\s*\d+\s+GL\d{3}\s", line)]
    assert result.rc == 1  # the same exit code as the listing
    assert [(r[0], r[2]) for r in rows] == [("4", "host-sync-item"), ("2", "per-step-factory")]
    assert "src/a.py:" not in result.out and "Found 6 findings" in result.out
    data = json.loads(three.run("src", "--statistics", "--format", "json").out)
    assert [(d["code"], d["count"]) for d in data] == [(rows[0][1], 4), (rows[1][1], 2)]
    assert set(data[0]) == {"code", "name", "count", "severity", "category", "message"}
    refused = three.run("src", "--statistics", "--format", "sarif")
    assert refused.rc == 2 and "--statistics" in refused.err


def _stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_stdin_is_checked_as_the_named_file_which_need_not_exist(project, monkeypatch):
    project.config('paths = ["src"]\n')
    project.write("src/engine.py", "import torch\n\ndef decode_step(x: torch.Tensor):\n    return x\n")
    _stdin(monkeypatch, TWICE)  # the editor's unsaved buffer of src/engine.py
    result = project.run("-", "--stdin-filename", "src/engine.py", "--format", "concise")
    assert result.rc == 1 and result.out.startswith("src/engine.py:4:9: ")
    _stdin(monkeypatch, TWICE)
    new = project.run("-", "--stdin-filename", "src/new.py", "--format", "json").json()
    assert {f["path"] for f in new["findings"]} == {"src/new.py"}
    _stdin(monkeypatch, TWICE)
    anonymous = project.run("-", "--format", "concise")
    assert anonymous.out.startswith("-:4:9: ")
    assert project.run("src", "-").rc == 2
    assert project.run("src", "--stdin-filename", "src/engine.py").rc == 2


def test_rules_table_is_plain_when_piped_or_narrow_and_boxed_only_when_wide():
    rules = load_rules([])
    for width in (None, 80, 119):
        plain = render_rules(rules, terminal_width=width)
        assert "┃" not in plain and "…" not in plain
        lines = plain.splitlines()
        assert lines[0].split()[:6] == ["code", "name", "category", "severity", "kind", "message"]
        assert [line.split()[0] for line in lines[1:]] == list(rules)  # every code whole, first column
    boxed = render_rules(rules, terminal_width=160)
    assert "┃" in boxed and "GL593" in boxed and max(len(line) for line in boxed.splitlines()) <= 160


def test_rules_json_and_docs_say_runtime_like_the_table(project):
    table = {r["code"]: r for r in project.run("--raw", "rules", "--format", "json").json()}
    assert table["GL190"]["kind"] == "runtime" and table["GL101"]["kind"] == "static"
    assert table["GL000"]["kind"] == "meta" and table["GL190"]["dynamic"] is True
    plain = project.run("--raw", "rules").out
    assert re.search(r"^GL190 .* runtime ", plain, re.M) and " dynamic " not in plain


def test_help_is_the_first_whole_sentence():
    assert first_sentence("Use a buffer of fixed length (e.g. the number of experts). Then more.") == (
        "Use a buffer of fixed length (e.g. the number of experts).")
    assert first_sentence("Call `x.sum(). item()` rarely. Second.") == "Call `x.sum(). item()` rarely."
    assert first_sentence("Pass it, e.g. 3 times. Second.") == "Pass it, e.g. 3 times."
    rules = load_rules([])
    assert first_sentence(rules["GL301"].fix).endswith("(e.g. the number of experts).")
    for rule in rules.values():
        help_ = first_sentence(rule.fix)
        assert help_.count("(") == help_.count(")") and help_.count("`") % 2 == 0, (rule.code, help_)


def test_rule_messages_name_what_the_rule_matches_never_a_bare_ellipsis():
    rules = load_rules([])
    for rule in rules.values():
        message = rule_message(rule)
        assert "`...`" not in message and "{name}" not in message, (rule.code, message)
        assert rule_kind(rule) in ("static", "runtime", "meta")
    assert rule_message(rules["GL301"]).startswith("`torch.bincount` has")
    assert rule_message(rules["GL103"]).startswith("`.cpu()/.numpy()` moves")
    assert rule_message(rules["GL420"]).startswith("`<host tensor>` is pageable")


def test_a_path_without_python_files_beside_configured_paths_is_said_not_passed_silently(project):
    project.config('paths = ["src"]\n')
    project.write("src/engine.py", TWICE)
    project.write("docs/guide.md", "# a guide\n")
    result = project.run("docs")
    assert result.rc == 0 and "No Python files found under docs: nothing there was checked" in result.err
    both = project.run("docs", "src/engine.py")
    assert both.rc == 1 and "under docs" in both.err and "under src" not in both.err
