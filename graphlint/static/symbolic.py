"""Graph code reached only through ``torch.compile(f, mode="reduce-overhead", dynamic=True)``.

Under a dynamic compile a Python int that ``f`` takes, or derives from a tensor's shape, is no
constant of the graph: dynamo traces it as a symbolic int, and the CUDA-graph trees record one
graph per distinct value of it ("Recording cudagraph tree for symint key"; on an H100 about 5 ms
for a recording against 0.25 ms for a replay). A position held in a Python int therefore indexes,
branches and sizes right on every call -- nothing is frozen -- and what it costs is a recording per
distinct value: once per block where the value moves once per block (a diffusion engine's block
offsets), once per step where it moves every step. The frozen-value rules (GL308-GL310, their
``symbolic_severity`` param) say so as an info there. Under a compile that is not dynamic (dynamo
specialises the int and guards on it: a recompile per value) and under a ``torch.cuda.graph``
capture (the value is baked in) they keep their severity; a function that any such root also
reaches is not symbolic-only.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

#: appended to the message of a frozen-value finding in code only a dynamic compile captures
SYMBOLIC_NOTE = (" (only inside a `torch.compile(..., dynamic=True)` CUDA-graph compile: the int is symbolic there,"
                 " not frozen -- a new graph is recorded per distinct value, a cost once per value, not a wrong replay)")


def dynamic_compile(call: cst.Call | None) -> bool:
    """``torch.compile(f, ..., dynamic=True)``: the literal only (``dynamic=None``, the default, and
    a value read from settings keep the int specialised as far as this analysis knows)."""
    return call is not None and any(
        arg.keyword is not None and arg.keyword.value == "dynamic" and type(arg.value) is cst.Name
        and arg.value.value == "True" for arg in call.args)


def note_root(dynamic_chains: dict, chain: tuple, dynamic: bool) -> None:
    """A compiled graph root's chain, dynamic only while every compile adding it is."""
    dynamic_chains[chain] = dynamic_chains.get(chain, True) and dynamic


def symbolic_only(roots: list, graph: dict, dynamic_chains: dict, reach: Callable[[list], dict]) -> set:
    """The captured functions no root but a dynamic compile reaches (``reach``: the graph context's
    walk from some roots, :func:`.contexts.bfs` over its calls)."""
    if not any(dynamic_chains.values()):
        return set()
    sure = reach([r for r in roots if not dynamic_chains.get(r[1]) and r[0] in graph])
    return {f for f in graph if f not in sure}
