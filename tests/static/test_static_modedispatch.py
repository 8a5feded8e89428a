"""The fixture ``fixtures/static/modedispatch``: a runner captures a toy LM's decode step per batch
size with a batch it builds as ``Batch(kind=StepKind.DECODE, ...)``, runs the step eagerly for sizes
no graph holds (under ``is_decode()``) and prefill eagerly. The forward's prefill-only work sits
behind ``batch.kind.takes_prompt()`` / ``not batch.kind.is_decode()`` and a mixer dispatches on
``is_decode()``: neither the capture nor the eager decode step runs those arms
(:mod:`graphlint.static.modetests`, :mod:`graphlint.static.modenarrow`), so only the forward's own
``.item()`` is an error; the prefill arms stay the host step's warnings."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "modedispatch"
DECIDED = [(18, "GL102", "warning"), (31, "GL101", "warning"), (33, "GL101", "warning"), (34, "GL101", "error")]


def found(**replace: tuple[str, str]) -> list[tuple[int, str, str]]:
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    for name, (old, new) in replace.items():
        assert old in files[f"{name}.py"], old
        files[f"{name}.py"] = files[f"{name}.py"].replace(old, new)
    return sorted((f.line, f.rule, f.severity) for f in analyze(files) if f.path == "model.py")


def errors(**replace: tuple[str, str]) -> list[int]:
    return sorted({line for line, _, severity in found(**replace) if severity == "error"})


def test_mode_arms_no_capture_nor_eager_step_takes():
    assert found() == DECIDED


def test_a_capture_in_prefill_mode_keeps_them():
    assert errors(runner=("Batch(kind=StepKind.DECODE, ids=ids)", "Batch(kind=StepKind.PREFILL, ids=ids)")) \
        == [18, 19, 31, 33, 34]


def test_a_mode_the_capture_does_not_set_keeps_them():
    """``Batch(kind=kind)`` of a parameter: the captured batch's kind is unknown."""
    assert errors(runner=("Batch(kind=StepKind.DECODE, ids=ids)", "Batch(kind=self.kind, ids=ids)")) \
        == [18, 19, 31, 33, 34]


def test_a_field_stored_after_the_build_keeps_them():
    """``batch.kind = ...`` somewhere: the object's kind may change after it is built."""
    assert errors(runner=("    runner.capture()\n", "    runner.capture()\n    prompt.kind = StepKind.MIXED\n")) \
        == [18, 19, 31, 33, 34]


def test_an_enum_whose_members_may_alias_keeps_them():
    """``DECODE = 2`` and ``MIXED = 2``: ``MIXED`` is ``DECODE``, names do not tell members apart."""
    assert errors(batch=("    PREFILL = auto()\n    DECODE = auto()\n    MIXED = auto()\n",
                         "    PREFILL = 1\n    DECODE = 2\n    MIXED = 2\n")) == [18, 19, 31, 33, 34]


def test_a_batch_class_that_is_no_dataclass_keeps_the_capture_undecided():
    """A hand-written ``__init__`` may store anything under ``kind``: the captured batch's kind is
    not known from the keywords, so every arm stays captured code."""
    init = "    def __init__(self, kind, ids, starts=None):\n        self.kind, self.ids, self.starts = kind, ids, starts\n"
    got = errors(batch=("@dataclass\nclass Batch:\n    kind: StepKind\n    ids: torch.Tensor\n    starts: torch.Tensor = None\n",
                        "class Batch:\n" + init))
    assert got == [18, 19, 31, 33, 34]


def test_an_eager_step_not_under_the_test_keeps_them():
    """The eager decode step called outside the ``is_decode()`` branch: its batch may be any kind."""
    assert errors(runner=("    def step(self, batch):\n",
                          "    def step(self, batch):\n        self.decode_eager(batch)\n")) == [18, 19, 31, 33, 34]
