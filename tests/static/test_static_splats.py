"""Arguments handed on through ``**kwargs`` / ``*args`` and dict literals splatted
(:mod:`graphlint.static.splats`): a parameter the caller leaves out of its keywords takes its
default, one it passes keeps its value, through any number of hand-on layers. Counter-cases: a
mask that is passed, a ``kwargs`` changed in place, a splat of something unknown."""

from __future__ import annotations

import textwrap

from static_helpers import analyze

LOOP = """
import torch
from n import Wrapper


def loop(model, x, n):
    for _ in range(n):
        out = model(x{args})
        x = out.argmax(-1)
    return x


def main():
    loop(Wrapper(), torch.zeros(3), 4)
"""

MODEL = """
import torch


class Inner(torch.nn.Module):
    def forward(self, x, mask=None, mode="decode"):
        if mask is not None:
            x.sum().item()
        return x


class Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x, *args, **kwargs):
{hand_on}

    def hop(self, x, **kw):
        return self.inner(x, **kw)
"""

SYNC = 8  # the ``.item()`` under ``if mask is not None:``


def run(args: str, hand_on: str = "return self.inner(x, **kwargs)") -> list[int]:
    model = MODEL.format(hand_on=textwrap.indent(textwrap.dedent(hand_on), " " * 8))
    findings = analyze({"m.py": LOOP.format(args=args), "n.py": model})
    return sorted(f.line for f in findings if f.path == "n.py")


def test_a_keyword_left_out_of_kwargs_takes_the_default():
    assert run("") == []
    assert run(', mode="decode"') == []


def test_a_keyword_passed_through_kwargs_keeps_its_value():
    assert run(", mask=x + 1") == [SYNC]
    assert run(", mask=None") == []
    assert run(", mask=pick(x)") == [SYNC]


def test_through_several_layers():
    two = "return self.hop(x, **kwargs)"
    assert run("", two) == []
    assert run(", mask=x + 1", two) == [SYNC]


def test_args_handed_on_by_position():
    assert run("", "return self.inner(x, *args)") == []
    assert run(", x + 1", "return self.inner(x, *args)") == [SYNC]
    assert run(", None", "return self.inner(x, *args)") == []


def test_a_dict_literal_splatted():
    assert run("", 'return self.inner(x, **{"mode": "decode"})') == []
    assert run("", 'return self.inner(x, **{"mask": x + 1})') == [SYNC]
    assert run("", "return self.inner(x, **dict(mask=None))") == []
    assert run("", "return self.inner(x, **dict(mask=x * 2))") == [SYNC]


def test_kwargs_changed_in_place_or_unknown_decide_nothing():
    assert run("", 'kwargs["mask"] = x + 1\nreturn self.inner(x, **kwargs)') == [SYNC]
    assert run("", 'kwargs.update(self.extra)\nreturn self.inner(x, **kwargs)') == [SYNC]
    assert run("", "return self.inner(x, **self.extra)") == [SYNC]
    assert run("", "kw = pick(x)\nreturn self.inner(x, **kw)") == [SYNC]
