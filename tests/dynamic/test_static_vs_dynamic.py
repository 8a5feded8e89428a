"""Static findings checked against what the dynamic harness observes on real code: dsv4's eager
reference decoder, traced on the CPU, cross-referenced with `graphlint check` on the same package.

Every line the tracer sees go wrong is a line the static half flags, except inside `attend()`:
its einsum/view shapes grow with the KV length, a fact that does not flow across the call from
`attend_eager` (where the growing key list *is* flagged, GL308). That known static miss stays
visible here and in the inventory as "dynamic only", so a regression on either side fails this test.
"""

from __future__ import annotations

import pytest

from graphlint.crossref import CONFIRMED, DYNAMIC_ONLY, cross_reference
from graphlint.dynamic.run import Request, run_inventory
from graphlint.dynamic.target import DEFAULT_TARGET

from dynamic_helpers import ROOT


@pytest.mark.slow
def test_static_half_flags_every_line_the_tracer_sees_on_the_eager_engine(monkeypatch):
    monkeypatch.chdir(ROOT)
    inv = run_inventory(Request(target=DEFAULT_TARGET, options={"decoder": "eager"}, cpu=True))
    findings = inv.findings()
    xref = cross_reference(findings, sorted({e for d in inv.devices for e in d.entries}))
    assert xref.ran, xref.detail
    misses = {(f.path, f.function) for f in findings if xref.of(f) == DYNAMIC_ONLY}
    assert misses == {("dsv4/attention.py", "attend")}
    confirmed = {(f.path, f.line) for f in findings if xref.of(f) == CONFIRMED}
    assert len(confirmed) >= 12  # 14 distinct lines when this was written
    # both halves see the reference MoE's host round trip: bincount(...).tolist() and its uses
    assert {("dsv4/moe.py", 58), ("dsv4/moe.py", 66), ("dsv4/moe.py", 67)} <= confirmed
    # what only the static half sees are branches and slices the two traced steps did not reach
    assert all(f.path.startswith("dsv4/") and f.category in ("data-dependent", "allocation", "cross-device")
               for f in xref.static_only)
