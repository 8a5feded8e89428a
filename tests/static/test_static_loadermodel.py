"""A model a loader method returns, captured by each runner subclass's own capture (branch
``loadermodel``; the shape of fresh18's nanoqwen3tts, in code of our own).

Three links: a package directory no import can spell (``voice-serve``) is found under the name it
is installed as (``voice_serve``), so the subclasses' bases and models resolve; a capture in a base
class's method that every subclass storing the model overrides records nothing of theirs, each
forward being attributed to its own runner's capture (and a store into a library object's field,
``self.tokenizer.model = ...``, opens no runner's field); a read in the arm of an ``if`` before
that arm's replay is an extra sync of the step, though the other arm replays first in the source."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.contexts import exclusive
from test_static_fixture import assert_marked, load
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "loadermodel"


def test_the_loaded_models_are_captured_code_and_the_read_before_the_replay_a_cost(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "voice-serve")
    assert_marked(result.findings, load(FIXTURES / "voice-serve"))


def test_each_forward_is_attributed_to_its_own_runners_capture(monkeypatch, tmp_path):
    """The base runner's capture records neither model (each subclass overrides it), nor does any
    capture record the codec's replaying forward; the talker is also recorded by its chunked graph,
    which sorts first."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "voice-serve")
    graph = {e.function[1]: e.reason.rpartition(" in ")[2] for e in result.entries if e.context == "graph"}
    assert graph == {"Talker.forward": "ChunkGraph.__init__", "Predictor.forward": "PredictorRunner.capture"}


def test_conditions_one_of_which_negates_a_test_of_the_other_never_hold_together():
    long, eager = ("t", ("p", "long")), ("t", ("f", "eager"))
    assert exclusive((long,), (("not", long), eager))
    assert exclusive((("not", long),), (long,))
    assert not exclusive((long,), (eager,))
    assert not exclusive((), (("not", long),))  # a replay outside the ``if`` runs before either arm
