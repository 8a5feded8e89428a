"""Python values taken for device tensors, and a tensor's host copy used as a list (issue 19,
branch ``pykinds``):

- ``self.training`` is a module's mode, a Python bool (:func:`graphlint.static.valuekinds.is_number`):
  handed to a layer's ``forward(c, train)``, the callee's ``if train and dropping:`` reads nothing;
- a type test vouches for a name where its answer is known (:mod:`graphlint.static.pynarrow`): the right
  operand of ``isinstance(m, int) and m < 0``, of ``not isinstance(n, int) or n > 3``, the body of
  ``if isinstance(b, float):`` -- no tensor there, whatever a hot ``forward`` presumes of a parameter;
- ``rows.tolist()`` of a name not known 0-dim binds a Python list (:func:`graphlint.static.listrows.copied_list`):
  indexing a device tensor with it uploads an index tensor (GL208).

Fixtures: ``fixtures/static/pykinds/`` (markers say what each reports)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import analyze, check_fixture
from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "pykinds"


@pytest.mark.parametrize("name", ["typed", "eager"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


MOE = """
import torch
from torch import nn


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(4)])

    def forward(self, x, mask):
        out = torch.zeros_like(x)
        for e in range(len(self.experts)):
            slot, rows = torch.where(mask[e])
            row_list = {listed}
            out.index_add_(0, rows, self.experts[e](x[row_list]))
        return out


def decode(x, mask):
    layer = Experts()
    for _ in range(10):
        x = layer(x, mask)
    return x
"""


@pytest.mark.parametrize("listed, uploads", [("rows.tolist()", True), ("rows.sum().tolist()", False),
                                             ("rows", False)])
def test_a_host_copy_as_a_list_indexes_by_upload(listed, uploads):
    findings = analyze({"moe.py": textwrap.dedent(MOE.format(listed=listed))})
    assert any(f.rule == "GL208" for f in findings) == uploads


STRATEGY = """
import torch


class Strategy:
    def __init__(self):
        self.forbidden = [dict()]

    def block(self, log_probs):
        for path in range(log_probs.shape[0]):
            tokens = self.forbidden[path].get((1, 2), None)
            if tokens is not None:
                log_probs[path, list(tokens)] = -10e20

    def advance(self, log_probs):
        self.block(log_probs)
        return log_probs.argmax(-1)


def decode(model, ids, steps: int):
    strategy = Strategy()
    for _ in range(steps):
        logits = model(ids)
        ids = strategy.advance({scores})
    return ids
"""


@pytest.mark.parametrize("scores, uploads", [("torch.log_softmax(logits, -1)", True), ("logits.tolist()", False)])
def test_a_parameter_every_caller_hands_a_device_tensor_uploads_a_list_index(monkeypatch, tmp_path, scores, uploads):
    """``log_probs[path, list(tokens)]`` in a helper: a device tensor by its callers (through a method
    that hands its own parameter on, learned in the value rounds of a check), so the list index is an
    upload; a host list handed instead is none."""
    (tmp_path / "strategy.py").write_text(textwrap.dedent(STRATEGY.format(scores=scores)))
    monkeypatch.chdir(tmp_path)
    result = run(resolve(load_config(cwd=tmp_path), paths=["strategy.py"], jobs=1, use_cache=False))
    assert any(f.rule == "GL208" for f in result.findings) == uploads
