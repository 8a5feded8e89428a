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


# -- a local dict, key by key (:mod:`graphlint.static.dictkeys`) --------------------------------
def test_a_dict_built_from_kwargs_hands_on_the_callers_keywords():
    built = 'inputs = {"mode": "decode", **kwargs}\nreturn self.inner(x, **inputs)'
    assert run("", built) == []
    assert run(", mask=x + 1", built) == [SYNC]
    assert run("", 'inputs = dict(mode="decode", **kwargs)\nreturn self.inner(x, **inputs)') == []


def test_a_key_the_function_sets_has_that_value_on_every_path_to_the_splat():
    assert run("", 'inputs = {"mask": x + 1}\ninputs["mask"] = None\nreturn self.inner(x, **inputs)') == []
    # an unknown rest (an entry's ``**model_kwargs``): unknown keys stay unknown, a key it sets does not
    assert run("", "inputs = {**self.extra}\nreturn self.inner(x, **inputs)") == [SYNC]
    assert run("", 'inputs = {**self.extra}\ninputs["mask"] = None\nreturn self.inner(x, **inputs)') == []
    # set on one path only: the display's value reaches the splat on the other
    one_path = 'inputs = {"mask": x + 1}\nif x.shape[0] > 2:\n    inputs["mask"] = None\nreturn self.inner(x, **inputs)'
    assert run("", one_path) == [SYNC]


def test_deleted_and_updated_keys():
    assert run("", 'inputs = dict(mask=x + 1)\ndel inputs["mask"]\nreturn self.inner(x, **inputs)') == []
    assert run("", 'inputs = {}\ninputs.update({"mask": None})\nreturn self.inner(x, **inputs)') == []
    maybe = 'inputs = {}\ninputs.update({"mask": x + 1} if x.shape[0] else {})\nreturn self.inner(x, **inputs)'
    assert run("", maybe) == [SYNC]
    assert run("", 'inputs = {"mask": None, **self.extra}\nreturn self.inner(x, **inputs)') == [SYNC]  # the rest wins


def test_a_dict_changed_out_of_sight_or_by_a_later_iteration_is_unknown():
    assert run("", 'inputs = {"mask": None}\nself.tweak(inputs)\nreturn self.inner(x, **inputs)') == [SYNC]
    assert run("", 'inputs = {"mask": None}\nother = inputs\nreturn self.inner(x, **other)') == [SYNC]
    assert run("", 'inputs = {"mask": None}\ninputs[self.key] = x\nreturn self.inner(x, **inputs)') == [SYNC]
    assert run("", 'inputs = {"mask": None}\ninputs.pop("mode")\nreturn self.inner(x, **inputs)') == [SYNC]
    looped = 'inputs = {"mask": None}\nfor _ in range(2):\n    out = self.inner(x, **inputs)\n' \
             '    inputs["mask"] = x + 1\nreturn out'
    assert run("", looped) == [SYNC]
    rebuilt = 'for _ in range(2):\n    inputs = {"mask": None}\n    out = self.inner(x, **inputs)\n' \
              '    inputs["mask"] = x + 1\nreturn out'
    assert run("", rebuilt) == []
