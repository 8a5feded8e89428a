"""Evidence is per decode path (issue 19): what one capture, replay or loop makes hot, and what it
does not. Each test is a small engine written for it."""

from __future__ import annotations

from static_helpers import analyze, builtin_rules, options, summarize

from graphlint.static.link import link


def found(files: dict[str, str], **kw) -> list[tuple[str, int, str, str]]:
    return [(f.path, f.line, f.rule, f.severity) for f in analyze(files, **kw)]


def entries(files: dict[str, str]) -> list[tuple[str, str]]:
    out = []
    link(summarize(files), builtin_rules(), options(), out)
    return sorted((e.context, e.function[1]) for e in out)


def test_an_eager_loop_stays_eager_when_another_of_its_calls_leads_to_a_replay():
    """Assisted decoding: the loop runs its own model eagerly and asks a draft engine, which
    replays a graph, for candidates. The loop is an eager decode loop, strictly."""
    src = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

class Draft:
    def __init__(self):
        self.g = torch.cuda.CUDAGraph()

    def propose(self, x):
        self.g.replay()
        return x

def assisted(model: Model, draft: Draft, x, n: int):
    for _ in range(n):
        cand = draft.propose(x)
        x = model(cand)
        print(x.tolist())
        if x.sum().item() > 0:
            break
    return x
"""
    assert ("eager", "assisted") in entries({"m.py": src})
    # the step's first read is by design (info); a second keeps the eager error (a host step's: a warning)
    assert ("m.py", 21, "GL101", "error") in found({"m.py": src})


def test_eager_decode_loops_do_not_enter_host_steps():
    """A loop over any decoder (``decoder.step()``): the graph decoder's step is a host step, whose
    staging is a per-step cost (a warning), not eager code."""
    src = """
import torch

class Eager:
    def step(self, x):
        return torch.relu(x)

class Graphed:
    def __init__(self):
        self.g = torch.cuda.CUDAGraph()
        self.event = torch.cuda.Event()

    def stage(self, x):
        self.event.synchronize()
        return x

    def step(self, x):
        x = self.stage(x)
        self.g.replay()
        return x

def run(decoder, x, n: int):
    for _ in range(n):
        x = decoder.step(x)
    return x

def main(x):
    run(Eager(), x, 4)
    run(Graphed(), x, 4)
"""
    assert ("m.py", 14, "GL107", "warning") in found({"m.py": src})


def test_a_driver_is_entered_only_through_the_loop_it_starts():
    """``generate()`` picks a decode loop; called every step by another loop (a draft model's
    generate in assisted decoding), its own set-up runs once per decode it starts."""
    src = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

    def generate(self, x, n: int):
        mask = torch.ones(4, device="cuda")
        return self._sample(x, n)

    def _sample(self, x, n: int):
        for _ in range(n):
            x = self(x)
            buf = torch.zeros(4, device="cuda")
        return x

def assisted(model: Model, draft: Model, x, n: int):
    for _ in range(n):
        cand = draft.generate(x, 3)
        x = model(cand)
    return x
"""
    lines = [(line, rule) for _, line, rule, _ in found({"m.py": src})]
    assert (15, "GL201") in lines  # the loop the driver starts is hot
    assert (9, "GL201") not in lines  # its set-up is not


def test_a_loop_reaching_only_a_helper_captured_code_also_uses_is_no_decode_loop():
    """A radix-tree walk calls a kernel loader the captured model also calls: that makes it no
    per-token loop (a model step or a captured callable makes one)."""
    src = """
import torch

def load_kernel():
    return 1

class Model(torch.nn.Module):
    def forward(self, x):
        load_kernel()
        return torch.relu(x)

def capture(model: Model, x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x)

def match(key, ids):
    load_kernel()
    return 1

def walk(key, ids, n: int):
    pos = 0
    while pos < n:
        pos += match(key, ids[pos:])
        key[pos:].item()
"""
    assert ("eager", "walk") not in entries({"m.py": src})
    assert not [f for f in found({"m.py": src}) if f[1] == 25]
