"""What is no blind spot of the call graph, though nothing of the project runs there: building a
record, launching a project kernel, calling what a library import (in a function too) bound.
A call through an attribute nothing gives a value stays unresolved."""

from __future__ import annotations

from test_static_callgraph import call_graph, edges

SRC = """
from dataclasses import dataclass
import triton


@dataclass
class Result:
    hits: int


@triton.jit
def add_kernel(x_ptr, n):
    pass


class Norm:
    def __init__(self, eps, fn):
        from fastnorm import rmsnorm  # an optional library, imported where it is used
        self.rmsnorm = rmsnorm
        self.fn = fn
        self.eps = eps

    def forward(self, x):
        y = self.rmsnorm(x, self.eps)   # a library function: resolved to the library
        add_kernel[(4,)](y, 4)          # a kernel launch: device code, not followed by design
        return Result(hits=1)           # a record: its generated __init__ is all that runs

    def blind(self, x):
        return self.fn(x)               # nothing passes ``fn``: unresolved
"""


def test_records_kernels_and_library_imports_are_not_blind_spots(tmp_path):
    (tmp_path / "main.py").write_text(SRC)
    graph, infos = call_graph(tmp_path)
    edges(graph, infos)
    unresolved = {fid[1]: [s.expr for s in sites] for fid, sites in graph.unresolved.items()}
    assert unresolved == {"Norm.blind": [("a", ("n", "self"), "fn")]}
