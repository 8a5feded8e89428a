"""A Python number a per-token loop changes every step, handed to the step a CUDA-graph capture in
that loop records and later replays: frozen at the capture (:mod:`graphlint.static.frozenargs`).
nanoGPT-style engines capture ``_step(static_ids, offset, ...)`` once per input shape and pass
``offset = ids.size(1) - 1`` (the id tensor regrows by ``torch.cat`` every token):
``torch.arange(offset, offset + n)`` inside gives every later token the capture's position (GL310,
an error). The parameter has no position's name: only the loop's value flow tells. Counter-cases:
a capture keyed on the number, a number the loop does not change, a capture made anew every
step, a size of the dimension the loop does not grow, a position held in a device tensor, and
the same step run eagerly."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

ENGINE = """
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self, vocab: int, n: int, max_len: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, n)
        self.pe = nn.Embedding(max_len, n)
        self.head = nn.Linear(n, vocab)


class Engine:
    def __init__(self, model: Tiny, max_len: int):
        self.model = model
        self.max_len = max_len
        self.graphs = {}
        self.k = torch.zeros(1, max_len, 8, device="cuda")

    def _step(self, ids, offset, where):
        n = ids.size(1)
        pos = torch.arange(offset, offset + n, device=ids.device)  # FROZEN
        x = self.model.emb(ids) + self.model.pe(pos)
        self.k.index_copy_(1, where, x)
        return self.model.head(x)

    def generate(self, ids: torch.Tensor, budget: int) -> torch.Tensor:
        out_ids = []
        for i in range(budget):
            step_ids = ids if i == 0 else ids[:, -1:]
            offset = {offset}
            key = {key}
            {guard}
                static_ids = step_ids.clone()
                where = torch.zeros(1, dtype=torch.long, device=ids.device)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = self._step(static_ids, {arg}, where)
                self.graphs[key] = (g, static_ids, where, out)
            g, static_ids, where, out = self.graphs[key]
            static_ids.copy_(step_ids)
            where.fill_(ids.size(1) - 1)
            g.replay()
            nxt = out[:, -1].argmax(-1, keepdim=True)
            out_ids.append(nxt)
            ids = torch.cat([ids, nxt], dim=1)
        return ids
