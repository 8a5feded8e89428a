"""A loop whose body captures (one graph per draft offset or batch size) or warms up for a capture
is capture set-up, never a per-token loop, even when it feeds a value back (issue 19 item 2)."""

from __future__ import annotations

import pytest

from test_static_entries import entries

ENGINE = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)

def {runner}(model, offset, x):
    static = x.clone()
    g = torch.cuda.CUDAGraph()
    {capture}
    def run(inp):
        static.copy_(inp)
        g.replay()
        return out.clone()
    return run, out

class Engine:
    def __init__(self, model):
        self.model = model
        self.runners = {{}}

    def initialize_graphs(self, n: int):
        x = torch.zeros(4, device="cuda")
        for offset in range(n):
            self.runners[offset], x = {runner}(self.model, offset, x)

    def step(self, tok, offset: int):
        return self.runners[offset](tok)

    def generate(self, tok, n: int):
        for i in range(n):
            tok = self.step(tok, i % 4)
        return tok

def main():
    e = Engine(Model())
    e.initialize_graphs(4)
    e.generate(torch.zeros(4), 10)
"""

CAPTURES = "with torch.cuda.graph(g):\n        out = model(static)"


@pytest.mark.parametrize("runner, capture", [
    ("graph_runner", CAPTURES),  # a function that captures
    ("capture_runner", CAPTURES),
])
def test_a_loop_that_captures_one_graph_per_offset_is_set_up(runner, capture):
    src = ENGINE.format(runner=runner, capture=capture)
    found = entries({"m.py": src})
    assert ("eager", "Engine.initialize_graphs") not in found
    assert ("host", "Engine.generate") in found and ("graph", "Model.forward") in found


def test_a_warm_up_loop_feeding_its_output_back_is_set_up():
    src = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)

def warmup_step(model, x):
    return model(x)

def prepare(model):
    x = torch.zeros(4, device="cuda")
    for _ in range(3):
        x = warmup_step(model, x)
    return x

def decode(model, tok, n: int):
    for _ in range(n):
        tok = model(tok)
    return tok

def main():
    m = Model()
    prepare(m)
    decode(m, torch.zeros(4), 8)
"""
    assert entries({"m.py": src}) == [("eager", "decode")]
