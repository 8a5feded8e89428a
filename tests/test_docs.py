"""docs/rules.md and the README's rule table are generated from rules/*.yaml and may not drift."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from graphlint import docs
from graphlint.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]


def test_generated_docs_match_the_rule_packs():
    stale = [p.as_posix() for p in docs.stale_files(ROOT)]
    assert not stale, f"{', '.join(stale)} out of date with rules/*.yaml: run `{docs.REGENERATE}` and commit the result"
    assert docs.main(["--check"]) == 0


def test_a_stale_copy_is_named(tmp_path):
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text("# hand-edited\n")
    assert docs.stale_files(tmp_path) == [Path("docs/rules.md")]
    readme = (tmp_path / "README.md").read_text()
    (tmp_path / "README.md").write_text(readme.replace("| `host-sync-item` |", "| `host-sync-itme` |"))
    assert Path("README.md") in docs.stale_files(tmp_path)


def test_readme_without_markers_says_where_the_table_goes():
    with pytest.raises(ValueError, match="rule-table markers"):
        docs.with_table("# README\n", "| table |")


def test_every_rule_has_one_section_and_every_table_link_resolves():
    rules = load_rules()
    reference = (ROOT / "docs" / "rules.md").read_text()
    headings = re.findall(r"^## (GL\d{3}) (\S+)$", reference, re.M)
    assert headings == [(r.code, r.name) for r in rules.values()]
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(docs/rules\.md#([a-z0-9-]+)\)", readme)
    assert sorted(links) == sorted(docs.anchor(r) for r in rules.values())
    for rule in rules.values():
        section = reference.split(f"## {rule.code} {rule.name}\n", 1)[1].split("\n## ", 1)[0]
        for example in (*rule.bad, *rule.good):
            assert example.rstrip("\n") in section, rule.code
        assert rule.why in section and rule.fix in section

