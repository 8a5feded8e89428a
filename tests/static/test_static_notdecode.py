"""Code that is not the decode step, and values that are not what their spelling says: a profiling
export sized to zero unless profiling is built in (:mod:`graphlint.static.guards`), and a position
annotated ``int`` that every caller hands a device tensor (:mod:`graphlint.static.overrules`), a type
test of a Python number (:func:`graphlint.static.branchwalk.given_none_test`)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "notdecode"


def test_profiler_sized_branch_is_off_the_decode_path(monkeypatch, tmp_path):
    name = "profiler_size.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_int_position_every_caller_hands_a_tensor_is_a_device_gather(monkeypatch, tmp_path):
    name = "device_position.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_type_test_of_python_number_is_a_dead_conversion(monkeypatch, tmp_path):
    name = "host_typetest.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)
