"""Every shell and YAML snippet of README.md and docs/*.md works as written, or is named here with
the reason it cannot run offline; docs/inventory.md's pytest example runs with its worked target.

Each line of a ```bash block is one command. :data:`LINES` (in tests/snippet_lines.py) says, for
every one of them, the exit status it must give when run as written (in a throwaway copy of this
checkout, with the paths the snippet assumes made: ``src/engine.py``, ``my_engine/target.py`` = the
guide's worked target, ``path/to/config.json``, a benchmark and a smoke test for ``graphlint
record``...; a git repository for a block that commits), or why it is not run here. A snippet line
missing from the table fails :func:`test_every_snippet_line_is_run_or_says_why_not`: a new snippet
has to say how it is tested.
The YAML snippets (pre-commit, the Actions workflow) have tests of their own below.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snippet_lines import INSTALL_TORCH, LINES, SAYS, TORCH_FREE  # tests/ is on sys.path (no __init__.py)

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL, YAML = ("bash", "sh", "shell"), ("yaml", "yml")
#: A per-token loop is the evidence that decode_step is the decode path (a name alone is a guess, whose
#: findings are at most warnings and never fail a hook or a gate).
LOOP = "\n\ndef generate(x, steps):\n    for _ in range(steps):\n        x = decode_step(x)\n    return x\n"
HAZARD = "def decode_step(x):\n    return x.sum().item()\n" + LOOP
FIXED = "def decode_step(x):\n    return x.sum()\n" + LOOP
ENGINE = "import torch\n\n\nclass Decoder:\n    def step(self, x: torch.Tensor):\n        return x.sum().item()\n"
PLACEHOLDER = "https://example.invalid/FILL-IN/graphlint"
#: A user's benchmark and smoke test that `graphlint record` runs: a few tiny eager dsv4 steps on the CPU.
DSV4_STEPS = 'from dsv4.__main__ import main\n\nsys.exit(main(["generate", "--device", "cpu", "--steps", "8"]))\n'
MY_BENCH = ("import sys\nfrom pathlib import Path\n\nsys.path.insert(0, str(Path(__file__).resolve().parent.parent))\n"
            + DSV4_STEPS)  # this copy's dsv4/, not the installed one: a script's sys.path starts at bench/
SERVE = 'import sys\n\nassert sys.argv[1:] == ["--smoke-test"], sys.argv\n' + DSV4_STEPS
GIT_IDENTITY = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
                for what, value in (("NAME", "snippet test"), ("EMAIL", "snippets@example.invalid"))}

def _blocks(languages) -> list[tuple[str, int, str, str]]:
    """(file, line of the fence, language, body) of every fenced block in ``languages``."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.S | re.M):
            if match.group(1) in languages:
                out.append((doc.relative_to(ROOT).as_posix(), text[:match.start()].count("\n") + 1, match.group(1),
                            match.group(2)))
    return out


def _commands(body: str) -> list[str]:
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in body.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


SHELL_BLOCKS = _blocks(SHELL)


def _yaml_block(heading: str) -> str:
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    return re.search(r"```yaml\n(.*?)```", text[text.index(heading):], re.S).group(1)


def test_every_snippet_line_is_run_or_says_why_not():
    lines = [c for *_, body in SHELL_BLOCKS for c in _commands(body)]
    assert sorted(set(lines) - set(LINES)) == [], "a snippet line this test does not know: add it to LINES"
    assert sorted(set(LINES) - set(lines)) == [], "LINES names a line no snippet has any more"
    yamls = {(f, lang) for f, _, lang, _ in _blocks(YAML)}
    assert yamls == {("docs/check.md", "yaml"), ("docs/rule-packs.md", "yaml")}  # pre-commit, workflow; a rule pack
    # (the rule pack is data: tests/static/test_static_rule_examples.py loads it and runs its examples)


