"""A value reaching a parameter through a local of the caller: a local bound to a call's result is
"not None" when the call builds a class, is a tensor op, or every function the call graph gives it
returns some object on every path (``pos = self.make_positions(x)`` then ``model(x,
offsets=pos)``: the model's ``if offsets is None:`` is not the decode path)."""

from __future__ import annotations

import textwrap

from static_helpers import analyze

ENGINE = """
import torch

class Engine:
    def __init__(self, model):
        self.model = model

{helper}

    def run(self, x, n, **kwargs):
        for _ in range(n):
            pos = {value}
            out = self.model(x, offsets=pos)
            x = out.argmax(-1)
        return x

def main():
    from n import M
    Engine(M()).run(torch.zeros(3, dtype=torch.long), 4)
"""

MODEL = """
import torch

class M(torch.nn.Module):
    def forward(self, x, offsets=None):
        if offsets is None:
            x.sum().item()
            return x
        return x + offsets
"""


def sync_reported(value: str, helper: str = "") -> bool:
    files = {"m.py": ENGINE.format(value=value, helper=textwrap.indent(textwrap.dedent(helper), "    ")),
             "n.py": MODEL}
    return any(f.path == "n.py" and f.rule == "GL101" for f in analyze(files))


def test_a_helper_that_always_returns_an_object_decides_is_none():
    helper = """
    def make_positions(self, x):
        start = x.shape[-1]
        return torch.arange(start, start + 1, device=x.device) + 0
    """
    assert not sync_reported("self.make_positions(x)", helper)


def test_a_helper_that_may_return_none_or_falls_off_its_end_decides_nothing():
    may_none = """
    def make_positions(self, x):
        if x.dim() > 1:
            return None
        return x + 1
    """
    falls_off = """
    def make_positions(self, x):
        if x.dim() > 1:
            return x + 1
    """
    assert sync_reported("self.make_positions(x)", may_none)
    assert sync_reported("self.make_positions(x)", falls_off)


def test_a_dict_lookup_may_be_none():
    assert sync_reported('kwargs.get("offsets")')


def test_a_constructor_and_a_tensor_op_are_objects():
    assert not sync_reported("torch.arange(x.shape[-1], device=x.device)")
    assert not sync_reported("Positions(x)", "class_ = None")


def test_a_rebinding_replaces_the_value_but_inside_try_it_adds():
    helper = """
    def make_positions(self, x):
        return x + 1
    """
    assert not sync_reported("None\n            pos = self.make_positions(x)", helper)
    in_try = "None\n            try:\n                pos = self.make_positions(x)\n            except ValueError:\n                pass"
    assert sync_reported(in_try, helper)


def test_the_prompt_pass_before_the_loop_gives_no_values():
    """Only the calls inside a per-token loop run per token: the prompt's pass before it (no
    offsets) does not make ``if offsets is None:`` the decode path."""
    engine = """
import torch

def generate(model, x, n):
    out = model(x)
    for _ in range(n):
        out = model(x, offsets=x + 1)
        x = out.argmax(-1)
    return x

def main():
    from n import M
    generate(M(), torch.zeros(3, dtype=torch.long), 4)
"""
    found = [f for f in analyze({"m.py": engine, "n.py": MODEL}) if f.path == "n.py"]
    assert found == []
    inside = engine.replace("    out = model(x)\n    for _ in range(n):\n", "    for _ in range(n):\n        out = model(x)\n")
    assert [f.rule for f in analyze({"m.py": inside, "n.py": MODEL}) if f.path == "n.py"] == ["GL101"]
