"""Command-line surface: options, exit codes, rules/explain, no torch import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import graphlint


def test_version_and_help_epilog(project):
    result = project.run("--raw", "--version")
    assert result.rc == 0 and result.out.strip() == f"graphlint {graphlint.__version__}"
    result = project.run("--raw", "check", "--help")
    assert result.rc == 0
    for text in ("exit codes:", "0  no failing findings", "1  at least one failing", "2  usage, configuration"):
        assert text in result.out


def test_usage_errors_exit_2(project):
    assert project.run("--format", "xml").rc == 2
    assert project.run("--raw", "no-such-command").rc == 2
    assert project.run("--raw").rc == 2  # no command: help, exit 2
    missing = project.run("does_not_exist.py")
    assert missing.rc == 2 and "does not exist" in missing.err


def test_clean_findings_and_exit_zero(project):
    project.write("src/model.py", "def decode_step(x):\n    return x + 1\n")
    clean = project.run("src")
    assert clean.rc == 0 and "No findings in 1 file" in clean.out
    project.write("src/model.py", project.hot_item)
    dirty = project.run("src")
    assert dirty.rc == 1
    assert "src/model.py:4:" in dirty.out and "return x.sum().item()" in dirty.out
    assert project.run("src", "--exit-zero").rc == 0


def test_strict_makes_warnings_fail(project):
    project.write("src/model.py", "def decode_step(x):\n    return x + 1  # graphlint: ignore\n")
    assert project.codes("src") == ["GL001"]  # a warning
    assert project.run("src").rc == 0
    assert project.run("src", "--strict").rc == 1


def test_select_and_ignore(project):
    code = project.item_code()
    project.write("src/model.py", project.hot_item + "\ndef other(x):\n    pass  # graphlint: ignore[GL105]\n")
    assert sorted(project.codes("src")) == ["GL001", code]
    category = project.findings("src")[0]["category"]
    for selector in (code, code[:3], category, "ALL", f"GL000,{code}"):
        assert code in project.codes("src", "--select", selector), selector
    assert project.codes("src", "--ignore", code) == ["GL001"]
    assert project.codes("src", "--ignore", f"{code},GL001") == []
    assert project.codes("src", "--ignore", "meta", "--ignore", category) == []
    unknown = project.run("src", "--select", "GL9")
    assert unknown.rc == 2 and "unknown rule selector" in unknown.err


def test_entry_limits_what_is_hot(project):
    code = project.item_code()
    project.write("src/model.py", """\
        import torch

        def helper(x: torch.Tensor):
            return x.item()

        def decode_step(x: torch.Tensor):
            return x + 1
    """)
    assert project.codes("src") == []
    found = project.findings("src", "--entry", "src/model.py:helper")
    assert [f["rule"] for f in found] == [code] and found[0]["line"] == 4
    bad = project.run("src", "--entry", "src/model.py")
    assert bad.rc == 2 and "FILE.py:function" in bad.err
    missing = project.run("src", "--entry", "src/nope.py:f")
    assert missing.rc == 2 and "does not exist" in missing.err


def test_unwritable_output_and_unexpected_crash_exit_2(project, monkeypatch):
    project.write("src/model.py", "x = 1\n")
    result = project.run("src", "--output", "missing_dir/report.txt")
    assert result.rc == 2 and "missing_dir/report.txt" in result.err
    import graphlint.check

    monkeypatch.setattr(graphlint.check, "discover", lambda *a: {}["boom"])
    crash = project.run("src")
    assert crash.rc == 2 and "KeyError" in crash.err and "graphlint bug" in crash.err


def test_output_file_and_show_chain(project):
    project.write("src/model.py", project.hot_item)
    result = project.run("src", "--output", "report.txt", "--show-chain")
    assert result.rc == 1 and result.out == ""
    text = (project.root / "report.txt").read_text()
    assert "chain: " in text and "decode_step" in text
    assert "chain: " not in project.run("src").out


def test_parallel_output_identical(project):
    for i in range(20):
        project.write(f"src/m{i:02d}.py", project.hot_item.replace("decode_step", f"decode_step_{i}"))
    serial = project.run("src", "--jobs", "1", "--format", "json")
    parallel = project.run("src", "--jobs", "2", "--format", "json")
    assert serial.rc == parallel.rc == 1
    assert serial.out == parallel.out and len(serial.json()["findings"]) == 20
    assert project.run("src", "--jobs", "0").rc == 2


def test_rules_and_explain(project):
    result = project.run("--raw", "rules", "--format", "json")
    table = result.json()
    assert result.rc == 0 and {"GL000", "GL001", "GL002", "GL003"} <= {r["code"] for r in table}
    assert all(r["category"] and r["severity"] and r["message"] for r in table)
    text = project.run("--raw", "rules")
    assert "parse-error" in text.out and "unused-suppression" in text.out
    assert "{name}" not in text.out  # per-finding placeholders are not shown in the table
    by_code = project.run("--raw", "explain", "GL001")
    by_name = project.run("--raw", "explain", "unused-suppression")
    assert by_code.rc == by_name.rc == 0 and by_code.out == by_name.out
    for part in ("Why it matters:", "Bad:", "Good:", "How to fix:", "# graphlint: ignore"):
        assert part in by_code.out
    code = project.item_code()
    hazard = project.run("--raw", "explain", code.lower())
    assert "Why it breaks capture:" in hazard.out and "Bad:" in hazard.out
    typo = project.run("--raw", "explain", "unused-supression")
    assert typo.rc == 2 and "did you mean unused-suppression" in typo.err


def test_check_never_imports_torch(project, tmp_path):
    (tmp_path / "m.py").write_text(project.hot_item)
    script = (
        "import sys; from graphlint.cli import main; "
        "rc = main(['check', '--no-cache', '--exit-zero', '--format', 'json', '-o', 'out.json', 'm.py']); "
        "main(['rules', '--format', 'json']); "
        "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out.json").read_text())["findings"]


def test_dynamic_commands_registered_when_present():
    from graphlint.cli import build_parser
    import importlib.util

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"check", "rules", "explain"} <= set(sub.choices)
    if importlib.util.find_spec("graphlint.dynamic.commands") is not None:
        assert {"inventory", "capture-test"} <= set(sub.choices)
    else:
        pytest.skip("graphlint.dynamic.commands not present yet")
