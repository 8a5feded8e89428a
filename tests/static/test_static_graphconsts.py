"""Python ints that are constants of their graph (:mod:`graphlint.static.graphconsts`): a graph captured per
position (a cache keyed by the position, or a tuple holding it) bakes its own position, so the slices of the
forward it records are no frozen per-step value (GL308). Kept: one graph captured once and replayed for every
position, a cache keyed by something else, and a position read from a field inside the capture."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config


def _findings(tmp_path: Path, monkeypatch, source: str) -> list:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text(textwrap.dedent(source))
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False)
    return [(f.line, f.rule, f.severity) for f in run(settings).findings]


def _errors(found: list, rule: str = "GL308") -> list:
    return [f for f in found if f[1] == rule and f[2] == "error"]


ENGINE = """
import torch


class Decoder:
    def __init__(self, table: torch.Tensor, cache: torch.Tensor):
        self.table = table
        self.cache = cache
        self.tok = torch.zeros(1, 8, device="cuda")
        self.out = torch.zeros(1, 8, device="cuda")
        self.graphs = {}
        self.verify_graphs = {}
        self.graph = None
        self.pos = 0

    def _put(self, store, key, g):
        store[key] = g

    def _rows(self, h: torch.Tensor, width: int) -> torch.Tensor:
        return h[:width] * self.table[:width]

    def forward_one(self, tok: torch.Tensor, cur_pos: int) -> torch.Tensor:
        kv_seq = cur_pos + 1
        self.cache[cur_pos:kv_seq] = tok
        return self.cache[:kv_seq].sum(0, keepdim=True) * self.table[cur_pos : cur_pos + 1]

    def forward_many(self, tok: torch.Tensor, cur_pos: int, width: int) -> torch.Tensor:
        self.cache[cur_pos : cur_pos + width] = self._rows(tok, width)
        return self.cache[: cur_pos + width].sum(0, keepdim=True)

%(capture)s

    def generate(self, ids: torch.Tensor, steps: int, start: int):
        cur_pos = start
        for _ in range(steps):
            self.tok.copy_(ids[:, -1:].float().expand(1, 8))
            g = self.graph_for(cur_pos)
            g.replay()
            ids = torch.cat([ids, self.out.argmax(-1, keepdim=True)], dim=1)
            width = int(ids.shape[1] %% 4) + 1
            v = self.verify_for(cur_pos, width)
            v.replay()
            cur_pos += 1
        return ids
"""

KEYED = """
    def graph_for(self, cur_pos: int):
        g = self.graphs.get(cur_pos)
        if g is not None:
            return g
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.forward_one(self.tok, cur_pos)
        self.graphs[cur_pos] = g
        return g

    def verify_for(self, cur_pos: int, width: int):
        key = (cur_pos, width)
        g = self.verify_graphs.get(key)
        if g is not None:
            return g
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.forward_many(self.tok, cur_pos, width)
        self._put(self.verify_graphs, key, g)
        return g
"""

# the same forwards, one graph each, captured once at the first position and replayed for every other
ONCE = """
    def graph_for(self, cur_pos: int):
        if self.graph is not None:
            return self.graph
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.forward_one(self.tok, cur_pos)
        self.graph = g
        return g

    def verify_for(self, cur_pos: int, width: int):
        g = self.verify_graphs.get(width)
        if g is not None:
            return g
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.forward_many(self.tok, cur_pos, width)
        self.verify_graphs[width] = g
        return g
"""


def test_a_graph_per_position_bakes_its_own_position(tmp_path, monkeypatch):
    found = _findings(tmp_path, monkeypatch, ENGINE % {"capture": KEYED})
    assert not _errors(found), found


def test_a_graph_captured_once_freezes_the_position(tmp_path, monkeypatch):
    found = _errors(_findings(tmp_path, monkeypatch, ENGINE % {"capture": ONCE}))
    lines = {f[0] for f in found}
    assert {24, 25} <= lines, found  # forward_one's slices: one graph for every position
    assert {28, 29} <= lines, found  # forward_many: keyed by the width only, the position is frozen
    assert not {20} & lines, found  # the width is the key: each graph its own


FIELD = """
import torch


class Decoder:
    def __init__(self, table: torch.Tensor):
        self.table = table
        self.out = torch.zeros(1, 8, device="cuda")
        self.graphs = {}
        self.start_pos = 0

    def forward_one(self, cur_pos: int) -> torch.Tensor:
        return self.table[self.start_pos : self.start_pos + 1] + self.table[cur_pos : cur_pos + 1]

    def graph_for(self, cur_pos: int):
        g = self.graphs.get(cur_pos)
        if g is None:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.out = self.forward_one(cur_pos)
            self.graphs[cur_pos] = g
        return g

    def generate(self, steps: int):
        for _ in range(steps):
            self.graph_for(self.start_pos).replay()
            tok = self.out.argmax(-1)
            self.start_pos += 1
        return tok
"""


def test_a_field_read_inside_a_keyed_graph_is_still_frozen(tmp_path, monkeypatch):
    found = _findings(tmp_path, monkeypatch, FIELD)
    assert (13, "GL307", "error") in found, found  # self.start_pos: the same on every replay of the graph


UNROLLED_REGION = """
import torch


class Head:
    def __init__(self, table: torch.Tensor, n: int):
        self.table = table
        self.n = n
        self.x = torch.zeros(1, 8, device="cuda")
        self.graph = None

    def one(self, x: torch.Tensor, pos_k: int) -> torch.Tensor:
        return x * self.table[pos_k : pos_k + 1]

    def capture(self):
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for k in range(self.n):
                self.x = self.one(self.x, k)

    def run(self, steps: int, cur: int):
        for _ in range(steps):
            self.graph.replay()
            tok = self.x.argmax(-1)
            self.one(self.x, cur)
            cur += 1
        return tok
"""


def test_a_loop_the_capture_region_unrolls_hands_its_helpers_constants(tmp_path, monkeypatch):
    found = _findings(tmp_path, monkeypatch, UNROLLED_REGION)
    assert not _errors(found), found
