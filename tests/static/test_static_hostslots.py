"""Host tensors made by helpers and staging (branch ``hostslots``).

A helper that returns its tensor on the device a parameter names (``fetch(params, "slots",
"cpu")``: ``value.to(device)``, memoized per device in a dict keyed by ``(id(value), device)``;
a wrapper handing the device on) hands back a host tensor when called with ``"cpu"``: its
``.tolist()`` reads nothing from a device. The same helper called with the layer's device still
reads back. A ring of buffers made with ``pin_memory=True`` holds host tensors: copying a host
tensor into one is host to host, while the same copy into a device buffer is still GL420 (also in a
project with a ``setattr`` of a computed name, which blocks the project-wide host-field facts). The
body of ``if ... and x.device.type == "cpu":`` holds no CUDA tensor in ``x``."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "hostslots"


def _lines(result):
    return {(f.path.rsplit("/", 1)[-1], f.line, f.rule) for f in result.findings}


def test_a_helper_placing_on_a_cpu_argument_returns_a_host_tensor(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "slotcache")
    lines = _lines(result)
    assert not {("mixer.py", 21, "GL102"), ("mixer.py", 24, "GL102")} & lines
    assert ("mixer.py", 31, "GL102") in lines  # the device twin still reads back


def test_a_host_tensor_copied_into_a_pinned_ring_is_host_to_host(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "slotcache")
    lines = _lines(result)
    assert ("engine.py", 36, "GL420") not in lines
    assert ("engine.py", 38, "GL420") in lines  # into a device buffer: still a pageable copy


def test_a_copy_under_a_cpu_device_test_is_host_to_host(monkeypatch, tmp_path):
    """``if staging and x.device.type == "cpu": buf.copy_(x)`` into a pinned buffer: no read-back; the
    same copy without the test still is one (GL112)."""
    lines = _lines(check_fixture(monkeypatch, tmp_path, FIXTURES, "slotcache"))
    assert ("embed.py", 20, "GL112") not in lines
    assert ("embed.py", 31, "GL112") in lines


def test_slotcache_findings_are_exactly_its_markers(monkeypatch, tmp_path):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, "slotcache"), FIXTURES, "slotcache")
