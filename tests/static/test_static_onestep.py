"""A per-token loop's call whose argument tests the loop's counter (graphlint/static/iterations.py
``past_first``, used by ``ValueFacts.later_args``).

``model(tok, images=images if step == 0 else None)`` in ``for step in range(n):`` hands the model
its images on the first step only: from the second iteration on the counter never equals its
first value again, so the argument is ``None`` and the model's ``if images is not None:`` branch
-- the vision tower, the image-feature merge -- runs once per decode, like ``if step == 0:`` in
the loop itself. The same for ``!=``, a counter written on the right, ``enumerate``'s index and a
counter advanced by hand. A test of another value, a counter of a loop that is not the per-token
loop, or the other side of the test keeps the branch per token.
"""

from __future__ import annotations

import textwrap

from static_helpers import analyze

MODEL = """
import torch
from torch import nn


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, pixels):
        return self.proj(pixels)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(8, 8)
        self.tower = Tower()
        self.head = nn.Linear(8, 8)

    def forward(self, tok, images=None, where=None):
        h = self.embed(tok)
        if images is not None:
            h = self.splice(h, self.tower(images), where)
        return self.head(h)

    def splice(self, h, feats, where):
        rows = torch.nonzero(where.flatten()).squeeze()
        return h + feats.index_select(0, rows).sum(0)
"""

SPLICE = ("model.py", 29, "GL302")  # the nonzero in ``splice``


def found(loop: str) -> set[tuple[str, int, str]]:
    findings = analyze({"model.py": MODEL, "run.py": textwrap.dedent(loop)})
    return {(f.path, f.line, f.rule) for f in findings if f.severity in ("error", "warning")}


def test_images_passed_on_the_first_step_only_reach_the_model_once():
    assert SPLICE not in found("""
    from model import Decoder

    def generate(model: Decoder, tok, images, where, steps: int):
        out = []
        for step in range(steps):
            tok = model(tok, images=images if step == 0 else None, where=where).argmax(-1)
            out.append(tok)
        return out
    """)


def test_the_other_spellings_of_a_first_step_test():
    for arg in ("None if step != 0 else images", "images if 0 == step else None", "None if step else images"):
        assert SPLICE not in found(f"""
        from model import Decoder

        def generate(model: Decoder, tok, images, where, steps: int):
            out = []
            for step in range(steps):
                tok = model(tok, images={arg}, where=where).argmax(-1)
                out.append(tok)
            return out
        """), arg


def test_enumerate_and_a_counter_advanced_by_hand():
    assert SPLICE not in found("""
    from model import Decoder

    def generate(model: Decoder, tok, images, where, budget):
        out = []
        for i, _ in enumerate(budget):
            tok = model(tok, images=images if i == 0 else None, where=where).argmax(-1)
            out.append(tok)
        return out
    """)
    assert SPLICE not in found("""
    from model import Decoder

    def generate(model: Decoder, tok, images, where, steps: int):
        out = []
        n = 0
        while n < steps:
            tok = model(tok, images=images if n == 0 else None, where=where).argmax(-1)
            out.append(tok)
            n += 1
        return out
    """)


def test_images_passed_on_every_later_step_stay_per_token():
    assert SPLICE in found("""
    from model import Decoder

    def generate(model: Decoder, tok, images, where, steps: int):
        out = []
        for step in range(steps):
            tok = model(tok, images=None if step == 0 else images, where=where).argmax(-1)
            out.append(tok)
        return out
    """)


def test_a_test_of_another_value_or_number_stays_per_token():
    for arg in ("images if step == 3 else None", "images if steps == 0 else None", "images if step > 0 else None"):
        assert SPLICE in found(f"""
        from model import Decoder

        def generate(model: Decoder, tok, images, where, steps: int):
            out = []
            for step in range(steps):
                tok = model(tok, images={arg}, where=where).argmax(-1)
                out.append(tok)
            return out
        """), arg


def test_the_first_layer_of_every_step_is_no_first_step():
    """A loop inside the step (over layers) is no per-token loop: its first iteration runs every token."""
    result = analyze({"model.py": MODEL, "run.py": textwrap.dedent("""
    from model import Decoder

    def step_all(models: list[Decoder], tok, images, where):
        for i, model in enumerate(models):
            tok = model(tok, images=images if i == 0 else None, where=where)
        return tok

    def generate(models: list[Decoder], tok, images, where, steps: int):
        out = []
        for _ in range(steps):
            tok = step_all(models, tok, images, where).argmax(-1)
            out.append(tok)
        return out
    """)})
    assert SPLICE in {(f.path, f.line, f.rule) for f in result if f.severity in ("error", "warning")}


STEPPED = MODEL.replace("def forward(self, tok, images=None, where=None):",
                        "def forward(self, tok, images=None, where=None, step=None):").replace(
    "if images is not None:", "if images is not None and {test}:")


def stepped(test: str, call: str = "model(tok, images=images, where=where, step=step)", loop: str = "range(steps)"):
    run = textwrap.dedent(f"""
    from model import Decoder

    def generate(model: Decoder, tok, images, where, steps: int):
        out = []
        for step in {loop}:
            tok = {call}.argmax(-1)
            out.append(tok)
        return out
    """)
    findings = analyze({"model.py": STEPPED.format(test=test), "run.py": run})
    return {(f.path, f.line, f.rule) for f in findings if f.severity in ("error", "warning")}


def test_a_callee_handed_the_counter_tests_it_against_the_first_step():
    """``step == 0`` in the model, ``step`` the loop's counter: false from the loop's second step on."""
    assert SPLICE not in stepped("step == 0")
    assert SPLICE not in stepped("not step")
    assert SPLICE not in stepped("step is None")
    assert SPLICE not in stepped("step == 0", call="model(tok, images=images, where=where, step=step)",
                                 loop="range(0, steps)")


def test_a_callee_test_the_later_steps_can_take_stays_per_token():
    for test in ("step == 3", "step > 0", "step != 0", "step in (0, 1)", "step is not None"):
        assert SPLICE in stepped(test), test
    # a loop counting from 1: its later steps are not known to differ from 0 (nor is an offset counter)
    assert SPLICE in stepped("step == 0", loop="range(1, steps)")
    assert SPLICE in stepped("step == 0", call="model(tok, images=images, where=where, step=step - 1)")
