"""``self.training`` is False wherever a decode step reads it (:data:`graphlint.static.valueatoms.MODE_FLAG`):
a parameter a module's forward hands its mode to (``self.cond(c, self.training)``) decides the callee's
``if train and ...:`` dead, and what only that branch reaches -- a classifier-free-guidance dropout
built on the host -- is no step's; a branch eval mode takes (``if not train:``) stays reported."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "trainmode"


def test_a_module_s_own_mode_handed_down_is_eval(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "talker.py")
    assert_marked(result, FIXTURES, "talker.py")
