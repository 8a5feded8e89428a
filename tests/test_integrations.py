"""The distribution name and the pre-commit hook this repository defines.

The snippets a user copies (the README's install lines, docs/check.md's pre-commit and GitHub
workflow) are run as written by tests/test_snippets.py; here: the names they rely on.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

import graphlint

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHECK_DOC = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    tomllib = pytest.importorskip("tomli")

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NAME = PYPROJECT["project"]["name"]


def _block(heading: str, language: str) -> str:
    """The first ```language block after ``heading`` in docs/check.md."""
    section = CHECK_DOC[CHECK_DOC.index(heading):]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"no {language} block under {heading!r}"
    return match.group(1)


def test_the_distribution_name_is_used_everywhere_a_user_copies_it():
    assert NAME == graphlint.DISTRIBUTION != "graphlint"  # "graphlint" on the index is another project
    assert f'pip install "{NAME} @ git+' in _block("## GitHub: code scanning", "yaml")
    assert f"{NAME} @\ngit+" in README or f"{NAME} @ git+" in README
    for text in (README, CHECK_DOC):
        assert "pip install graphlint" not in text
    assert "torch" not in " ".join(PYPROJECT["project"]["dependencies"])  # the hook's and CI's install
    assert "urls" not in PYPROJECT["project"]  # no public URL is known yet: see the comment in pyproject.toml
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(d.startswith("transformers") for d in extras["hf"]) and extras["plots"]
    assert {"pre-commit", "transformers", "matplotlib", "pytest-xdist"} <= {re.split(r"[<>=; ]", d)[0]
                                                                           for d in extras["test"]}


def test_the_precommit_snippet_names_the_hook_this_repository_defines():
    snippet = yaml.safe_load(_block("## pre-commit", "yaml"))
    (repo,) = snippet["repos"]
    assert re.fullmatch(r"[0-9a-f]{40}", repo["rev"]) and repo["repo"].startswith("https://")
    (hook,) = repo["hooks"]
    (defined,) = HOOKS
    assert hook["id"] == defined["id"] == "graphlint"
    assert defined["entry"].split()[:2] == ["graphlint", "check"] and "--no-progress" in defined["entry"]
    assert defined["language"] == "python" and defined["types"] == ["python"]
    assert "additional_dependencies" not in defined  # core dependencies only: never torch
