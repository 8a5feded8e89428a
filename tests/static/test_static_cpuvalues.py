"""Tensors that live on the host by construction stay there (branch ``cpuvalues``).

A verifier moves the target's probabilities to the host once and walks them: a row
(``host[i].squeeze(0)``), its ``argmax`` / ``multinomial`` / ``topk``, a comparison, a
``torch.cat`` onto an accumulator made with ``device="cpu"`` are host tensors, and so is what the
verifier returns -- through a helper that only hands the call on (``return accept(...)``) -- and
what a nested helper is handed by its calls (``spread(host)``, no longer taken for a value handed
out because its name is the callee). Reading
them (``.item()``) is no sync and joining them is no device allocation. The same walk over the
device probabilities still reads the device and grows a device tensor."""

from __future__ import annotations

from pathlib import Path

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "cpuvalues"


def test_host_rows_joins_and_returns_are_not_reported(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "treespec")
    assert_marked(result.findings, load(FIXTURES / "treespec"))


def test_the_device_twin_still_reads_and_grows(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "treespec")
    lines = {(f.path.rsplit("/", 1)[-1], f.line, f.rule) for f in result.findings}
    assert {("check.py", 35, "GL102"), ("check.py", 40, "GL101"), ("check.py", 44, "GL207"),
            ("check.py", 45, "GL101")} <= lines
    assert not {("check.py", 14, "GL207"), ("check.py", 15, "GL101"), ("check.py", 19, "GL102"),
                ("check.py", 25, "GL101"), ("engine.py", 23, "GL101")} & lines


def test_a_host_field_made_by_a_library_factory_is_host_bookkeeping(monkeypatch, tmp_path):
    """``self.free = torch.ones(n, dtype=torch.bool, device="cpu")`` (the flow IR leaves the store out): its
    ``nonzero()``, the ``.tolist()`` of the pages found and the index-put releasing them touch no
    device; an element of a host tensor handed in (``int(drafted[i])``) is no read either. The
    twin's mask made on the device is still read back."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "treespec")
    lines = {(f.path.rsplit("/", 1)[-1], f.line, f.rule) for f in result.findings}
    assert not {("pool.py", 12, "GL302"), ("pool.py", 15, "GL102"), ("pool.py", 18, "GL208"),
                ("check.py", 15, "GL104")} & lines
    assert {("pool.py", 26, "GL302"), ("pool.py", 29, "GL102")} <= lines


def test_a_field_handed_a_host_row_by_every_construction_is_host(monkeypatch, tmp_path):
    """``Slot(data[i], lengths[i])`` with ``lengths`` made on the CPU: ``self.length.item()`` reads host
    memory (a cache whose lengths live on the host by design); the device twin's still syncs."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "treespec")
    lines = {(f.path.rsplit("/", 1)[-1], f.line, f.rule) for f in result.findings}
    assert ("slots.py", 13, "GL101") not in lines
    assert ("slots.py", 22, "GL101") in lines
