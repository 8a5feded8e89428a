"""Helpers for CLI tests: a throwaway project directory and an in-process ``graphlint`` call.

Tests run ``graphlint.cli.main`` in-process (a subprocess costs ~0.5 s each); the few that
must see a fresh interpreter (no torch import) use one subprocess.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphlint.cli import main

#: A decode step with one host sync (``.item()`` on a tensor argument) on line 4, and the per-token
#: loop that runs it: evidence of the decode path (a name alone is only a guess, whose findings are
#: at most warnings).
HOT_ITEM = """\
import torch

def decode_step(x: torch.Tensor):
    return x.sum().item()


def generate(x: torch.Tensor, steps: int):
    for _ in range(steps):
        x = decode_step(x)
    return x
"""


_cache: dict[str, str] = {}


@dataclass
class Result:
    rc: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


class Project:
    """A temporary working directory with helpers to write files and run graphlint in it."""

    hot_item = HOT_ITEM

    def __init__(self, root: Path, capsys):
        self.root = root
        self._capsys = capsys

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text))
        return path

    def config(self, body: str) -> Path:
        return self.write("pyproject.toml", "[tool.graphlint]\n" + textwrap.dedent(body))

    def run(self, *args: str) -> Result:
        self._capsys.readouterr()
        try:
            rc = main(["check", "--no-progress", "--no-cache", *args] if args[:1] != ("--raw",) else list(args[1:]))
        except SystemExit as exc:  # argparse usage errors and --version
            rc = exc.code if isinstance(exc.code, int) else 2
        captured = self._capsys.readouterr()
        return Result(rc, captured.out, captured.err)

    def item_code(self) -> str:
        """The code the analyzer gives ``.item()`` in a decode step (looked up, not hard-coded)."""
        if "item" not in _cache:
            self.write("_probe/probe.py", HOT_ITEM)
            found = self.findings("_probe")
            assert len(found) == 1, found
            _cache["item"] = found[0]["rule"]
            (self.root / "_probe/probe.py").unlink()
            (self.root / "_probe").rmdir()
        return _cache["item"]

    def findings(self, *args: str) -> list[dict]:
        result = self.run("--format", "json", "--exit-zero", *args)
        assert result.rc == 0, result.err
        return result.json()["findings"]

    def codes(self, *args: str) -> list[str]:
        return [f["rule"] for f in self.findings(*args)]


@pytest.fixture
def project(tmp_path, monkeypatch, capsys) -> Project:
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)  # a developer's NO_COLOR=1 must not change the results
    (root / "pyproject.toml").write_text("[project]\nname = 'scratch'\n")  # stop the config search here
    return Project(root, capsys)

