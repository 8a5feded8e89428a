"""``self.step = torch.compile(self.step, **options)``: a rebinding whose CUDA-graph mode comes
through a local (a dict of options or a mode string chosen on one branch) makes ``step`` graph
code and the loop that calls it per token the host step, as a literal ``mode=`` does."""

from __future__ import annotations

import pytest

from test_static_entries import entries

GENERATOR = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)

class Generator:
    def __init__(self, model, compile: bool, device: str):
        self.model = model
        if compile:
            {options}
            self.step = torch.compile(self.step, fullgraph=True, {spread})

    def step(self, tok):
        return self.model(tok)

    def decode_n(self, tok, n: int):
        out = []
        for _ in range(n):
            tok = self.step(tok)
            out.append(tok)
        return out

def main():
    Generator(Model(), True, "cuda").decode_n(torch.zeros(1), 4)
"""


@pytest.mark.parametrize("options, spread", [
    ('kwargs = {} if device == "cpu" else {"mode": "reduce-overhead"}', "**kwargs"),
    ('kwargs = dict(mode="max-autotune")', "**kwargs"),
    ('mode = "reduce-overhead" if device != "cpu" else "default"', "mode=mode"),
    ('mode = "reduce-overhead"\n            kwargs = {"mode": mode}', "**kwargs"),
])
def test_compile_options_through_a_local_capture(options, spread):
    src = GENERATOR.format(options=options, spread=spread)
    assert entries({"m.py": src}) == [("graph", "Generator.step"), ("host", "Generator.decode_n")]


@pytest.mark.parametrize("options, spread", [
    ('kwargs = {"dynamic": True}', "**kwargs"),
    ('mode = "default"', "mode=mode"),
    ('kwargs = {"mode": "reduce-overhead"}', "dynamic=True"),  # bound but never passed
])
def test_compile_options_without_cuda_graphs_stay_eager(options, spread):
    src = GENERATOR.format(options=options, spread=spread)
    assert entries({"m.py": src}) == [("eager", "Generator.decode_n")]
