"""A graph wrapper installed as a library model's ``forward`` records the original it kept, and the
layers an accelerator swapped into that model run inside the graph (issue 19, capturing engines):
``fixtures/static/wrappedcapture/``. Flow-insensitive, the kept ``forward`` also holds the wrapper
(stored on the same attribute later), and the model found by a computed ``getattr`` holds it too;
a capture never reaches a replay (:meth:`graphlint.static.callgraph.CallGraph.replays`), so the
captured call runs the library model -- and what was installed into it (:mod:`graphlint.static.installed`),
a store on an object that holds a library module beside a project instance included. A module
only listed in a table of options is never installed."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze
from test_static_fixture import assert_marker_severities, expected, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "static" / "wrappedcapture"


def test_the_swapped_layer_is_captured_and_the_listed_one_runs_nowhere():
    files = load(FIXTURE)
    findings = analyze(files)
    found = {(f.path, f.line, f.rule) for f in findings}
    assert sorted(found - expected(files)) == [], "unexpected findings"
    assert sorted(expected(files) - found) == [], "missed hazards"
    assert_marker_severities(findings, files)
