"""Kinds that flow through fields, library layers, module hooks and dispatch (issue 19 recall): a list
stored on ``self`` indexing the logits in another method, a library layer's weights cast per call, a
0-dim element of a 1-D device tensor as a slice bound, a KV cache grown by a forward hook, a flag
returned through a field that holds one of two classes, a categorical distribution's ``sample()``;
and their look-alikes that report nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from graphlint.static.valuekinds import SCALAR, TENSOR, UNKNOWN, join_dispatch

from static_helpers import analyze
from test_static_fixture import expected, load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fixtures" / "static" / "fieldflow"
OURS = ("GL105", "GL109", "GL111", "GL206", "GL207", "GL208", "GL303")


def test_the_fixture_engine_reports_each_flow_and_nothing_else(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    settings = resolve(load_config(cwd=tmp_path), paths=[str(PACKAGE.relative_to(ROOT))], jobs=1, use_cache=False)
    found = {(f.path, f.line, f.rule) for f in run(settings).findings if f.rule in OURS}
    assert found == expected(load(PACKAGE))


STEP = """
import torch
from torch import nn
from torch.distributions import Categorical


class Step(nn.Module):
    def __init__(self, ids, dim: int):
        super().__init__()
        self.ids = list(ids)
        self.count = len(ids)
        self.norm = nn.LayerNorm(dim)
        self.mixer = Mixer()

    def forward(self, x: torch.Tensor, n: int):
        {body}
        return x


class Mixer(nn.Module):
    def forward(self, x):
        return x


def loop(model: Step, x: torch.Tensor):
    for _ in range(8):
        x = model(x, 3)
    return x
"""


def _rules(body: str) -> list[str]:
    findings = analyze({"step.py": STEP.replace("{body}", body.replace("\n", "\n        "))})
    return sorted(f.rule for f in findings if f.rule in OURS)


@pytest.mark.parametrize(("body", "rules"), [
    ("y = x[:, self.ids]", ["GL208"]),  # a field only ever stored a list
    ("rows = [0, 2]\ny = x[rows]", ["GL208"]),  # a name last bound to one
    ("rows = []\nrows.append(n)\ny = x[rows]", ["GL208"]),  # filled later
    ("y = self.mixer.cache[n][self.ids].detach()", ["GL208"]),  # only a tensor has ``detach``
    ("y = self.mixer.cache[n][self.ids].tolist()", []),  # an unknown receiver: a numpy array may take a list
    ("y = x[:, self.count]", []),  # an int field
    ("self.ids = n\ny = x[:, self.ids]", []),  # stored an int too: not only a list
    ("rows = [0, 2]\nrows = 1\ny = x[rows]", []),  # rebound to an int
    ("y = self.norm.weight.to(x.dtype) * x", ["GL206"]),  # a library layer's parameter
    ("y = self.mixer.weight.to(x.dtype) * x", []),  # a project module: its fields are its own business
    ("v = x.flatten()\ny = x[:, : v[-1]]", ["GL111"]),  # an element of a 1-D tensor
    ("v = x[x.gt(0)]\ny = x[:, : v[n] + 1]", ["GL111", "GL303"]),  # a mask of itself: 1-D
    ("v = x[x[:, 0].gt(0)]\ny = x[:, : v[-1]]", ["GL303"]),  # another tensor's mask: rows, not elements
    ("v = x.flatten()\ny = x[:, : v[:2]]", []),  # a slice of it: not 0-dim
    ("y = Categorical(logits=x).sample()", ["GL109"]),
    ("d = Categorical(probs=x.softmax(-1))\ny = d.sample()", ["GL109"]),
    ("d = Categorical(logits=x)\ny = d.entropy()", []),  # no sampling
    ("d = Categorical(logits=x, validate_args=False)\ny = d.sample()", []),  # no argument checks: no read
    ("y = Categorical(probs=x, validate_args=False).sample()", []),
    ("d = Categorical(logits=x, validate_args=False)\nd = Categorical(logits=x)\ny = d.sample()", ["GL109"]),
    # torch.multinomial in every spelling: no host read, and it captures (reports/h100-2026-12-06-s19-merged)
    ("y = torch.multinomial(x, 1)", []),
    ("y = torch.multinomial(x, num_samples=1, replacement=True)", []),
    ("y = x.multinomial(4, replacement=False)", []),
    ("y = torch.multinomial(x, 4, True)", []),
    ("y = x.multinomial(num_samples=4, replacement=True)", []),
    ("y = x.multinomial(n, True)", []),
])
def test_kinds_of_fields_layers_and_elements(body, rules):
    assert _rules(body) == rules


@pytest.mark.parametrize(("switch", "rules"), [
    ("torch.distributions.Distribution.set_default_validate_args(False)", []),  # process-wide: no checks
    ("torch.distributions.Distribution.set_default_validate_args(True)", ["GL109"]),
    ("", ["GL109"]),
])
def test_a_module_that_turns_distribution_checks_off_samples_without_a_read(switch, rules):
    source = STEP.replace("{body}", "y = Categorical(logits=x).sample()").replace("\n\n\nclass Step", f"\n{switch}\n\n\nclass Step")
    assert sorted(f.rule for f in analyze({"step.py": source}) if f.rule in OURS) == rules


CAPTURED = """
import torch
from torch.distributions import Categorical


