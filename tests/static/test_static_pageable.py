"""Per-step uploads from pageable host memory that graphlint main 7232230 missed (fresh26's
subspec), in look-alikes of our own under ``fixtures/static/pageable/``. Each folder is checked as a
user would and reports exactly its ``# expect:`` markers, at their severities:

- ``tree_verify``: a generator's host loop around a compiled step uploads, every step, a CPU tree's
  ids and depths (a dict of host tensors a method returns), its ancestor mask (``torch.cat`` onto
  a host tensor) and a verifier's accepted ids and rows (built by ``torch.cat`` and picks from host
  probabilities, returned through a wrapper that only hands the verifier's result on, in another
  file): GL420 in the host step. Silent twins: device tensors returned the same way, a wrapper
  that also returns a device tensor of its own, a dict holding a device tensor, pinned staging.
- ``lazy_table``: a positional table joined by ``torch.cat`` on the host and uploaded into ``self.table``
  only when an early return on ``self.table`` does not take (grown on a miss) is silent; the twin that
  rebuilds and uploads it every step is reported.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from static_helpers import assert_marked, check_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "pageable"


@pytest.mark.parametrize("shape", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(monkeypatch, tmp_path, shape):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, shape), FIXTURES, shape)


@pytest.mark.parametrize("code, host", [
    ('torch.cat([torch.tensor(xs, device="cpu"), y])', True),
    ("torch.stack([torch.tensor(xs), y])", True),
    ("torch.cat([x, y])", False),
    ("torch.cat(parts)", False),
    ('torch.tensor(xs, device="cpu").argmax()', True),
    ('torch.tensor(xs, device="cpu").argmax(out=buf)', False),
    ("x.argmax()", False),
    ('torch.tensor(xs).argmax() if greedy else torch.tensor(xs).multinomial(1)', True),
    ("torch.tensor(xs).argmax() if greedy else x.argmax()", False),
])
def test_what_a_host_tensor_makes_is_pageable(code, host):
    from graphlint.static.pageable import is_pageable
    from graphlint.static.tensors import TensorOracle

    oracle = TensorOracle({"torch": "torch"})
    assert is_pageable(cst.parse_expression(code), oracle) is host


def test_a_wrapper_forwards_only_when_every_return_hands_on_a_call():
    from static_helpers import summarize

    infos = {s.path: s.data for s in summarize({
        "m.py": "def a(x):\n    return b(x)\n\ndef b(x):\n    return x\n\n"
                "def c(x, f):\n    if f:\n        return x\n    return b(x)\n\n"
                "def d(x):\n    yield from b(x)\n"})}
    functions = infos["m.py"].functions
    assert functions["a"].forwards is True
    assert functions["c"].forwards is False
    assert functions["d"].forwards is False


@pytest.mark.parametrize("code, fields", [
    ("if self.pe is not None:\n    if self.pe.size(1) >= n:\n        return\n", {"pe"}),
    ("if self.pe is not None and self.pe.size(1) >= n:\n    return\n", {"pe"}),
    ("if self.pe is None:\n    self.pe = build(n)\n", set()),
    ("if self.pe is None:\n    def f():\n        return 1\n", set()),
    ("if n > self.limit:\n    return\n", {"limit"}),
])
def test_a_guard_is_an_if_on_a_field_whose_body_returns(code, fields):
    from graphlint.static.lazygrowth import guarded_fields

    assert guarded_fields(cst.parse_module(code).body[0]) == fields
