"""A function only training code calls is training code (:func:`graphlint.static.coldcode.trained_only`):
a distillation step's sampler loops over a schedule, but each of its runs is part of one training
step, so its loop is no denoising loop; the twin sampler that ``generate`` calls too stays one."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

from graphlint.static.coldcode import trained_only
from graphlint.static.facts import CallSite

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "trainedonly"


def test_a_sampler_only_a_training_step_runs_is_no_step_loop(monkeypatch, tmp_path):
    name = "distill.py"
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result, FIXTURES, name)
    functions = {e.function[1] for e in result.entries}
    assert "sample" in functions
    assert "sample_keep_steps" not in functions


def _site(reference: bool = False) -> CallSite:
    return CallSite(("n", "f"), False, 0, frozenset(), reference)


def test_only_functions_every_caller_of_which_trains():
    train, helper, shared, serve, passed, alone = (("m.py", q) for q in ("train", "helper", "shared", "serve",
                                                                        "passed", "alone"))
    calls = {train: [(helper, _site()), (shared, _site()), (passed, _site())],
             helper: [(helper, _site())],  # its own recursion is no other caller
             serve: [(shared, _site()), (passed, _site(reference=True))]}
    found = trained_only({train}, calls)
    assert found == {train, helper}  # shared: serve calls it too; passed: handed on as a value; alone: no caller