def sample(probs: torch.Tensor):
    return {draw}


def capture(probs: torch.Tensor):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = sample(probs)
    return graph, out
"""


@pytest.mark.parametrize(("draw", "rules"), [
    ("torch.multinomial(probs, 4, replacement=True)", []),  # several draws with replacement: no sync either
    ("probs.multinomial(num_samples=4, replacement=True)", []),
    ("Categorical(probs=probs).sample()", [("GL109", "error")]),  # the same captured helper, a distribution's checks
])
def test_multinomial_with_replacement_in_a_capture_is_no_sync(draw, rules):
    found = analyze({"step.py": CAPTURED.replace("{draw}", draw)})
    assert sorted((f.rule, f.severity) for f in found if f.rule in OURS) == rules


def test_dispatch_keeps_a_kind_one_target_returns_where_the_others_say_nothing():
    assert join_dispatch((TENSOR, TENSOR), (TENSOR, UNKNOWN)) == (TENSOR, TENSOR)
    assert join_dispatch(None, SCALAR) == SCALAR and join_dispatch(UNKNOWN, SCALAR) == SCALAR
    assert join_dispatch(SCALAR, TENSOR) == UNKNOWN  # kinds that disagree
    assert join_dispatch((TENSOR,), (TENSOR, TENSOR)) == UNKNOWN


HOOKED = """
import torch
from torch import nn


class Proj(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Proj()
        self.side = Proj()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)

    def apply(self, fn):
        '''A class's own ``apply``: an ordinary call, not nn.Module.apply.'''
        return fn


def grow(module, inputs, out):
    store["k"] = torch.cat([store["k"], out], dim=1)


store = {}


def loop(model: Net, x: torch.Tensor):
    {setup}
    for _ in range(8):
        x = model(x)
    return x
"""


@pytest.mark.parametrize(("setup", "rules"), [
    ("model.proj.register_forward_hook(grow)", ["GL207"]),  # runs from Proj.forward, every step
    ("model.proj.register_forward_pre_hook(grow)", ["GL207"]),
    ("model.side.register_forward_hook(grow)", ["GL207"]),  # one class for both fields: its forward runs
    ("model.apply(grow)", []),  # the class's own ``apply`` calls nothing
    ("pass", []),
])
def test_a_forward_hook_runs_where_its_module_runs(setup, rules):
    findings = analyze({"hooked.py": HOOKED.replace("{setup}", setup)})
    assert sorted(f.rule for f in findings if f.rule in OURS) == rules
