"""Reads of tensors that live on the host are no device syncs (branch ``cpuread``).

A tensor made with an explicit ``device="cpu"`` / ``torch.device("cpu")`` (any factory, ``.to``),
and what a recursion hands on of its parameter (``walk(node, key[1:])``), keep what the callers
passed: a prefix cache's ``key[0].item()`` over CPU keys reads host memory. The same recursion
handed device rows still reads the device every call."""

from __future__ import annotations

from pathlib import Path

from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "cpuread"


def test_host_tensor_reads_are_not_reported(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "prefixcache")
    assert_marked(result.findings, load(FIXTURES / "prefixcache"))


def test_explicit_cpu_device_and_a_recursion_keep_the_host(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "prefixcache")
    lines = {(f.path.rsplit("/", 1)[-1], f.line) for f in result.findings if f.category == "host-sync"}
    assert not {("engine.py", 37), ("engine.py", 40), ("engine.py", 42), ("engine.py", 55)} & lines
    assert ("cache.py", 19) not in lines  # ``_walk``'s ``key[0].item()``: every caller passes CPU keys
    assert ("cache.py", 29) in lines  # ``stats``' read of the device rows it is handed
    assert ("engine.py", 35) in lines  # ``.to("cpu")`` of a device row: a real copy
