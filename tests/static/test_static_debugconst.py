"""``__debug__`` is Python's constant, true unless the interpreter runs with ``-O``: ``if __debug__:``
is no debug switch (its body runs every step of a default run) and ``if not __debug__:`` never runs
(:func:`graphlint.static.guards.guarded_branch`)."""

from __future__ import annotations

import textwrap

import pytest

from static_helpers import analyze

STEP = """
import torch
from torch import nn

DEBUG = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, tok):
        x = self.proj(torch.nn.functional.one_hot(tok, 8).float())
        if {test}:
            print("norm", x.norm().item())
        return x


def generate(model, tok, steps):
    for _ in range(steps):
        tok = model(tok).argmax(-1)
    return tok


def main():
    return generate(Model(), torch.zeros(2, dtype=torch.long), 8)
"""


@pytest.mark.parametrize(("test", "reported"), [("__debug__", True), ("__debug__ and x.dim() > 1", True),
                                                ("not __debug__", False), ("DEBUG", False)])
def test_the_debug_constant_is_on(test, reported):
    found = [f.rule for f in analyze({"m.py": textwrap.dedent(STEP.format(test=test)).lstrip()})]
    assert ("GL101" in found) == reported, found


def test_the_guard_branch():
    import libcst as cst

    from graphlint.static.guards import guarded_branch
    from graphlint.static.options import DEFAULT_GUARDS

    def branch(test: str):
        return guarded_branch(cst.parse_expression(test), {}, DEFAULT_GUARDS)
    assert (branch("__debug__"), branch("not __debug__"), branch("__debug__ or flag")) == ("orelse", "body", "orelse")
