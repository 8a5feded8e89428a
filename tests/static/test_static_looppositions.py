"""A per-token loop's positions, whatever their names (:mod:`graphlint.static.looppositions`): its own
``range`` counter, an int it carries and only advances, and what is computed from them index tensors
every token (GL308, a warning in eager code). Quiet: an acceptance walk's count, a fixed loop's
counter inside the step, an offset reset every step, a branch on the counter, loops that pick no
token (over layers, a training loss over a sequence) and a loop unrolled into a capture."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from static_helpers import assert_marked, check_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "looppositions"


def test_positions_a_per_token_loop_moves_index_tensors(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "draft_verify.py")
    assert_marked(result, FIXTURES, "draft_verify.py")


def _findings(tmp_path: Path, monkeypatch, source: str) -> list:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text(textwrap.dedent(source))
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False)
    return [(f.line, f.rule) for f in run(settings).findings]


LAYERS = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.head = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
        for i in range(len(self.layers)):
            x = self.layers[i](x)
            cache[i] = x
        return self.head(x)


def generate(model: Net, x: torch.Tensor, cache: torch.Tensor, n: int):
    for t in range(n):
        x = model(x, cache)
    return x
"""


def test_a_loop_over_layers_is_no_per_token_loop(tmp_path, monkeypatch):
    """``h = layer(h)`` feeds a call back too, but the loop runs whole inside each step."""
    found = _findings(tmp_path, monkeypatch, LAYERS)
    assert not [f for f in found if f[1] == "GL308"]


UNROLLED = """
import torch
from torch import nn


class Runner:
    def __init__(self, net: nn.Linear, table: torch.Tensor, steps: int):
        self.net, self.table, self.steps = net, table, steps
        self.x = torch.zeros(1, 8, device="cuda")
        self.graph = torch.cuda.CUDAGraph()

    def capture(self):
        with torch.cuda.graph(self.graph):
            self.out = self.loop(self.x)

    def loop(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.steps):
            x = x + self.net(x) * self.table[i : i + 1]
        return x

    def step(self, x: torch.Tensor) -> torch.Tensor:
        self.x.copy_(x)
        self.graph.replay()
        return self.out


def serve(runner: Runner, xs):
    runner.capture()
    out = []
    for x in xs:
        out.append(runner.step(x))
    return out
"""


def test_a_loop_unrolled_into_a_capture_holds_a_constant_per_copy(tmp_path, monkeypatch):
    """The whole loop is recorded once: each copy slices at its own offset on every replay."""
    found = _findings(tmp_path, monkeypatch, UNROLLED)
    assert not [f for f in found if f[1] in ("GL308", "GL309", "GL310")]


TRAINING = """
import torch
import torch.nn.functional as F
from torch import nn


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def sample_sigma(self, n: int) -> torch.Tensor:
        return torch.rand(n, 1, device="cuda")

    def forward(self, frames: torch.Tensor, n: int):
        loss = 0
        for i in range(frames.size(1) - n):
            obs = frames[:, i : n + i]
            noisy = frames[:, n + i] + self.sample_sigma(frames.size(0))
            denoised = self.net(obs.mean(1) + noisy)
            loss += F.mse_loss(denoised, frames[:, n + i])
            frames[:, n + i] = denoised
        return loss
"""


def test_a_loop_computing_a_loss_every_iteration_trains(tmp_path, monkeypatch):
    """Every iteration computes a training loss: a sequence walked for training, no decode loop."""
    found = _findings(tmp_path, monkeypatch, TRAINING)
    assert not [f for f in found if f[1] == "GL308"]


UNROLLED_HELPER = """
import torch
from torch import nn


class Tables:
    def __init__(self, table: torch.Tensor):
        self.table = table

    def pick(self, i: int) -> torch.Tensor:
        return self.table[i : i + 1]


class Runner:
    def __init__(self, net: nn.Linear):
        self.net = net
        self.num_steps = 0
        self.tables = None
        self.graph = None
        self.x = torch.zeros(1, 8, device="cuda")

    def bind(self, table: torch.Tensor, num_steps: int):
        self.num_steps = int(num_steps)
        self.tables = Tables(table)

    def setup(self):
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.loop(self.x)

    def one_step(self, x: torch.Tensor, step: int) -> torch.Tensor:
        return self.net(x) * self.tables.pick(step)

    def loop(self, x: torch.Tensor) -> torch.Tensor:
        for step in range(self.num_steps):
            x = x + 0.1 * self.one_step(x, step)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.x.copy_(x)
        self.graph.replay()
        return self.out
"""


def test_a_counter_of_a_loop_unrolled_into_a_capture_handed_to_helpers_is_no_position(tmp_path, monkeypatch):
    found = _findings(tmp_path, monkeypatch, UNROLLED_HELPER)
    assert not [f for f in found if f[1] == "GL308"]
