"""The host loop around a replay, and what a captured function does once (issue 19; fresh19's
fastgen patterns, in look-alikes of our own under ``fixtures/static/genloop/``). Each folder is
linked on its own and reports exactly its ``# expect:`` markers, at their severities.

- ``round_generator``: a generator's ``while`` loop runs rounds around ``_round``, which replays a
  fixed run of steps (``for i in range(width)``, no exit): the round loop is the step loop, so all
  of ``_round`` (the ``.item()`` that sizes the round, before its replays) and what the loop calls
  (the stop flags' constant, the all-reduce's upload and read) are host-step code; a loop over the
  generator's items is too. Before the change only ``_round``'s own loop was.
- ``whole_decode`` (GOOD): a fixed run of steps called per request from a serving loop, and a
  decode with an exit of its own under a window loop that feeds its text back: each keeps its own
  loop as the step; what runs once per request is not reported.
- ``annotated_lists``: ``ids: List[int] = batch["ids"]`` in the decode arm of the host step is Python data,
  so ``torch.tensor(ids, device=...)`` is a pageable upload every step (it was missed while the
  neighbouring upload of a list comprehension was found); a ``List[Tensor]`` local is no host data.
- ``lazy_field``: ``if w.freqs is None: w.freqs = build(...)`` on a handed object whose field
  nothing resets is one-time set-up (the CPU-side loop in ``build`` is not reported); the same
  shape on a field a ``resize()`` sets back to ``None`` runs on any step and stays reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from static_helpers import analyze, host_steps
from test_static_fixture import assert_marked, load


ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "genloop"

HOST = {  # shape -> the functions taken for the host step, "(loop)" when only a loop's body
    "round_generator": {"runner.py:Runner._round", "runner.py:Runner.generate (loop)", "consumer.py:collect (loop)"},
    "whole_decode": {"engine.py:Engine.decode (loop)", "engine.py:Engine.until_stop (loop)"},
}


def host_step(shape: str) -> set[str]:
    return host_steps(load(SHAPES / shape), f"fixtures/static/genloop/{shape}/")


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    assert_marked(analyze(files), files)


@pytest.mark.parametrize("shape", sorted(HOST))
def test_the_step_loop_is_the_loop_that_decides_the_stop(shape):
    assert host_step(shape) == HOST[shape]


def test_a_reset_anywhere_keeps_the_lazy_branch_per_step():
    """Without ``resize()`` the table's branch is one-time set-up too: the reset decides it."""
    files = load(SHAPES / "lazy_field")
    weights = next(p for p in files if p.endswith("weights.py"))
    files[weights] = files[weights].replace(b"self.table = None  # a reset", b"pass  # no reset")
    assert [f for f in analyze(files) if f.rule == "GL105"] == []


def test_a_local_object_is_no_lazy_owner():
    """A field of an object the function builds itself is filled on every call."""
    files = load(SHAPES / "lazy_field")
    forward = next(p for p in files if p.endswith("forward.py"))
    files[forward] = files[forward].replace(
        b"    if w.freqs is None:", b"    w = Weights(w.embed.shape[1])\n    if w.freqs is None:")
    assert any(f.rule == "GL105" and f.path.endswith("weights.py") and f.line == 22 for f in analyze(files))
