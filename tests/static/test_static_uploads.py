"""Missed hazards of fresh23's engines, in look-alikes of our own under ``fixtures/static/uploads/``.
Each folder is checked as a user would and reports exactly its ``# expect:`` markers, at their
severities (each fails on main ff4e0d8):

- ``inline_copy``: a host step's ``buf.copy_(torch.from_numpy(arr))`` / ``copy_(torch.tensor(xs))``
  into a device buffer is a pageable upload every step (GL420, a warning in the host step); into a
  pinned staging buffer or a CPU tensor, or from a pinned view, it is silent.
- ``weight_transpose``: ``weight.t().contiguous()`` in a helper a captured layer hands its buffer
  copies the whole weight every replay (GL206); ``.contiguous()`` of the weight itself, of a
  transposed activation, or a transposed copy made once at load is silent.
- ``flag_exit``: ``if self.inited: return`` with the rest arming the flag (``self.inited.data.copy_(
  torch.Tensor([True]))``) is lazy set-up, its flag write silent; a rest writing a false value keeps
  its upload, and so does a view the host step builds anew every step behind a plain ``self._built =
  True`` flag (left alone: the object may be the step's own).
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from static_helpers import assert_marked, check_fixture

from graphlint.static.weightargs import converts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "uploads"


@pytest.mark.parametrize("shape", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(monkeypatch, tmp_path, shape):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, shape), FIXTURES, shape)


@pytest.mark.parametrize("code, copies", [
    ("w.t().contiguous()", True),
    ("w.T.contiguous()", True),
    ("w.transpose(0, 1)[0].contiguous()", True),
    ("w.permute(2, 0, 1).contiguous()", True),
    ("w.float()", True),
    ("w.contiguous()", False),
    ("w.view(4, -1).contiguous()", False),
    ("w.t().sum()", False),
])
def test_contiguous_converts_only_a_transposed_view(code, copies):
    assert converts(cst.parse_expression(code)) is copies


@pytest.mark.parametrize("write, arms", [
    ("self.inited.data.copy_(torch.Tensor([True]))", True),
    ("self.inited.fill_(1)", True),
    ("self.inited.data.copy_(torch.tensor([1]))", True),
    ("self.inited.data.copy_(torch.Tensor([0]))", False),
    ("self.inited.data.copy_(torch.zeros(1))", False),  # the size, not the value
    ("self.inited.data.copy_(torch.empty(1))", False),
])
def test_only_a_true_value_written_into_the_flag_arms_it(write, arms):
    from graphlint.static.runonce import armed_after

    body = cst.parse_module(f"def f(self):\n    if self.inited:\n        return\n    {write}\n").body[0].body.body
    assert armed_after(body[0], body[1:]) is arms
