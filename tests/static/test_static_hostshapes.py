"""Host tensors built from shapes, followed through parameters (branch ``hostshapes``).

A patch model builds its grid of sizes on the host (``torch.stack([torch.tensor(u.shape[1:]) for u in
xs])``) and hands it to every block of a ``ModuleList`` through ``**kwargs``; the blocks hand it to a
rotary helper that walks ``grid.tolist()`` and slices by the sizes. Every block call passes the host
grid, so neither the ``.tolist()`` nor the slices read the device: by the value rounds (a comprehension
join, a splatted dict's keys, the calls of a list's elements) and, where those cannot count every call
(the blocks also handed to a sharding helper), by the hot call graph (:mod:`graphlint.static.hostparams`).
The twins keep their reports: a grid placed on the input's device, a grid the loop's caller hands in."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze, assert_marked, check_fixture, decode_loop

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "hostshapes"


def _lines(result):
    return {(f.path.rsplit("/", 1)[-1], f.line, f.rule) for f in result.findings}


def test_a_grid_built_from_shapes_is_host_in_every_block(monkeypatch, tmp_path):
    lines = _lines(check_fixture(monkeypatch, tmp_path, FIXTURES, "gridmodel"))
    assert not {("rotary.py", 8, "GL102"), ("rotary.py", 10, "GL311"), ("rotary.py", 11, "GL311")} & lines
    assert not {("model.py", 17, "GL101"), ("model.py", 40, "GL102")} & lines  # ``lens[0].item()``, ``unfold``
    assert ("rotary.py", 17, "GL102") in lines  # the grid placed on the device: still a read
    assert ("rotary.py", 26, "GL102") in lines  # handed in from outside: unknown, still a read


def test_the_call_graph_settles_blocks_the_value_rounds_cannot_count(monkeypatch, tmp_path):
    lines = _lines(check_fixture(monkeypatch, tmp_path, FIXTURES, "gridmodel"))
    assert not {line for line in lines if line[0] == "rotary.py" and line[1] >= 33}


def test_gridmodel_findings_are_exactly_its_markers(monkeypatch, tmp_path):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, "gridmodel"), FIXTURES, "gridmodel")


SPLAT = """
import torch
from torch import nn


class Unit(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, sizes):
        return self.proj(x)[: sizes.tolist()[0]]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.unit = Unit()

    def forward(self, x):
        sizes = torch.tensor([x.size(0)]){placed}
        kwargs = {{"sizes": sizes}}
        return self.unit(x, **kwargs)
"""


def _reads(placed: str) -> set[str]:
    findings = analyze({"model.py": SPLAT.format(placed=placed), "run.py": "from model import Model\n" + decode_loop()})
    return {f.rule for f in findings if f.path == "model.py" and f.line == 12}


def test_a_splatted_dict_passes_its_values_kinds():
    """``self.unit(x, **kwargs)`` with ``kwargs`` a display bound once: the unit's ``sizes`` is what the
    display holds -- a host tensor, no read; placed on the device with ``.to(x.device)``, a read."""
    assert "GL102" not in _reads("")
    assert "GL102" in _reads(".to(x.device)")
