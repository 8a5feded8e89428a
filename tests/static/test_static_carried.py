"""Values a per-token loop carries into its later iterations (graphlint/static/iterations.py
``carried_literals`` and ``later_args``).

A generate loop that hands the prompt's images to the model and then rebinds them to ``None`` at
the end of its body passes ``None`` from the second iteration on: the model's ``if images is not
None:`` branch runs on the first iteration only -- once per decode, like ``if i == 0:`` -- and what
only it runs is not reported. A rebinding that may not run (under a branch, skipped by
``continue``), a loop that is not the per-token loop, or a value that is not a literal keeps the
branch per token.
"""

from __future__ import annotations

import textwrap

from static_helpers import analyze

MODEL = """
import torch
from torch import nn


class Vision(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, pixels):
        return self.proj(pixels)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(8, 8)
        self.vision = Vision()
        self.head = nn.Linear(8, 8)

    def forward(self, tok, images=None, present=None):
        h = self.embed(tok)
        if images is not None:
            h = self.merge(h, self.vision(images), present)
        return self.head(h)

    def merge(self, h, feats, present):
        rows = torch.nonzero(present.flatten()).squeeze()
        return h + feats.index_select(0, rows).sum(0)
"""


def found(loop: str) -> set[tuple[str, int, str]]:
    findings = analyze({"model.py": MODEL, "run.py": textwrap.dedent(loop)})
    return {(f.path, f.line, f.rule) for f in findings if f.severity in ("error", "warning")}


MERGE = ("model.py", 29, "GL302")  # the nonzero in ``merge``


def test_images_rebound_to_none_at_the_end_of_the_body_reach_the_model_once():
    assert MERGE not in found("""
    from model import Model

    def generate(model: Model, tok, images, present, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok, images=images, present=present).argmax(-1)
            out.append(tok)
            images = None
            present = None
        return out
    """)


def test_without_the_rebinding_the_images_are_passed_every_token():
    assert MERGE in found("""
    from model import Model

    def generate(model: Model, tok, images, present, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok, images=images, present=present).argmax(-1)
            out.append(tok)
        return out
    """)


def test_a_rebinding_under_a_branch_may_not_run():
    assert MERGE in found("""
    from model import Model

    def generate(model: Model, tok, images, present, steps: int, keep: bool):
        out = []
        for _ in range(steps):
            tok = model(tok, images=images, present=present).argmax(-1)
            out.append(tok)
            if not keep:
                images = None
        return out
    """)


def test_a_continue_can_skip_the_rebinding():
    assert MERGE in found("""
    from model import Model

    def generate(model: Model, tok, images, present, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok, images=images, present=present).argmax(-1)
            if tok is None:
                continue
            out.append(tok)
            images = None
        return out
    """)


def test_a_rebinding_to_a_computed_value_is_not_a_literal():
    assert MERGE in found("""
    from model import Model

    def generate(model: Model, tok, images, present, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok, images=images, present=present).argmax(-1)
            out.append(tok)
            images = images * 0.5
        return out
    """)


def test_a_branch_in_the_loop_on_a_carried_name_runs_on_the_first_iteration_only():
    result = found("""
    import torch
    from model import Model

    def generate(model: Model, tok, images, steps: int):
        out = []
        for _ in range(steps):
            if images is not None:
                count = torch.nonzero(images).shape[0]
                out.append(count)
            tok = model(tok).argmax(-1)
            out.append(tok)
            images = None
        return out
    """)
    assert ("run.py", 9, "GL302") not in result


def test_the_same_branch_without_the_rebinding_is_per_token():
    result = found("""
    import torch
    from model import Model

    def generate(model: Model, tok, images, steps: int):
        out = []
        for _ in range(steps):
            if images is not None:
                count = torch.nonzero(images).shape[0]
                out.append(count)
            tok = model(tok).argmax(-1)
            out.append(tok)
        return out
    """)
    assert ("run.py", 9, "GL302") in result


def test_a_loop_inside_the_step_runs_its_first_iteration_every_token():
    """``mask = None`` after the first layer: the first layer gets the mask on every token."""
    result = analyze({"model.py": textwrap.dedent("""
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, h, mask=None):
            if mask is not None:
                h = h[mask.bool()]
            return self.proj(h)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(8, 8)
            self.blocks = nn.ModuleList([Block() for _ in range(2)])

        def forward(self, tok, mask):
            h = self.embed(tok)
            for block in self.blocks:
                h = block(h, mask)
                mask = None
            return h
    """), "run.py": textwrap.dedent("""
    from model import Model

    def generate(model: Model, tok, mask, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok, mask).argmax(-1)
            out.append(tok)
        return out
    """)})
    assert ("model.py", 13, "GL303") in {(f.path, f.line, f.rule) for f in result}
