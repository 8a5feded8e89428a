"""``[tool.graphlint]``: discovery, every key, every kind of mistake (exit 2 with a message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.config_file import ConfigError, PathMatcher, load_config


@pytest.mark.parametrize(
    "body, message",
    [
        ('selct = ["GL1"]\n', "unknown key 'selct'; did you mean 'select'?"),
        ('wibble = 1\n', "unknown key 'wibble' (known keys:"),
        ('select = "GL1"\n', "select: expected a list of strings"),
        ('per-file-ignores = ["x"]\n', "per-file-ignores: expected a table"),
        ('per-file-ignores = {"tests/*" = "GL2"}\n', "per-file-ignores 'tests/*': expected a list of strings"),
        ('select = ["GL9"]\n', "select: unknown rule selector 'GL9'"),
        ('ignore = ["no-such-rule"]\n', "ignore: unknown rule selector 'no-such-rule'"),
        ('per-file-ignores = {"tests/*" = ["GL99"]}\n', "per-file-ignores 'tests/*': unknown rule selector"),
        ('paths = ["missing_dir"]\n', "missing_dir (from"),
        ('entry = ["model.py:Decoder.step"]\n', "entry file model.py does not exist"),
        ('rule-packs = ["packs/none.yaml"]\n', "cannot read rule pack"),
        ('select = [\n', "is not valid TOML"),
    ],
)
def test_config_errors_exit_2(project, body, message):
    project.config(body)
    result = project.run()
    assert result.rc == 2
    assert result.err.startswith("graphlint: error: ") and message in result.err, result.err


def test_config_found_walking_up_and_paths_relative_to_it(project, monkeypatch):
    project.config('paths = ["src"]\nexclude = ["src/generated"]\n')
    project.write("src/model.py", project.hot_item)
    project.write("src/generated/gen.py", project.hot_item)
    project.write("other/model.py", project.hot_item)
    code = project.item_code()
    assert [(f["rule"], f["path"]) for f in project.findings()] == [(code, "src/model.py")]
    monkeypatch.chdir(project.root / "src")  # from a subdirectory: same files, cwd-relative paths
    assert [f["path"] for f in project.findings()] == ["model.py"]


def test_config_is_found_where_the_checked_code_is(project, monkeypatch):
    """``graphlint check ../other`` uses ../other's [tool.graphlint], like black's project root;
    without paths, or when nothing is above them, discovery starts at the working directory."""
    code = project.item_code()
    project.write("other/pyproject.toml", f'[tool.graphlint]\nignore = ["{code}"]\n')
    project.write("other/model.py", project.hot_item)
    project.write("here/model.py", project.hot_item)
    monkeypatch.chdir(project.root / "here")
    assert project.codes("../other") == []
    assert project.codes("../other/model.py") == []
    assert project.codes("model.py") == [code]  # here has no [tool.graphlint] above it
    assert project.codes("model.py", "../other/model.py") == [code, code]  # their common root has none


def test_explicit_config_file(project):
    project.write("cfg/graphlint.toml", '[tool.graphlint]\nignore = ["meta"]\n')
    project.write("src/model.py", "x = 1  # graphlint: ignore\n")
    assert project.codes("src") == ["GL001"]
    assert project.codes("src", "--config", "cfg/graphlint.toml") == []
    missing = project.run("src", "--config", "nope.toml")
    assert missing.rc == 2 and "does not exist" in missing.err
    project.write("cfg/empty.toml", "[tool.other]\n")
    assert "no [tool.graphlint] table" in project.run("src", "--config", "cfg/empty.toml").err


def test_cli_overrides_config(project):
    code = project.item_code()
    project.config('select = ["meta"]\nignore = ["GL001"]\n')
    project.write("src/model.py", project.hot_item + "y = 1  # graphlint: ignore[GL105]\n")
    assert project.codes("src") == []  # config: only meta, GL001 ignored
    assert project.codes("src", "--select", "ALL") == [code, "GL001"]  # --select starts afresh
    assert project.codes("src", "--select", "ALL", "--ignore", code) == ["GL001"]


def test_per_file_ignores_and_entry_in_config(project):
    code = project.item_code()
    project.config(f'per-file-ignores = {{"tests/*" = ["{code}"]}}\n')
    project.write("src/model.py", project.hot_item)
    project.write("tests/deep/test_model.py", project.hot_item + "y = 1  # graphlint: ignore[" + code + "]\n")
    # ignored under tests/ (at any depth); the suppression there is not "unused" since the rule is off
    assert [(f["rule"], f["path"]) for f in project.findings()] == [(code, "src/model.py")]
    project.config('entry = ["src/model.py:helper"]\n')
    project.write("src/model.py", project.hot_item.replace("decode_step", "helper") + "\ndef decode_step(x):\n    pass\n")
    assert [f["line"] for f in project.findings("src")] == [4]


def test_guards_and_hot_names(project):
    project.write("src/model.py", """\
        import torch

        def run_once(x: torch.Tensor):
            if TRACE:
                print(x.item())
            return x.sum().item()
    """)
    assert project.findings("src") == []  # run_once is not a default hot name
    project.config('hot-names = ["run_*"]\n')
    assert [f["line"] for f in project.findings("src")] == [5, 6]
    project.config('hot-names = ["run_*"]\nguards = ["TRACE"]\n')
    assert [f["line"] for f in project.findings("src")] == [6]


def test_rule_pack_relative_to_config(project):
    project.config('rule-packs = ["packs/team.yaml"]\n')
    project.write("packs/team.yaml", """\
        rules:
          - code: GL199
            name: team-bad-pack-code
            category: host-sync
            severity: error
            message: m
            why: w
            fix: f
    """)
    # x90-x99 codes are free for user packs; the pack loads and its rule is listed
    result = project.run("--raw", "rules", "--format", "json")
    assert result.rc == 0 and "GL199" in result.out
    project.write("packs/team.yaml", "rules: [{code: GL000, name: x, category: meta, severity: error, message: m, why: w, fix: f}]\n")
    clash = project.run()
    assert clash.rc == 2 and "already defined" in clash.err


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("tests/*", "tests/a.py", True),
        ("tests/*", "tests/sub/a.py", True),
        ("tests/*", "src/tests/a.py", False),
        ("*_test.py", "src/deep/x_test.py", True),
        ("generated", "a/generated/b.py", True),
        ("/build", "build/x.py", True),
        ("/build", "src/build/x.py", False),
        ("src/**/gen_*.py", "src/a/b/gen_x.py", True),
        ("src/**/gen_*.py", "src/gen_x.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("model?.py", "model1.py", True),
        ("[ab].py", "c.py", False),
        ("./tests", "tests/a.py", True),
        ("./tests/**", "tests/unit/a.py", True),
        ("./tests", "src/tests/a.py", False),
    ],
)
def test_path_matcher(tmp_path, pattern, path, expected):
    assert PathMatcher([pattern], tmp_path)(tmp_path / path) is expected


def test_no_config_means_defaults(tmp_path):
    config = load_config(cwd=tmp_path)
    assert config.path is None or config.path.parent != tmp_path
    broken = tmp_path / "pyproject.toml"
    broken.write_text("[tool.graphlint\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(cwd=tmp_path)
    broken.write_text("[tool.graphlint]\nselect = ['ALL']\n")
    assert load_config(cwd=tmp_path).select == ("ALL",) and load_config(cwd=tmp_path).root == Path(tmp_path)
    broken.write_text("tool = 3\n")  # valid TOML, but no [tool.graphlint] table: not ours, not a crash
    assert load_config(cwd=tmp_path).path != broken


def test_user_pack_declares_a_kernel_wrapper_that_syncs(project):
    """The point of packs: a team says `mylib.launch_sync` syncs, with no Python."""
    project.config('rule-packs = ["packs/team.yaml"]\n')
    project.write("packs/team.yaml", """\
        rules:
          - code: GL150
            name: team-launch-sync
            category: host-sync
            severity: error
            message: "`launch_sync` waits for the GPU"
            why: it calls cudaDeviceSynchronize
            fix: use launch_async
            matcher: function-call
            params: {callees: [mylib.launch_sync]}
    """)
    project.write("src/engine.py", """\
        from mylib import launch_sync as go

        def decode_step(x):
            go(x)
    """)
    assert [(f["rule"], f["line"]) for f in project.findings("src")] == [("GL150", 4)]


def test_user_pack_with_an_unknown_matcher_is_a_config_error(project):
    project.config('rule-packs = ["packs/team.yaml"]\n')
    project.write("packs/team.yaml", """\
        rules:
          - {code: GL151, name: team-x, category: host-sync, severity: error, message: m, why: w, fix: f,
             matcher: no-such-matcher}
    """)
    project.write("src/a.py", "def decode_step(x):\n    return x\n")
    result = project.run("src")
    assert result.rc == 2 and "no-such-matcher" in result.err


def test_an_entry_naming_no_function_is_a_config_error_with_a_suggestion(project):
    """Issue 10: a typo'd entry used to be a warning nobody saw under pre-commit, with exit 0."""
    project.write("src/a.py", "def decode_step(x):\n    return x.item()\n\nclass Engine:\n    def step(self):\n        pass\n")
    for flags in ((), ("--strict",), ("--exit-zero",)):
        result = project.run("src", "--entry", "src/a.py:decode_stp", *flags)
        assert result.rc == 2 and result.out == "", flags
        assert result.err.strip().splitlines() == [
            "graphlint: error: --entry src/a.py:decode_stp names no function in src/a.py; did you mean decode_step?"]
    assert "did you mean Engine.step?" in project.run("src", "--entry", "src/a.py:Engine.stpe").err
    unknown = project.run("src", "--entry", "src/a.py:zzz")
    assert unknown.rc == 2 and "(it defines: Engine.step, decode_step)" in unknown.err
    project.config('entry = ["src/a.py:decode_stp"]\n')
    configured = project.run("src")
    assert configured.rc == 2 and "pyproject.toml entry src/a.py:decode_stp names no function" in configured.err
    assert "did you mean decode_step?" in configured.err