def test_no_snippet_installs_graphlint_by_its_unpublished_name():
    for file, line, _lang, body in [*SHELL_BLOCKS, *_blocks(YAML)]:
        # a name alone goes to the package index; `cuda-graphlint @ git+URL@sha` does not
        assert not re.search(r"pip install\s+['\"]?cuda-graphlint(\[[\w,]+\])?(?![\w[-]|\s*@)", body), (file, line)
    readme = (ROOT / "README.md").read_text()
    assert "nothing installs it by name" in readme and "twine upload" in readme


def _workspace(tmp_path: Path) -> Path:
    """A copy of this checkout (its files, not .git or .venv) with a user's project beside dsv4/."""
    work = tmp_path / "work"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True).stdout.split() if (ROOT / ".git").exists() and shutil.which("git") else []
    if listed:
        for rel in listed:
            if (ROOT / rel).is_file() and not rel.startswith(".venv/"):
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / rel, work / rel)
    else:
        shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".graphlint_cache"))
    (work / "src").mkdir(exist_ok=True)
    (work / "src" / "engine.py").write_text(ENGINE)
    (work / "my_engine").mkdir(exist_ok=True)
    (work / "my_engine" / "target.py").write_text(_worked_target())
    (work / "bench" / "my_decode_bench.py").write_text(MY_BENCH)
    (work / "mypkg").mkdir(exist_ok=True)
    (work / "mypkg" / "__init__.py").write_text("")
    (work / "mypkg" / "serve.py").write_text(SERVE)
    return work


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PIP_REQUIRE_VIRTUALENV")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


def _bash(line: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=600, env=_env(**env))


def _as_run(command: str) -> str:
    """What the test runs of a line: all of it, or what follows its torch install (INSTALL_TORCH
    puts torch into a fresh environment, which is .ci/run's job: its [test] extra holds [engine] and
    [plots]; the test's own environment is that one)."""
    return command[len(INSTALL_TORCH):] if command.startswith(INSTALL_TORCH) else command


#: A command that several snippets show runs in the first of them only.
FIRST = {}
for _block in SHELL_BLOCKS:
    for _command in _commands(_block[3]):
        FIRST.setdefault(_command, _block[:2])
RUNNABLE = [b for b in SHELL_BLOCKS if any(isinstance(LINES.get(c), int) and FIRST[c] == b[:2]
                                           for c in _commands(b[3]))]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[f"{f}:{line}" for f, line, _, _ in RUNNABLE])
def test_shell_snippets_run_as_written(block, tmp_path):
    file, line, _lang, body = block
    work = _workspace(tmp_path)
    if "path/to/" in body:
        _hf_paths(work)
    if any(c.startswith("git ") for c in _commands(body)):
        if shutil.which("git") is None:
            pytest.skip("the snippet commits with git, which is not installed here")
        _git("init", "-q", cwd=work)
    for command in _commands(body):
        expected = LINES[command]
        if not isinstance(expected, int) or FIRST[command] != (file, line):
            continue
        run = _bash(_as_run(command), work, NO_COLOR="1", **GIT_IDENTITY)
        said = run.stdout + run.stderr
        assert run.returncode == expected, f"{file}:{line}: {command}\n{said[-3000:]}"
        assert SAYS.get(command, "") in said, f"{file}:{line}: {command}\n{said[-3000:]}"
        if command.startswith(INSTALL_TORCH):
            assert "graphlint inventory: exit status 1 (1 expected)" in said and (work / "inventory.md").is_file()


def _hf_paths(work: Path) -> None:
    """The guide's `path/to/config.json` (a JSON config) and `path/to/saved_model` (save_pretrained)."""
    pytest.importorskip("transformers", reason="the Hugging Face lines need the [hf] extra")
    from graphlint.targets import hf

    (work / "path" / "to").mkdir(parents=True)
    (work / "path" / "to" / "config.json").write_text(json.dumps(hf.PRESETS["tiny-llama"]))
    lm, _source = hf.load_model("tiny-llama", dtype="float32", attn="sdpa", seed=0)
    lm.save_pretrained(work / "path" / "to" / "saved_model")


