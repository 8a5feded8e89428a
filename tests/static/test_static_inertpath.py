"""The fixture ``fixtures/static/inertpath``: a graph runner captures a toy LM once, handing its
caller's keywords on through ``**kwargs`` (``capture(model, x, use_cache=True)`` /
``capture(model, x, debug=True)``); the model hands them on again through ``*args, **kwargs``.
The mask code it guards with ``and`` / a conditional expression is inert at decode (no caller
passes a mask); the sync under ``debug`` is live (the serving runner passes it)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "inertpath"


def found() -> list[tuple[int, str, str]]:
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    return sorted((f.line, f.rule, f.severity) for f in analyze(files) if f.path == "model.py")


def test_only_the_live_sync_is_reported():
    assert [(line, rule) for line, rule, _ in found()] == [(18, "GL101")]