def test_an_entry_in_a_file_that_is_not_checked_is_a_config_error(project):
    project.write("src/a.py", "def decode_step(x):\n    return x\n")
    project.write("other/b.py", "def step(x):\n    return x\n")
    result = project.run("src", "--entry", "other/b.py:step")
    assert result.rc == 2 and "other/b.py is not among the analysed files" in result.err


def test_an_entry_in_a_file_that_does_not_parse_reports_the_parse_error(project):
    project.write("src/a.py", "def decode_step(x:\n")
    result = project.run("src", "--entry", "src/a.py:decode_step")
    assert result.rc == 1 and "GL000" in result.out


@pytest.mark.parametrize(
    "code, name, message",
    [
        ("GL151", "host-sync", "name 'host-sync' is a selector already"),
        ("GL651", "team-x", "there is no family GL6xx"),
    ],
)
def test_user_pack_rule_that_cannot_be_selected_unambiguously_is_a_config_error(project, code, name, message):
    project.config('rule-packs = ["packs/team.yaml"]\n')
    project.write("packs/team.yaml", f"""\
        rules:
          - {{code: {code}, name: {name}, category: host-sync, severity: error, message: m, why: w, fix: f}}
    """)
    project.write("src/a.py", "def decode_step(x):\n    return x\n")
    result = project.run("src")
    assert result.rc == 2 and message in result.err, result.err


@pytest.mark.parametrize("selector, says", [
    ("host-sync-itme", "did you mean host-sync-item?"),
    ("HOST-SYNC-ITEM", "did you mean host-sync-item?"),
    ("GL1O1", "did you mean GL101?"),  # a letter O for a zero
    ("hostsync", "did you mean host-sync?"),
    ("GL9", "no rule code starts with GL9"),
    ("GL888", "no such rule"),  # nothing close: GL999 now suggests GL299
    ("zzz", "expected ALL, a code like GL101"),
])
def test_a_misspelt_selector_gets_a_suggestion_on_the_command_line_and_in_config(project, selector, says):
    project.write("src/a.py", "def decode_step(x):\n    return x\n")
    for flag in ("--select", "--ignore"):
        result = project.run("src", flag, selector)
        assert result.rc == 2 and f"unknown rule selector {selector!r}" in result.err and says in result.err
    project.config(f'ignore = ["{selector}"]\n')
    configured = project.run("src")
    assert configured.rc == 2 and "pyproject.toml" in configured.err and says in configured.err
