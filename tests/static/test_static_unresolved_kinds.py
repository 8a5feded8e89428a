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


CALLERS = """
class Runner:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x)


def entry(user_fn, x):
    return Runner(user_fn).run(x)        # the entry's own parameter: the user's


def table_driven(x):
    return Runner({}).run(x)             # a project container: graphlint's own gap
"""


def test_a_parameter_is_the_users_until_a_caller_binds_it(tmp_path):
    """The kind follows the callers that bind a parameter (through their own parameters too)."""
    from graphlint.static.unresolvedkinds import Provenance

    (tmp_path / "main.py").write_text(CALLERS)
    graph, infos = call_graph(tmp_path)
    raw = {}
    for info in infos:
        for qual, fn in info.functions.items():
            raw[(info.path, qual)] = [(t, s) for s in fn.calls for t in graph.site_targets(info, qual, s)]
    (fid, sites), = graph.unresolved.items()
    assert fid == ("main.py", "Runner.run")
    assert Provenance(graph, {k: v for k, v in raw.items() if k[1] != "table_driven"}).kind(fid, sites[0]) == "callback"
    assert Provenance(graph, raw).kind(fid, sites[0]) == "not-followed"  # one caller passes a project value
    assert Provenance(graph, {}).kind(fid, sites[0]) == "callback"       # no caller at all
