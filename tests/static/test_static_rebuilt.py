"""The fixture ``fixtures/static/rebuilt``: an eager generate loop over a toy decoder whose attention
updates its cache functionally (``keys = keys.index_copy(...)``, handed back to the caller), a
module rewriting its buffer whole (``self.seen = self.seen.scatter(...)``), a preallocated id
buffer rebuilt per token, and a top-n step passing a 0-dim device tensor as ``topk``'s ``k``.
Beside each, the spelling that copies or reads nothing: in-place ``index_copy_``, the step's own
scores through ``masked_fill``/``scatter``, a temporary made by ``torch.roll``, an int ``k``."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "rebuilt"


def found() -> list[tuple[str, int, str, str]]:
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    return sorted((f.path, f.line, f.rule, f.severity) for f in analyze(files))


def test_buffers_rebuilt_whole_and_the_device_k_are_reported_and_nothing_else():
    assert found() == [
        ("generate.py", 11, "GL111", "error"),  # torch.topk(logprobs, k=k), k = counts.max() on one side
        ("generate.py", 27, "GL210", "error"),  # ids = ids.index_copy(...) in the token loop
        ("model.py", 15, "GL210", "error"),  # keys = keys.index_copy(...) of the caller's cache
        ("model.py", 16, "GL210", "error"),  # values = torch.index_copy(values, ...)
        ("model.py", 42, "GL210", "error"),  # self.seen = self.seen.scatter(...)
    ]
