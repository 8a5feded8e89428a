"""Run the analyzer on in-memory sources: summarize every file, then link them together."""

from __future__ import annotations

import textwrap
from pathlib import Path
from functools import lru_cache

from graphlint.check import RunResult, run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from graphlint.finding import Finding
from graphlint.rules import Rule, load_rules
from graphlint.static.facts import FileSummary
from graphlint.static.link import link
from graphlint.static.options import DEFAULT_GUARDS, StaticOptions
from graphlint.static.summarize import summarize_file


@lru_cache(maxsize=1)
def builtin_rules() -> dict[str, Rule]:
    return load_rules()


def options(rules: dict[str, Rule] | None = None, **kw) -> StaticOptions:
    rules = rules or builtin_rules()
    kw.setdefault("enabled", frozenset(rules))
    kw.setdefault("guards", DEFAULT_GUARDS)
    return StaticOptions(**kw)


def summarize(files: dict[str, str | bytes], rules=None, **kw) -> list[FileSummary]:
    rules = rules or builtin_rules()
    opts = options(rules, **kw)
    out = []
    for path, src in files.items():
        data = src if isinstance(src, bytes) else textwrap.dedent(src).encode()
        out.append(summarize_file(path, data, rules, opts))
    return out


def analyze(files: dict[str, str | bytes], rules=None, **kw) -> list[Finding]:
    rules = rules or builtin_rules()
    summaries = summarize(files, rules, **kw)
    for s in summaries:
        assert not s.errors, (s.path, s.errors)
    return link(summaries, rules, options(rules, **kw))


def codes(findings: list[Finding]) -> list[str]:
    return [f.rule for f in findings]


#: The per-token loop the reachability tests drive a model with: it makes ``model``'s forward hot.
#: ``{args}`` is what the call passes after ``x`` (``, mask=x``); :func:`decode_loop` fills it.
DECODE_LOOP = """
def loop(model, x, n):
    for _ in range(n):
        out = model(x{args})
        x = out.argmax(-1)
    return x
"""


def decode_loop(args: str = "") -> str:
    return DECODE_LOOP.format(args=args)


#: a one-layer model for the eager loops whose read-backs the step-result tests judge
TOY_MODEL = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, tok):
        return self.proj(torch.nn.functional.one_hot(tok, 8).float())
"""


def loop_severities(loop: str, model: str = TOY_MODEL) -> dict[tuple[int, str], str]:
    """(line, rule) -> severity of the findings in ``run.py``, an eager loop over ``model.py``."""
    findings = analyze({"model.py": model, "run.py": textwrap.dedent(loop)})
    return {(f.line, f.rule): f.severity for f in findings if f.path == "run.py"}


def check_fixture(monkeypatch, tmp_path, fixtures: Path, name: str) -> RunResult:
    """``graphlint check`` of one fixture file or folder of ``fixtures/static/<flow>/``, from the
    repository root with the default configuration and no cache, as a user would run it."""
    root = fixtures.parents[2]
    monkeypatch.chdir(root)
    path = (fixtures / name).relative_to(root).as_posix()
    return run(resolve(load_config(cwd=tmp_path), paths=[path], jobs=1, use_cache=False))


def assert_marked(result: RunResult, fixtures: Path, name: str) -> None:
    """The fixture's findings are exactly its ``# ^`` markers, each at the severity a ``CODE/severity``
    marker names: the check most fixture tests of one flow make."""
    from test_static_fixture import assert_marked as assert_files_marked, load

    root = fixtures.parents[2]
    target = fixtures / name
    files = load(target) if target.is_dir() else {target.relative_to(root).as_posix(): target.read_bytes()}
    assert_files_marked(result.findings, files)


def host_steps(files: dict[str, str | bytes], prefix: str) -> set[str]:
    """The functions linking takes for the host step, as ``"file.py:Qual"`` with ``prefix`` cut off
    each path, and ``" (loop)"`` where only a loop's body is the step."""
    rules = builtin_rules()
    entries: list = []
    link(summarize(files), rules, options(rules), entries_out=entries)
    return {f"{e.function[0].removeprefix(prefix)}:{e.function[1]}" + (" (loop)" if e.loops else "")
            for e in entries if e.context == "host"}
