"""The static check (graphlint.check): robustness, cache, pre-commit partial runs, skip-file, internal errors."""

from __future__ import annotations

import os
import pickle
from pathlib import Path


from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config


def test_broken_files_are_reported_and_the_run_continues(project):
    code = project.item_code()
    project.write("src/syntax.py", "def decode_step(x:\n    return x\n")
    project.write("src/latin1.py", b"name = '\xe9t\xe9'\n")
    project.write("src/cookie.py", b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n")
    project.write("src/empty.py", "")
    project.write("src/nulls.py", b"x = 1\x00\n")
    project.write("src/model.py", project.hot_item)
    os.symlink("missing.py", project.root / "src/dangling.py")
    os.symlink("selfloop.py", project.root / "src/selfloop.py")
    os.symlink(".", project.root / "src/loop")  # directory symlink loop
    os.mkfifo(project.root / "src/fifo.py")  # must not block the run
    result = project.run("src", "--format", "json")
    found = {(f["path"], f["rule"]) for f in result.json()["findings"]}
    assert found == {
        ("src/syntax.py", "GL000"), ("src/latin1.py", "GL000"), ("src/nulls.py", "GL000"),
        ("src/dangling.py", "GL000"), ("src/selfloop.py", "GL000"), ("src/fifo.py", "GL000"),
        ("src/model.py", code),
    }
    assert result.rc == 1 and "symlink loop" in result.err
    assert result.json()["summary"]["files"] == 9


def test_unreadable_file_is_gl000(project, monkeypatch):
    project.write("src/secret.py", "x = 1\n")
    project.write("src/ok.py", "y = 2\n")
    real_read = Path.read_bytes

    def deny(path):
        if path.name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(Path, "read_bytes", deny)
    found = project.findings("src")
    assert [(f["path"], f["rule"], f["message"]) for f in found] == [
        ("src/secret.py", "GL000", "cannot read file: Permission denied")
    ]


def test_internal_error_in_one_file_does_not_stop_the_rest(project, monkeypatch):
    import graphlint.static.summarize as summarize

    code = project.item_code()
    real = summarize.summarize_file

    def flaky(path, source, rules, options):
        if path.endswith("boom.py"):
            raise RuntimeError("matcher exploded")
        return real(path, source, rules, options)

    monkeypatch.setattr(summarize, "summarize_file", flaky)
    project.write("src/boom.py", "x = 1\n")
    project.write("src/model.py", project.hot_item)
    result = project.run("src", "--jobs", "1", "--format", "json")
    assert result.rc == 2  # incomplete result: graphlint's failure, not a finding to fix
    found = result.json()["findings"]
    assert [(f["path"], f["rule"]) for f in found] == [("src/boom.py", "GL002"), ("src/model.py", code)]
    assert "RuntimeError: matcher exploded" in found[0]["message"]
    assert project.run("src", "--jobs", "1", "--exit-zero").rc == 2
    assert project.run("src", "--jobs", "1", "--ignore", "GL002").rc == 1


def _link_crash_project(project):
    code = project.item_code()
    project.write("src/model.py", project.hot_item)
    project.write("src/bad.py", "def decode_step(x:\n")  # GL000: a per-file finding
    project.write("src/quiet.py", "import torch\n\ndef helper(x: torch.Tensor):\n"
                  "    return x.item()  # graphlint: ignore[GL101] -- read once\n"
                  "y = 1  # graphlint: ignore[NOPE]\n")  # GL003: a per-file finding
    return code


def test_link_crash_is_one_gl002_beside_the_per_file_findings(project, monkeypatch):
    """A crash of the link (the RecursionError all of torch once hit) loses nothing per file: one
    GL002 names the stage and the exception, and fails the check like an error (exit 1, not 2)."""
    import graphlint.static.link as link

    code = _link_crash_project(project)
    healthy = project.findings("src")
    assert ("src/model.py", code) in {(f["path"], f["rule"]) for f in healthy}

    def deep(*args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(link, "Discovery", deep)  # the stage after the points-to call graph
    result = project.run("src", "--format", "json")
    assert result.rc == 1, result.err
    found = result.json()["findings"]
    assert [(f["path"], f["rule"], f["severity"]) for f in found] == [
        ("src", "GL002", "error"), ("src/bad.py", "GL000", "error"), ("src/quiet.py", "GL003", "warning")]
    message = found[0]["message"]  # no GL001: with no hot findings, no suppression can be called unused
    assert message.startswith("internal error in the whole-program link, stage decode entries"), message
    assert "RecursionError: maximum recursion depth exceeded" in message and "over 3 files" in message
    assert {f["rule"] for f in healthy} - {"GL002"} >= {"GL000", "GL003", code}
    text = project.run("src")
    assert text.rc == 1 and "GL002 [internal-error]" in text.out
    sarif = project.run("src", "--format", "sarif").json()["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in sarif][:1] == [("GL002", "error")]
    assert "stage decode entries" in sarif[0]["message"]["text"]
    assert project.run("src", "--exit-zero").rc == 0
    ignored = project.run("src", "--ignore", "GL002", "--ignore", "GL000")
    assert ignored.rc == 0 and "GL003" in ignored.out and "GL002" not in ignored.out  # a warning: nothing fails
    assert "whole-program link" in ignored.err  # never silent, even with GL002 ignored
    assert project.run("src", "--ignore", "GL002").rc == 1  # the GL000 still fails


def test_link_crash_outside_its_stages_and_entries_exits_2(project, monkeypatch):
    import graphlint.static.link as link

    project.write("src/model.py", "x = 1\n")
    monkeypatch.setattr(link, "link", lambda *a: 1 / 0)
    result = project.run("src", "--format", "json")
    assert result.rc == 1
    (only,) = result.json()["findings"]
    assert only["rule"] == "GL002" and "whole-program link, over 1 files: ZeroDivisionError" in only["message"]
    checked = project.run("src/model.py", "--format", "json").json()["findings"]
    assert [(f["path"], f["rule"]) for f in checked] == [("src/model.py", "GL002")]  # where it was asked
    entries = project.run("--raw", "entries", "--no-cache", "src")
    assert entries.rc == 2 and "ZeroDivisionError" in entries.err  # nothing to list: no result at all


def test_skip_file_takes_the_file_out_of_the_analysis(project):
    code = project.item_code()
    project.write("pkg/__init__.py", "")
    project.write("pkg/helpers.py", "import torch\n\ndef helper(x: torch.Tensor):\n    return x.item()\n")
    model = """\
        import torch
        from .helpers import helper

        def decode_step(x: torch.Tensor):
            return helper(x) + x.item()
    """
    project.write("pkg/model.py", model)
    assert [(f["path"], f["rule"]) for f in project.findings("pkg")] == [("pkg/helpers.py", code), ("pkg/model.py", code)]
    project.write("pkg/model.py", "# graphlint: skip-file -- the eager reference, never captured\n" + model)
    assert project.findings("pkg") == []  # nothing in it, and its callees are no longer hot


def _settings(paths=("pkg",), **kw):
    return resolve(load_config(), paths=list(paths), jobs=1, **kw)


def test_cache_hits_and_dependency_invalidation(project):
    code = project.item_code()
    project.write("pkg/__init__.py", "")
    project.write("pkg/helpers.py", "import torch\n\ndef helper(x: torch.Tensor):\n    return x.item()\n")
    project.write("pkg/model.py", "import torch\n\ndef decode_step(x: torch.Tensor):\n    return x + 1\n")
    cold = run(_settings())
    assert cold.cache_hits == 0 and cold.findings == []
    assert (project.root / ".graphlint_cache/CACHEDIR.TAG").is_file()
    warm = run(_settings())
    assert warm.cache_hits == 3 and warm.findings == []
    # the caller changes; the callee's cached summary is reused but is now hot
    project.write("pkg/model.py", "import torch\nfrom .helpers import helper\n\n"
                  "def decode_step(x: torch.Tensor):\n    return helper(x)\n")
    changed = run(_settings())
    assert changed.cache_hits == 2
    assert [(f.path, f.rule, f.chain[-1].split(":")[-1]) for f in changed.findings] == [("pkg/helpers.py", code, "helper")]
    assert run(_settings(use_cache=False)).cache_hits == 0


def test_settings_that_shape_summaries_invalidate_the_cache(project):
    project.write("pkg/model.py", "def run_once(x):\n    if x:\n        return 1\n    return 0\n")
    for hot_names, guards in [(None, None), (["run_*"], None), (["run_*"], ["x"]), (None, None)]:
        lines = [f'hot-names = {hot_names!r}' if hot_names else "", f"guards = {guards!r}" if guards else ""]
        project.config("\n".join(lines).replace("'", '"') + "\n")
        cached = [f.sort_key() for f in run(_settings()).findings]
        fresh = [f.sort_key() for f in run(_settings(use_cache=False)).findings]
        assert cached == fresh, (hot_names, guards)


def test_corrupt_cache_entry_is_rewritten(project):
    project.write("pkg/model.py", project.hot_item)
    expected = run(_settings()).findings
    entries = [p for p in (project.root / ".graphlint_cache" / "summaries").rglob("*") if p.is_file()]
    assert len(entries) == 1
    entries[0].write_bytes(b"\x80\x04garbage")
    again = run(_settings())
    assert again.cache_hits == 0 and again.findings == expected
    with entries[0].open("rb") as handle:
        assert pickle.load(handle)[0] == "pkg/model.py"  # rewritten
    assert run(_settings()).cache_hits == 1


def test_precommit_files_use_configured_paths_for_the_call_graph(project):
    code = project.item_code()
    project.config('paths = ["pkg"]\nentry = ["pkg/model.py:decode_step"]\n')
    project.write("pkg/__init__.py", "")
    project.write("pkg/helpers.py", "import torch\n\ndef helper(x: torch.Tensor):\n    return x.item()\n")
    project.write("pkg/model.py", "import torch\nfrom .helpers import helper\n\n"
                  "def decode_step(x: torch.Tensor):\n    return helper(x) + x.item()\n")
    both = [(f["path"], f["line"]) for f in project.findings()]
    assert both == [("pkg/helpers.py", 4), ("pkg/model.py", 5)]
    # pre-commit passes only the helper: it is still hot through the unchanged caller
    assert [(f["path"], f["rule"]) for f in project.findings("pkg/helpers.py")] == [("pkg/helpers.py", code)]
    assert [f["path"] for f in project.findings("pkg/model.py")] == ["pkg/model.py"]
    # naming the configured directory itself is the plain case: no "already visited" warning
    named = project.run("pkg")
    assert named.rc == 1 and "already visited" not in named.err


def test_cache_directory_and_no_cache_flag(project):
    project.write("src/model.py", project.hot_item)
    assert project.run("src").rc == 1 and not (project.root / ".graphlint_cache").exists()  # --no-cache
    cached = project.run("--raw", "check", "--no-progress", "--format", "json", "src")
    again = project.run("--raw", "check", "--no-progress", "--format", "json", "src")
    assert cached.rc == again.rc == 1 and cached.out == again.out
    assert (project.root / ".graphlint_cache/.gitignore").read_text().strip().endswith("*")


def test_exclude_applies_to_explicit_files(project):
    project.config('exclude = ["legacy"]\n')
    project.write("legacy/old.py", project.hot_item)
    assert project.findings("legacy/old.py") == []


def test_pre_commit_hook_definition():
    import yaml

    hooks = yaml.safe_load((Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "graphlint" and hook["entry"].startswith("graphlint check")
    assert hook["types"] == ["python"] and hook["language"] == "python" and hook["require_serial"] is True


def test_tensor_returning_functions_are_known_across_files_and_cached(project):
    """``from .ops import fused`` with ``ops.fused`` annotated ``-> Tensor``: its result is a
    tensor in the importing file too (a second summary of that file, cached under the names)."""
    project.write("pkg/__init__.py", "from .ops import fused as exported\n")
    project.write("pkg/ops.py", "import torch\n\ndef fused(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n\n"
                  "def plain(x):\n    return TABLE[x]\n")  # an element of who knows what
    project.write("pkg/engine.py", "import torch\nfrom .ops import fused, plain\nfrom pkg import exported\n"
                  "import pkg.ops as ops\n\n"
                  "def decode_step(x: torch.Tensor):\n"
                  "    y = fused(x)\n    if y:\n        pass\n"
                  "    z = exported(x)\n    if z:\n        pass\n"
                  "    w = plain(x)\n    if w:\n        pass\n"
                  "    v = ops.fused(x)\n    if v:\n        pass\n")
    cold = run(_settings())
    found = [(f.path, f.line, f.rule) for f in cold.findings]
    assert found == [("pkg/engine.py", n, "GL105") for n in (8, 11, 17)]  # not `plain`'s result
    warm = run(_settings())
    assert [(f.path, f.line, f.rule) for f in warm.findings] == found
    assert warm.cache_hits == 4  # three first summaries and engine.py's second (__init__.py only re-exports)
    project.write("pkg/ops.py", "import torch\n\ndef fused(x: torch.Tensor):\n    return x * 2\n\n"
                  "def plain(x):\n    return TABLE[x]\n")  # no longer annotated: what it returns says it (valueflow)
    assert [(f.line, f.rule) for f in run(_settings()).findings] == [(n, "GL105") for n in (8, 11, 17)]
    project.write("pkg/ops.py", "import torch\n\ndef fused(x):\n    return CACHE.get(x)\n\n"
                  "def plain(x):\n    return TABLE[x]\n")  # neither annotated nor known from its body
    assert [(f.line, f.rule) for f in run(_settings()).findings] == []


def test_a_crash_in_the_cross_file_pass_is_one_gl002_not_a_lost_run(project, monkeypatch):
    from graphlint.static import crossfile

    project.write("pkg/model.py", "import torch\n\ndef decode_step(x: torch.Tensor):\n    return x.item()\n")
    monkeypatch.setattr(crossfile, "imported_tensor_functions", lambda summaries, index=None: 1 / 0)
    result = run(_settings(use_cache=False))
    assert [(f.path, f.rule) for f in result.findings] == [("pkg", "GL002"), ("pkg/model.py", project.item_code())]
    message = result.findings[0].message  # the link ran: its findings are reported
    assert message.startswith("internal error in the cross-file pass, over 1 files: ZeroDivisionError"), message
    assert "each file's own facts" in message and not result.link_error
