"""A model's training forward that always computes a loss is training code, though it calls no
``.backward()``: no host step around the compiled encoder it calls, nothing it alone reaches is
checked (:mod:`graphlint.static.losscode`)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "trainforward"


def test_a_loss_computing_forward_is_no_host_step(monkeypatch, tmp_path):
    name = "speech_model.py"
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result, FIXTURES, name)
    functions = {e.function[1] for e in result.entries}
    assert {"SpeechModel.decode", "Tagger.forward"} <= functions
    assert not functions & {"SpeechModel.forward", "FlowHead.compute_loss", "FlowHead.compute_loss.velocity"}
