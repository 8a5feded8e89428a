"""Issue 10 item 9: what a new user reads -- fix hints, explain pages, empty trees."""

from __future__ import annotations

import pytest

from graphlint.report.explain import ENGINE, seen_in_practice
from graphlint.rules import load_rules


def test_text_output_has_a_fix_hint_under_each_finding_and_points_to_explain(project):
    project.write("src/model.py", project.hot_item)
    result = project.run("src")
    lines = result.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("src/model.py:4:"))
    assert lines[at + 1].startswith("    | ") and lines[at + 2].startswith("    = help: ")
    code = project.item_code()
    assert f"graphlint explain {code}" in result.out


def test_suppressed_findings_get_no_fix_hint(project):
    project.write("src/model.py", project.hot_item.replace(".item()", ".item()  # graphlint: ignore -- once"))
    result = project.run("src", "--show-suppressed")
    assert "suppressed: once" in result.out and "= help:" not in result.out and "graphlint explain" not in result.out


@pytest.mark.parametrize("tree", ["empty", "docs"])
def test_a_tree_without_python_files_warns_and_exits_0_like_ruff(project, tree):
    (project.root / tree).mkdir()
    if tree == "docs":
        project.write("docs/index.md", "# hello\n")
    for flags in ((), ("--strict",)):
        result = project.run(tree, *flags)
        assert result.rc == 0 and result.out == "No Python files checked.\n"
        assert result.err == f"graphlint: warning: No Python files found under {tree}: nothing was checked\n"
    data = project.run(tree, "--format", "json").json()
    assert data["summary"]["files"] == 0 and "No Python files found" in data["summary"]["warnings"][0]


def test_explain_says_what_was_seen_in_its_own_words(project):
    code = project.item_code()
    page = project.run("--raw", "explain", code).out
    assert "seed" not in page.lower() and "CATEGORY" not in page
    assert f"Seen in practice: {ENGINE} hit host syncs on the decode path" in " ".join(page.split())


def test_every_rule_with_a_seed_reads_without_the_seed_documents_numbering():
    for rule in load_rules().values():
        if not rule.seed:
            continue
        text = seen_in_practice(rule.seed)
        assert text.startswith(f"Seen in practice: {ENGINE} ") and text.endswith("."), rule.code
        for jargon in ("CATEGORY", "Phase 1", "Method 2", "seed", "hot path /"):
            assert jargon not in text, (rule.code, text)
    assert seen_in_practice("") == ""
    assert "(there: torch.zeros_like -> scalar)" in seen_in_practice("2. Per-step tensor allocations (torch.zeros_like -> scalar)")
