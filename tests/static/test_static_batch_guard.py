"""A test that the batch is non-empty is true in every capture (:mod:`graphlint.static.shapetests`):
code under it is captured code at full severity; its ``else`` and other shape tests stay capped."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "batchguard"


def severities(files: dict[str, str]) -> dict[str, str]:
    """Each marked line's GL101 severity, by its marker."""
    out = {}
    for f in analyze(files):
        if f.rule != "GL101":
            continue
        text = files[f.path].splitlines()[f.line - 1]
        out[text.rsplit("# ", 1)[-1] if "# " in text else str(f.line)] = f.severity
    return out


def test_the_fixture_guard_does_not_cap_but_its_else_and_a_width_test_do():
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    assert severities(files) == {"GUARDED": "error", "EMPTY": "warning", "WIDE": "warning"}


SRC = """
import torch

def scale(x):
    return x.sum().item()  # READ

class Runner:
    def step(self, x):
        if {test}:
            scale(x)
        return x * 2

    def capture(self, x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.step(x)
        self.g = g
"""


@pytest.mark.parametrize("test", ["x.shape[0] != 0", "x.shape[0] > 0", "x.size(0) >= 1", "0 < x.numel()",
                                  "x.shape[0]", "not x.shape[0] == 0", "x.nelement() != 0"])
def test_a_non_empty_batch_test_is_true_in_every_capture(test):
    assert severities({"m.py": textwrap.dedent(SRC.format(test=test))}) == {"READ": "error"}


@pytest.mark.parametrize("test", ["x.shape[0] == 0", "x.shape[0] > 1", "x.shape[0] - 1 > 0", "x.numel() < 1",
                                  "not x.shape[0]", "x.size(0) <= 0", "x.shape[1] > 64"])
def test_an_empty_batch_or_any_other_shape_test_stays_a_warning(test):
    assert severities({"m.py": textwrap.dedent(SRC.format(test=test))}) == {"READ": "warning"}