@pytest.mark.slow
def test_the_torch_free_first_run_works_as_written(tmp_path):
    """README's first command in a fresh copy of the checkout: its own venv, no torch, exit 1."""
    work = _workspace(tmp_path)
    run = _bash(TORCH_FREE, work)
    assert "graphlint check: exit status 1 (1 expected)" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Found 31 findings" in run.stdout
    probe = subprocess.run([str(work / ".venv" / "bin" / "python"), "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0, "the torch-free install must not install torch"


def _worked_target() -> str:
    guide = (ROOT / "docs" / "inventory.md").read_text()
    section = guide[guide.index("Worked example, a plain `nn.Module` decode step"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_worked_target_is_the_tested_fixture():
    fixture = (ROOT / "fixtures" / "targets" / "plain_module.py").read_text()
    docstring_end = ast.parse(fixture).body[0].end_lineno
    assert _worked_target() == "\n".join(fixture.splitlines()[docstring_end:]).strip("\n") + "\n"


@pytest.mark.slow
def test_the_pytest_example_runs_with_its_worked_target(tmp_path):
    """docs/inventory.md's ``graph_capture`` block, verbatim, in an uninstalled project whose
    ``my_engine/target.py`` is the guide's worked target: 1 passed, 1 skipped on a CPU; 2 on a GPU."""
    import torch

    guide = (ROOT / "docs" / "inventory.md").read_text()
    example = re.search(r"```python\n(.*?)```", guide[guide.index("**pytest**: the plugin"):], re.S).group(1)
    project = tmp_path / "proj"
    (project / "my_engine").mkdir(parents=True)
    (project / "my_engine" / "target.py").write_text(_worked_target())
    (project / "tests").mkdir()
    (project / "tests" / "test_graph.py").write_text(example)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"], cwd=project,
                         capture_output=True, text=True, timeout=600, env=_env())
    expected = "2 passed" if torch.cuda.is_available() else "1 passed, 1 skipped"
    assert expected in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


# -- the YAML snippets -----------------------------------------------------------------------------

def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def test_both_snippets_pin_the_same_real_commit_and_mark_the_one_placeholder():
    precommit = yaml.safe_load(_yaml_block("## pre-commit"))
    workflow = yaml.safe_load(_yaml_block("## GitHub: code scanning"))
    (repo,) = precommit["repos"]
    assert repo["repo"] == workflow["env"]["GRAPHLINT_REPO"] == PLACEHOLDER  # .invalid never resolves
    sha = repo["rev"]
    assert re.fullmatch(r"[0-9a-f]{40}", sha) and workflow["env"]["GRAPHLINT_REV"] == sha
    for block in (_yaml_block("## pre-commit"), _yaml_block("## GitHub: code scanning")):
        assert block.count("FILL IN") == 1  # the one line a user must change
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git history here to look the pinned commit up in")
    found = subprocess.run(["git", "cat-file", "-t", sha], cwd=ROOT, capture_output=True, text=True)
    if found.returncode != 0:
        shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip()
        assert shallow == "true", f"the pinned commit {sha} is not in this repository's history"
        pytest.skip("a shallow clone: the pinned commit is older than its history")
    assert found.stdout.strip() == "commit"


def test_the_repository_workflow_is_the_snippet_installing_its_own_checkout():
    snippet = yaml.safe_load(_yaml_block("## GitHub: code scanning"))
    own = yaml.safe_load((ROOT / ".github" / "workflows" / "graphlint.yml").read_text())
    steps = [dict(s) for s in snippet["jobs"]["graphlint"]["steps"]]
    install = next(s for s in steps if s.get("run", "").startswith("pip install"))
    assert install["run"] == 'pip install "cuda-graphlint @ git+${GRAPHLINT_REPO}@${GRAPHLINT_REV}"'
    install["run"] = "pip install ."
    assert own["jobs"]["graphlint"]["steps"] == steps and "env" not in own
    assert {k: v for k, v in snippet.items() if k != "env"} | {"jobs": own["jobs"]} == own


def _project(tmp_path: Path, source: str) -> Path:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "pyproject.toml").write_text('[tool.graphlint]\npaths = ["src"]\n')
    (project / "src" / "engine.py").write_text(source)
    return project


def _needs_git() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists() or not _head():
        pytest.skip("needs git and a git checkout of graphlint (the snippets install it from a git repository)")


@pytest.mark.slow
def test_the_workflow_snippet_runs_as_written(tmp_path):
    """Its `run:` steps in a shell, as the job runs them: the install from this repository at HEAD
    into a fresh environment, then both graphlint steps. Its `uses:` steps are GitHub's actions."""
    _needs_git()
    workflow = yaml.safe_load(_yaml_block("## GitHub: code scanning"))
    steps = workflow["jobs"]["graphlint"]["steps"]
    assert [s["uses"] for s in steps if "uses" in s] == ["actions/checkout@v4", "actions/setup-python@v5",
                                                          "github/codeql-action/upload-sarif@v3"]
    install, sarif, annotate = (s["run"].split("#")[0].strip() for s in steps if "run" in s)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # file://localhost/...: pip's requirement parser refuses a `name @ git+file:///path` (no host)
    env = {"GRAPHLINT_REPO": f"file://localhost{ROOT.as_posix()}", "GRAPHLINT_REV": _head(), "VIRTUAL_ENV": str(venv),
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    project = _project(tmp_path, HAZARD)
    installed = subprocess.run(["bash", "-c", install], cwd=project, capture_output=True, text=True, timeout=600,
                               env={**_env(), **env})
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    assert subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], capture_output=True).returncode != 0
    run = {step: subprocess.run(["bash", "-c", step], cwd=project, capture_output=True, text=True, timeout=300,
                                env={**_env(), **env}) for step in (sarif, annotate)}
    assert run[sarif].returncode == 0, run[sarif].stderr
    results = json.loads((project / "graphlint.sarif").read_text())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["GL101"]
    assert run[annotate].returncode == 1 and run[annotate].stdout.startswith("::error file=src/engine.py,line=2,")
    (project / "src" / "engine.py").write_text(FIXED)
    fixed = subprocess.run(["bash", "-c", annotate], cwd=project, capture_output=True, text=True, timeout=300,
                           env={**_env(), **env})
    assert fixed.returncode == 0 and "::error" not in fixed.stdout


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _precommit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**_env(), "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.slow
def test_the_precommit_snippet_runs_as_written(tmp_path):
    """The snippet with its one placeholder filled in (this checkout) and HEAD as its rev: it blocks a
    `.item()` and passes the fix; its environment has libcst and no torch; `try-repo` at the same
    commit reuses that environment and blocks the hazard again."""
    _needs_git()
    pytest.importorskip("pre_commit", reason="pre-commit is in the test extra")
    snippet = _yaml_block("## pre-commit")
    sha = yaml.safe_load(snippet)["repos"][0]["rev"]
    config = snippet.replace(PLACEHOLDER, ROOT.as_posix()).replace(sha, _head())
    project = _project(tmp_path, HAZARD)
    _git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(config)
    _git("add", "-A", cwd=project)
    home = tmp_path / "pc-home"
    blocked = _precommit("run", "--all-files", cwd=project, home=home)
    assert blocked.returncode == 1 and "src/engine.py:2:12: GL101 [host-sync-item]" in blocked.stdout, \
        blocked.stdout + blocked.stderr
    site = [p for p in home.rglob("site-packages") if p.is_dir()]
    assert site and any((p / "libcst").is_dir() for p in site)
    assert not any((p / "torch").exists() for p in site), "the hook's environment must not install torch"
    (project / "src" / "engine.py").write_text(FIXED)
    _git("add", "-A", cwd=project)
    passed = _precommit("run", "--all-files", cwd=project, home=home)
    assert passed.returncode == 0 and re.search(r"graphlint \(CUDA graph capture hazards\)\.+Passed", passed.stdout)
    (project / "src" / "engine.py").write_text(HAZARD)
    _git("add", "-A", cwd=project)
    tried = _precommit("try-repo", ROOT.as_posix(), "graphlint", "--ref", _head(), "--all-files", cwd=project, home=home)
    assert tried.returncode == 1 and "GL101" in tried.stdout, tried.stdout + tried.stderr
