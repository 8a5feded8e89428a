"""How severe a finding is, by where it is: the devices a capture runs on (GL501), an eager
engine's host logic around its model step (GL311/GL312)."""

from __future__ import annotations

from static_helpers import analyze


def found(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.rule, f.severity) for f in analyze({"m.py": src}, **kw)]


def test_graph_without_stream_follows_the_device_the_capture_runs_on():
    """Called from a loop over devices: several devices from one process (an error); a capture
    after selecting its device from a value: maybe several (a warning); none selected: info."""
    src = """
import torch

def capture_on(graph, stage, dev):
    with torch.cuda.graph(graph):
        stage()

def capture_all(graphs, stages, devices):
    for i, dev in enumerate(devices):
        capture_on(graphs[i], stages[i], dev)

def capture_selected(graph, stage, dev):
    torch.cuda.set_device(dev)
    with torch.cuda.graph(graph):
        stage()

def capture_under(graph, stage, dev):
    with torch.cuda.device(dev), torch.cuda.graph(graph):
        stage()

def capture_here(graph, stage):
    with torch.cuda.graph(graph):
        stage()
"""
    assert found(src) == [(5, "GL501", "error"), (14, "GL501", "warning"), (18, "GL501", "warning"),
                          (22, "GL501", "info")]


def test_an_eager_loops_host_logic_reports_read_backs_but_not_what_follows_them():
    """Speculative decoding written eagerly: the accepted count is read back (a sync), then used to
    slice and branch in the loop's own code -- host logic between future replays, not a graph.
    In the model step the same branch is reported: capture would freeze it. The read-back itself is
    the loop's one read of its step's result (the accepted count): ``info`` (:mod:`.stepresult`)."""
    src = """
import torch

class LM(torch.nn.Module):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = ids.amax().item()
        if n > 3:
            ids = ids[:, :n]
        return ids.float()

def verify(draft, logits):
    return (logits.argmax(-1) == draft).int().cumprod(-1).sum()

def speculate(model: LM, ids: torch.Tensor, draft: torch.Tensor, rounds: int):
    for _ in range(rounds):
        logits = model(torch.cat([ids, draft], -1))
        n = verify(draft, logits).item()
        if n > 0:
            ids = torch.cat([ids, draft[:, :n]], -1)
    return ids
"""
    assert found(src) == [(6, "GL101", "error"), (7, "GL312", "warning"), (8, "GL311", "error"),
                          (17, "GL101", "info"), (19, "GL207", "error")]
