"""The thirteenth set's misses, each a mechanism with fixtures of its own (branch ``f13miss``).

- An eager loop's own stop test is a per-token sync, never its one read of the step: an ``if``
  comparing the step's tokens that breaks, returns or sets a stop flag (``stopchecks.stops_loop``);
  around a compiled step it is the host step's one read; a step only an off-by-default compile
  captures runs eagerly by default (``HostReads.eager_loop``).
- A ``with`` block always runs: a read in it is followed by the reads after it
  (``stmtpaths.follows_a_read``), so a statistic read inside a call's argument after the accept
  helpers' read is a second read.
- ``F.pad`` of a tensor onto itself grows it like ``torch.cat`` (``growing_concat.PADS``).
- Rows of a host-data field (``self.tables[:n]``, a numpy array) are host data: uploading them with
  ``torch.tensor(..., device=...)`` every step is GL204."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "f13miss"


@pytest.mark.parametrize("name", ["stoptest", "argread", "padgrow", "npupload"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_an_eager_loops_stop_test_is_a_sync_and_a_compiled_loops_is_its_one_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "stoptest")
    rated = {(f.line, f.rule): f.severity for f in result.findings}
    assert rated[(21, "GL105")] == "error" and rated[(35, "GL105")] == "error"  # flag set, scan and break
    assert rated[(44, "GL101")] == "info"  # the token the host appends
    assert rated[(63, "GL105")] == "info"  # around a compiled step
    assert rated[(82, "GL105")] == "warning"  # compiled only when asked: eager by default


def test_a_read_in_a_call_argument_after_a_with_block_read_is_a_second_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "argread")
    rated = {(f.line, f.rule): f.severity for f in result.findings}
    assert rated[(26, "GL101")] == "info" and rated[(55, "GL101")] == "error"
