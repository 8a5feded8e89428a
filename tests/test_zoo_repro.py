"""``reports/zoo/repro/``: every hand-written reproducer is in ``index.json`` (which links a zoo
blocker to it), every entry's script and draft exist, the scripts import nothing of graphlint, and
every blocker of the committed H200 zoo has its reproducer (issue 21's "Done when")."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from graphlint.report.zoo import load_repros, repro_key
from graphlint.zoo import first_blocker

ROOT = Path(__file__).resolve().parents[1]
REPRO = ROOT / "reports" / "zoo" / "repro"
INDEX = REPRO / "index.json"
ENTRIES = json.loads(INDEX.read_text(encoding="utf-8"))
SCRIPTS = sorted(p.name for p in REPRO.glob("*.py") if not p.name.startswith("_"))


def test_every_script_and_draft_is_in_the_index_and_every_entry_exists():
    assert SCRIPTS, "no reproducer found"
    assert sorted({e["script"] for e in ENTRIES}) == SCRIPTS
    assert sorted({e["issue"] for e in ENTRIES}) == sorted(p.name for p in REPRO.glob("*.issue.md"))
    for e in ENTRIES:
        assert set(e) == {"rule", "file", "function", "script", "issue"}, e
        assert (REPRO / e["script"]).is_file() and (REPRO / e["issue"]).is_file(), e
        # "build": a model that does not build or decode from transformers' own defaults, where the bug is
        # (the zoo's "target not built" rows); it names no rule, so the report links none to it
        assert (e["rule"].startswith("GL") or e["rule"] == "build") and e["file"].startswith("transformers/"), e
        assert e["function"], e
    keys = [(e["rule"], e["file"], e["function"]) for e in ENTRIES]
    assert len(keys) == len(set(keys)), "one blocker, one reproducer"


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_reproducer_is_plain_torch_and_transformers_with_a_docstring_and_a_cuda_part(script):
    tree = ast.parse((REPRO / script).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert "graphlint" not in imported and {"torch", "transformers"} <= imported
    doc = ast.get_docstring(tree) or ""
    assert "python reports/zoo/repro/" + script in doc and ("Why" in doc or "why" in doc)
    assert "--cuda" in doc or "needs CUDA" in doc


def test_every_blocker_of_the_committed_h200_zoo_has_its_reproducer():
    runs = [r for path in sorted((ROOT / "reports").glob("zoo-h200-*.json"))
            for r in json.loads(path.read_text(encoding="utf-8"))["runs"]]
    if not runs:
        pytest.skip("no H200 zoo report committed")
    repros = load_repros(str(INDEX))
    blockers = [(run["arch"], first_blocker(run)) for run in runs if run["status"] == "done"]
    missing = sorted({f"{b.rule} {b.where} {b.function} ({arch})" for arch, b in blockers
                      if b is not None and b.rule and b.line and repro_key(b.rule, b.path, b.function) not in repros})
    assert not missing, missing
    assert not [arch for arch, b in blockers if b is not None and b.path.startswith("graphlint/")], \
        "a blocker in graphlint's own target is a harness artefact"
