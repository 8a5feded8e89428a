"""The README's install line and docs/check.md's pre-commit snippet and GitHub workflow, exercised as written.

* The distribution name is the one pyproject declares, everywhere a user copies it from.
* The workflow in docs/check.md is ``.github/workflows/graphlint.yml`` byte for byte, and its
  graphlint commands gate a project: a hazard fails with an annotation, the fix passes.
* The pre-commit hook: ``pre-commit try-repo`` against this checkout blocks a hazard in a
  fixture project and passes its fix; the documented snippet, with its two placeholders filled
  in, runs the same way; the hook's environment holds graphlint's core dependencies, never torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import graphlint

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHECK_DOC = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
WORKFLOW = ROOT / ".github" / "workflows" / "graphlint.yml"
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    tomllib = pytest.importorskip("tomli")

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NAME = PYPROJECT["project"]["name"]

HAZARD = "def decode_step(x):\n    return x.sum().item()\n"
FIXED = "def decode_step(x):\n    return x.sum()\n"


def _block(heading: str, language: str) -> str:
    """The first ```language block after ``heading`` in docs/check.md."""
    section = CHECK_DOC[CHECK_DOC.index(heading):]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"no {language} block under {heading!r}"
    return match.group(1)


def test_the_distribution_name_is_used_everywhere_a_user_copies_it():
    assert NAME == graphlint.DISTRIBUTION != "graphlint"  # "graphlint" on the index is another project
    assert f"pip install {NAME}" in WORKFLOW.read_text()
    for text in (README, CHECK_DOC):
        assert f"pip install {NAME}" in text and "pip install graphlint" not in text
    assert "torch" not in " ".join(PYPROJECT["project"]["dependencies"])  # the hook's and CI's install
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(d.startswith("transformers") for d in extras["hf"])
    assert {"pre-commit", "transformers"} <= {re.split(r"[<>=; ]", d)[0] for d in extras["test"]}


def test_the_readme_workflow_is_the_repository_workflow():
    assert _block("## GitHub: code scanning", "yaml") == WORKFLOW.read_text()


def _graphlint_steps() -> list[str]:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["graphlint"]["steps"]
    return [s["run"].split("#")[0].strip() for s in steps if s.get("run", "").startswith("graphlint ")]


def _project(tmp_path: Path, source: str) -> Path:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "pyproject.toml").write_text('[tool.graphlint]\npaths = ["src"]\n')
    (project / "src" / "engine.py").write_text(source)
    return project


@pytest.mark.slow
def test_the_workflow_steps_gate_a_project(tmp_path):
    """Each ``graphlint`` step of the workflow, run as the job runs it (a shell in the checkout)."""
    steps = _graphlint_steps()
    assert len(steps) == 2, steps
    project = _project(tmp_path, HAZARD)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    sarif, annotate = (subprocess.run(step, shell=True, cwd=project, capture_output=True, text=True, env=env,
                                      timeout=120) for step in steps)
    assert sarif.returncode == 0, sarif.stderr
    results = json.loads((project / "graphlint.sarif").read_text())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["GL101"]
    assert annotate.returncode == 1 and annotate.stdout.startswith("::error file=src/engine.py,line=2,")
    (project / "src" / "engine.py").write_text(FIXED)
    fixed = subprocess.run(steps[1], shell=True, cwd=project, capture_output=True, text=True, env=env, timeout=120)
    assert fixed.returncode == 0 and "::error" not in fixed.stdout


def test_the_readme_precommit_snippet_names_the_hook_this_repository_defines():
    snippet = yaml.safe_load(_block("## pre-commit", "yaml"))
    (repo,) = snippet["repos"]
    assert repo["rev"] == "<commit sha or tag>" and repo["repo"].startswith("https://")
    (hook,) = repo["hooks"]
    (defined,) = HOOKS
    assert hook["id"] == defined["id"] == "graphlint"
    assert defined["entry"].split()[:2] == ["graphlint", "check"] and "--no-progress" in defined["entry"]
    assert defined["language"] == "python" and defined["types"] == ["python"]
    assert "additional_dependencies" not in defined  # core dependencies only: never torch


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _precommit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture
def git_project(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of graphlint (pre-commit installs hooks from a git repository)")
    pytest.importorskip("pre_commit", reason="pre-commit is in the test extra")
    project = _project(tmp_path, HAZARD)
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)
    return project


@pytest.mark.slow
def test_precommit_try_repo_blocks_the_hazard_and_passes_the_fix(git_project, tmp_path):
    blocked = _precommit("try-repo", str(ROOT), "graphlint", "--all-files", cwd=git_project, home=tmp_path / "pc")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "src/engine.py:2:12: GL101 [host-sync-item]" in blocked.stdout
    (git_project / "src" / "engine.py").write_text(FIXED)
    _git("add", "-A", cwd=git_project)
    passed = _precommit("try-repo", str(ROOT), "graphlint", "--all-files", cwd=git_project, home=tmp_path / "pc")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert re.search(r"graphlint \(CUDA graph capture hazards\)\.+Passed", passed.stdout)


@pytest.mark.slow
def test_the_readme_snippet_with_its_placeholders_filled_in_runs_and_installs_no_torch(git_project, tmp_path):
    """The snippet as a user writes it into .pre-commit-config.yaml: this checkout as the repo, its
    HEAD as the rev (a commit sha, as docs/check.md says to pin)."""
    snippet = _block("## pre-commit", "yaml")
    config = re.sub(r"repo: \S+", f"repo: {ROOT.as_posix()}", snippet)
    config = config.replace("<commit sha or tag>", _git("rev-parse", "HEAD", cwd=ROOT))
    (git_project / ".pre-commit-config.yaml").write_text(config)
    _git("add", "-A", cwd=git_project)
    home = tmp_path / "pc-home"
    blocked = _precommit("run", "--all-files", cwd=git_project, home=home)
    assert blocked.returncode == 1 and "GL101" in blocked.stdout, blocked.stdout + blocked.stderr
    site = [p for p in home.rglob("site-packages") if p.is_dir()]
    assert site and any((p / "libcst").is_dir() for p in site)
    assert not any((p / "torch").exists() for p in site), "the hook's environment must not install torch"
    (git_project / "src" / "engine.py").write_text(FIXED)
    _git("add", "-A", cwd=git_project)
    passed = _precommit("run", "--all-files", cwd=git_project, home=home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