"""

GUARD = "if key not in self.graphs:"
SHAPE_KEY = "tuple(step_ids.shape)"


def findings(tmp_path: Path, monkeypatch, offset: str, arg: str = "offset", key: str = SHAPE_KEY,
             guard: str = GUARD) -> dict[int, tuple[str, str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = textwrap.dedent(ENGINE).replace("{offset}", offset).replace("{arg}", arg).replace("{key}", key)
    (pkg / "engine.py").write_text(source.replace("{guard}", guard))
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False)
    return {(f.line, f.rule): f.severity.value if hasattr(f.severity, "value") else str(f.severity)
            for f in run(settings).findings}


FROZEN = next(i + 1 for i, line in enumerate(textwrap.dedent(ENGINE).splitlines()) if "# FROZEN" in line)


@pytest.mark.parametrize("offset, arg", [
    ("0 if i == 0 else ids.size(1) - 1", "offset"),  # a size of the id tensor the loop regrows (nanoGPT)
    ("ids.shape[-1] - 1", "offset"),  # the same through ``.shape``
    ("0", "i"),  # the loop's own counter, passed as it is
    ("0", "i + 1"),
    ("len(out_ids)", "offset"),  # a list the loop appends to
])
def test_a_per_step_number_passed_into_a_keyed_capture_is_frozen(tmp_path, monkeypatch, offset, arg):
    found = findings(tmp_path, monkeypatch, offset, arg)
    assert found.get((FROZEN, "GL310")) == "error"


@pytest.mark.parametrize("offset, arg, key, guard", [
    ("ids.size(1) - 1", "offset", "(tuple(step_ids.shape), offset)", GUARD),  # one graph per value
    ("self.max_len - 1", "offset", SHAPE_KEY, GUARD),  # a configuration field: the same every step
    ("ids.size(0)", "offset", SHAPE_KEY, GUARD),  # the batch: the loop grows the other dimension
    ("ids.size(1) - 1", "offset", SHAPE_KEY, "if True:"),  # recorded anew every step: nothing replayed later
    ("ids.size(1) - 1", "where", SHAPE_KEY, GUARD),  # the position in a device tensor: read at replay
])
def test_a_number_fixed_for_the_graphs_life_is_quiet(tmp_path, monkeypatch, offset, arg, key, guard):
    found = findings(tmp_path, monkeypatch, offset, arg, key, guard)
    assert not any(rule in ("GL308", "GL309", "GL310") for _, rule in found)


def test_the_same_step_run_eagerly_is_no_frozen_number(tmp_path, monkeypatch):
    """Without the capture the arange is a per-step allocation, nothing is frozen (the eager loop's
    positions are another rule's business)."""
    found = findings(tmp_path, monkeypatch, "ids.size(1) - 1", guard="if key not in self.graphs:",
                     key=SHAPE_KEY)
    assert (FROZEN, "GL310") in found
    eager = textwrap.dedent(ENGINE).replace("with torch.cuda.graph(g):", "if g is not None:")
    pkg = tmp_path / "eager"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text(eager.replace("{offset}", "ids.size(1) - 1").replace("{arg}", "offset")
                                   .replace("{key}", SHAPE_KEY).replace("{guard}", GUARD))
    settings = resolve(load_config(cwd=tmp_path), paths=["eager"], jobs=1, use_cache=False)
    assert not any(f.rule == "GL310" for f in run(settings).findings)


NET = """
import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self, n: int, max_len: int):
        super().__init__()
        self.qkv = nn.Linear(n, 3 * n)
        self.register_buffer("k", torch.zeros(1, max_len, n))
        self.register_buffer("v", torch.zeros(1, max_len, n))

    def forward(self, x: torch.Tensor, where: torch.Tensor, upto: int | None = None) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, -1)
        self.k.index_copy_(1, where, k)
        self.v.index_copy_(1, where, v)
        keys, values = self.k, self.v
        if upto is not None:
            keys = keys[:, :upto]  # SLICE
            values = values[:, :upto]  # SLICE
        return (q @ keys.transpose(1, 2)).softmax(-1) @ values


class Block(nn.Module):
    def __init__(self, n: int, max_len: int):
        super().__init__()
        self.norm = nn.LayerNorm(n)
        self.attn = Attn(n, max_len)

    def forward(self, x: torch.Tensor, where: torch.Tensor, upto: int | None = None) -> torch.Tensor:
        return x + self.attn(self.norm(x), where, upto)


class Net(nn.Module):
    def __init__(self, vocab: int, n: int, layers: int, max_len: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, n)
        self.trunk = nn.ModuleDict(dict(h=nn.ModuleList(Block(n, max_len) for _ in range(layers))))
        self.head = nn.Linear(n, vocab)

    def forward(self, ids: torch.Tensor, where: torch.Tensor, upto: int | None = None) -> torch.Tensor:
        if ids.size(1) > 1:
            upto = None  # the prompt's pass: the whole cache
        x = self.emb(ids)
        for _, block in enumerate(self.trunk.h):
            x = block(x, where, upto)
        return self.head(x)
"""

GEN = """
import torch

from pkg.net import Net


def next_token(model: Net, where: torch.Tensor, ids: torch.Tensor, upto: int | None = None) -> torch.Tensor:
    logits = model(ids, where, upto=upto)
    return logits[:, -1].argmax(-1, keepdim=True)


def run(model: Net, prompt: torch.Tensor, budget: int, max_len: int) -> list[int]:
    step = torch.compile(next_token, mode="reduce-overhead")
    filled = prompt.size(0)
    where = torch.arange(0, filled, device=prompt.device)
    tok = prompt
    out = []
    for _ in range(budget):
        tok = step(model, where, tok.view(1, -1), upto={upto})
        out.append(tok.item())
        where = where[-1:] + 1
        filled += 1
    return out
"""

SLICES = [i + 1 for i, line in enumerate(textwrap.dedent(NET).splitlines()) if "# SLICE" in line]


def chain_findings(tmp_path: Path, monkeypatch, upto: str) -> dict[tuple[str, int], str]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "net.py").write_text(textwrap.dedent(NET))
    (pkg / "gen.py").write_text(textwrap.dedent(GEN).replace("{upto}", upto))
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False)
    return {(Path(f.path).name, f.line): f.rule for f in run(settings).findings}


def test_a_counter_reaches_the_layer_that_slices_three_forwards_down(tmp_path, monkeypatch):
    """litgpt's shape: the compiled step hands the count to the model, the model to each block of a
    ``ModuleList`` inside a ``ModuleDict`` (rebinding it to None for the prompt), the block to its
    attention, which slices by it: a new recording every token, however deep."""
    found = chain_findings(tmp_path, monkeypatch, "filled")
    assert {line for (path, line), rule in found.items() if path == "net.py" and rule == "GL308"} == set(SLICES)


def test_a_fixed_length_down_the_same_chain_is_quiet(tmp_path, monkeypatch):
    found = chain_findings(tmp_path, monkeypatch, "max_len")
    assert not any(rule in ("GL308", "GL309", "GL310") for rule in found.values())


def test_a_type_test_of_the_per_step_number_is_no_per_step_branch(tmp_path, monkeypatch):
    """``isinstance(offset, int)``: the number's type, the same answer every step (flash-attn's rotary)."""
    engine = ENGINE.replace("        n = ids.size(1)\n", "        n = ids.size(1)\n        if isinstance(offset, int):\n"
                            "            n = n + 0\n")
    monkeypatch.setattr(sys.modules[__name__], "ENGINE", engine)
    found = findings(tmp_path, monkeypatch, "ids.size(1) - 1")
    assert not any(rule == "GL309" for _, rule in found)
    assert any(rule == "GL310" for _, rule in found)
