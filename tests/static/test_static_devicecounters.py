"""Device counters read back where Python needs a number (issue 19 recall, branch ``capturedattr``):

- a parameter every caller hands a device tensor, tested in an ``if`` (``if counts[row] == 0:``):
  a tensor by its callers (:mod:`graphlint.static.valueflow`), also when the call splats ``**kwargs``
  beside the arguments it names (:func:`graphlint.static.valuekinds.arg_kinds`: the splat fills none of
  them);
- a 1-D device tensor (``torch.zeros((rows,), device=...)``, a slice of one) reduced over its one
  dimension is a 0-dim one (:mod:`graphlint.static.scalars`), and ``list.insert(at, x)`` reads its
  position back as an int (:mod:`graphlint.static.matchers.scalar_index`).

Fixtures: ``fixtures/static/devicecounters/`` (markers say what each file reports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "devicecounters"


@pytest.mark.parametrize("name", ["eager", "captured"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))

