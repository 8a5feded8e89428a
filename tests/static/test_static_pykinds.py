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
