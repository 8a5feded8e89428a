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


def test_a_call_that_would_raise_type_error_passes_nothing():
    """A second captured call that leaves the required ``cu_lengths`` out (what a points-to
    over-approximation joins: a wrapper's ``text_model.model(...)`` resolved to every model) would
    raise ``TypeError``: it passes no values, so the prefill branch stays decided."""
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    files["model.py"] = files["model.py"].replace("def forward(self, ids, cu_lengths=None):",
                                                  "def forward(self, ids, cu_lengths):")
    files["runner.py"] = files["runner.py"].replace(
        "            self.static_out = self.model(self.static_ids, cu_lengths=None)\n",
        "            self.static_out = self.model(self.static_ids, cu_lengths=None)\n"
        "            self.model.forward(self.static_ids)\n")
    assert "self.model.forward(self.static_ids)" in files["runner.py"]
    errors = sorted((f.line, f.rule) for f in analyze(files) if f.path == "model.py" and f.severity == "error")
    assert errors == [(27, "GL101")]
