"""Buffers the host step fills with the step's data are its input, not a constant rebuilt
(:mod:`graphlint.static.stepdata`).

In the host step around a replay, a factory whose result is filled on the spot
(``torch.empty(s).exponential_()``, ``torch.ones(s).scatter_reduce(-1, idx, src, "prod")``), or a
local filled afterwards with a random draw (``q.exponential_()``) or with the step's values at the
step's places (``buf[mask] = ids[mask]``), holds the step's data (GL201's ``step_data: false``); a
factory that stays a constant (an operand, a literal fill, a constant written at a constant place)
is still reported."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from graphlint.static.stepdata import _fills
from static_helpers import check_fixture
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "datafill"


def test_the_host_steps_noise_and_merge_buffers_are_its_data(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "hoststep")
    assert_marked(result.findings, load(FIXTURES / "hoststep"))


def _call(src: str) -> cst.Call:
    return cst.parse_expression(src)


def test_what_fills_a_buffer():
    assert _fills("exponential_", _call("q.exponential_()"), False)  # a random draw, whatever its arguments
    assert _fills("copy_", _call("q.copy_(ids)"), False)
    assert not _fills("fill_", _call("q.fill_(0)"), False)  # a literal: still a constant
    assert not _fills("zero_", _call("q.zero_()"), False)
    assert _fills("scatter_reduce", _call("f.scatter_reduce(-1, idx, src, 'prod')"), True)
    assert not _fills("scatter_reduce", _call("f.scatter_reduce(-1, idx, src, 'prod')"), False)  # on a name: a new tensor
    assert not _fills("masked_fill", _call("f.masked_fill(0, 1)"), True)
