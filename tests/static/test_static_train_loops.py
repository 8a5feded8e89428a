"""A loop that trains each iteration is no serving loop: a function that always calls a function
that trains trains too (:func:`graphlint.static.losscode.trains_through`), so a training loop's
metric reads and timers are no decode step's; a serving loop that trains only when asked stays one."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "trainloops"


def test_a_training_loop_is_no_serving_loop(monkeypatch, tmp_path):
    name = "trainer.py"
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result, FIXTURES, name)
    functions = {e.function[1] for e in result.entries}
    assert {"serve", "sample"} <= functions
    assert not functions & {"train", "train_step", "Timer.start"}
