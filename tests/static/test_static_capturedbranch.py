"""The fixture ``fixtures/static/capturedbranch``: a runner captures a toy LM's decode step with
``cu_lengths=None`` and runs prefill eagerly with the lengths. The code under ``if cu_lengths is not
None:`` (a split by lengths read back, a mask helper that reads the longest length) never runs in
the graph: only the forward's own ``.item()`` is captured code (:mod:`graphlint.static.capturedvalues`)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "capturedbranch"


def found() -> list[tuple[str, int, str, str]]:
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    return sorted((f.path, f.line, f.rule, f.severity) for f in analyze(files) if f.path == "model.py")


def test_prefill_only_code_is_not_captured_code():
    assert found() == [("model.py", 27, "GL101", "error")]


def test_a_capture_that_passes_the_lengths_keeps_it(tmp_path):
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    files["runner.py"] = files["runner.py"].replace("cu_lengths=None)", "cu_lengths=self.static_lengths)")
    errors = sorted((f.line, f.rule) for f in analyze(files) if f.path == "model.py" and f.severity == "error")
    assert errors == [(10, "GL102"), (27, "GL101")]
