"""The host copies the H200 zoo saw fail capture (issue 21), each mechanism on its own: what is
reported in a captured step and the look-alikes that copy nothing (the fixture package
``fixtures/static/engines/hostcopies`` has them side by side in one engine)."""

from __future__ import annotations

import pytest

from static_helpers import analyze

CAPTURED = """
import math
import torch
from torch import nn


def build(config, device=None):
    inv = torch.arange(0, config.dim, 2).float()
    return inv.to(device), 1.0  # ``.to(None)`` from the step: no copy here, the caller's ``.to`` is one


class Step(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.init_fn = build

    def forward(self, x: torch.Tensor, n: int, cache=None):
        {body}
        return x


def capture(x, n, cache):
    step = Step(None)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=torch.cuda.Stream()):
        out = step(x, n, cache)
    return graph, out
"""


def _rules(body: str) -> list[str]:
    findings = analyze({"step.py": CAPTURED.replace("{body}", body.replace("\n", "\n        "))})
    return sorted(f.rule for f in findings if f.rule not in ("GL201", "GL205"))  # per-step factories: other rules


@pytest.mark.parametrize("body", [
    "z = torch.tensor(0.0, device=x.device, dtype=x.dtype)",
    "z = torch.tensor(self.config.hidden_size ** 0.5, device=x.device)",
    "z = torch.tensor(math.sqrt(self.config.dim) / 2, device=x.device)",
    "z = torch.tensor(-1e4 * x.shape[0], device=x.device)",
    "z = torch.tensor(list(range(n))[::-1], device=x.device)",
])
def test_host_data_made_on_the_device_is_gl204(body):
    assert _rules(body) == ["GL204"]


@pytest.mark.parametrize("body", [
    "z = torch.as_tensor(x * 2, device=x.device)",  # a tensor already
    "v = self.scale_of(x)\nz = torch.tensor(v * 2, device=x.device)",  # ``v`` unknown: it may be a tensor
    "z = torch.where(x > 0, 0.0, -1e4)",  # a Python number straight to the op
])
def test_no_host_data_is_not_gl204(body):
    assert _rules(body) == []


@pytest.mark.parametrize(("body", "rules"), [
    ("y = x[..., [-2], :]", ["GL208"]),
    ("x[[0, 1]] = 0.0", ["GL208"]),
    ("y = x[[i for i in range(2)]]", ["GL208"]),
    ("y = x[..., -2:-1, :]", []),  # a slice: a view
    ("y = x[(0, 1)]", []),  # a tuple is two indices
    ("y = torch.tensor([1, 2, 3])[[0, 2]]", []),  # a host tensor: nothing crosses to the device
    ("m = torch.ones(8, dtype=torch.bool)\nm[list(range(2))] = False", []),  # made with no device: host
    ("rows = [[1], [2]]\ny = rows[0]", []),  # a Python list of lists
])
def test_a_python_list_index_on_a_device_tensor_is_gl208(body, rules):
    assert _rules(body) == rules


@pytest.mark.parametrize(("body", "rules"), [
    ("past = cache.get_seq_length() if cache is not None else 0\ny = torch.ones(1, past + n, device=x.device)",
     ["GL310"]),
    ("past = cache.get_seq_length()\ny = torch.arange(past, past + 1, device=x.device)", ["GL310"]),
    ("cap = cache.get_max_cache_shape()\ny = torch.ones(1, cap, device=x.device)", []),  # a capacity
    ("limit = self.config.seq_length\ny = torch.ones(1, limit, device=x.device)", []),  # a config field
    ("own = self.get_seq_length()\ny = torch.ones(1, own, device=x.device)", []),  # an object's own bookkeeping
])
def test_a_cache_length_used_as_a_size_is_a_position(body, rules):
    assert _rules(body) == rules


@pytest.mark.parametrize(("body", "rules"), [
    ("inv = 1.0 / (10000.0 ** (torch.arange(0, 8, 2).float() / 8))\ny = inv[None, :].expand(2, -1).to(x.device)",
     ["GL420"]),
    ("y = torch.tensor(0, dtype=torch.int64).to(x.device)", ["GL420"]),
    ("row = torch.arange(4)[None]\nalias = row\ny = alias.to(x.device)", ["GL420"]),
    ("y = torch.arange(4).cuda()", ["GL403"]),  # ``.cuda()`` is GL403's: one finding per copy
    ("y = torch.arange(4).to('cuda')", ["GL401"]),  # and a hard-coded device GL401's
    ("inv, scale = self.init_fn(self.config)\ny = inv.to(device=x.device)", ["GL420"]),
    ("inv, scale = self.init_fn(self.config, x.device)\ny = inv.to(x.device)", []),  # given the device
    ("inv, scale = self.init_fn(self.config, device=x.device)\ny = inv.to(x.device)", []),
    ("inv = torch.arange(4).float()\ny = inv.to(torch.float16)", []),  # a dtype: no copy
    ("inv = torch.arange(4, device=x.device)\ny = inv.to(x.device)", []),  # on the device already
    ("h = self.encode(x)\ny = (torch.tensor(2.0) * h).to(x.device)", []),  # a 0-dim scalar may meet a CUDA ``h``
    ("h = self.encode(x)\ny = (torch.arange(4) * h).to(x.device)", ["GL420"]),  # a sized one cannot
])
def test_a_host_tensor_the_step_builds_and_moves_is_gl420(body, rules):
    assert _rules(body) == sorted(rules)


@pytest.mark.parametrize(("body", "rules"), [
    ("y = torch.histc(x, bins=4)", ["GL110"]),
    ("y = torch.histc(x, 4, 0, 0)", ["GL110"]),
    ("y = x.histc(bins=1, min=-1, max=-1)", ["GL110"]),
    ("y = torch.histc(x, bins=4, min=0, max=3)", []),
    ("y = torch.histc(x, bins=n, min=0, max=n - 1)", []),  # the configuration decides
])
def test_histc_without_a_range_reads_it_on_the_host(body, rules):
    assert _rules(body) == rules


def test_an_op_result_indexed_by_a_list_is_on_the_device():
    """Only factories given no device build on the host; an op's result is where its inputs are."""
    assert _rules("h = torch.matmul(x, x)\ny = h[..., [0], :]") == ["GL208"]
