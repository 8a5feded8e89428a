"""A captured call resolved per class of the objects that reach it (branch ``capclass``,
:mod:`graphlint.static.receiverclasses`).

``record(model)`` captures ``model.step(...)``, which every model class inherits from ``Base``;
only ``Graphed`` passes itself. Inside ``Base.step``, ``self`` is then a ``Graphed``: its own
``block`` runs, not the eager ``Streamed.block``, and ``self.cache`` is the slot cache its own
``build`` stores, not the growing cache of ``Base.build``, which it overrides. Where a link is
not known by class (a base's store run through ``super()``, a store on an object from outside),
or the capture is passed both classes, the captured code keeps what it reaches."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import analyze, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "capclass"


@pytest.mark.parametrize("name", ["passed", "inherited", "stored", "both"])
def test_a_capture_runs_only_the_classes_its_callers_pass(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_the_captured_step_is_the_graph_models_alone(monkeypatch, tmp_path):
    """The eager variant's layer and the growing cache are not captured code (nor hot at all here);
    the graph variant's layer, reached through the inherited step, is."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "passed")
    where = {(Path(f.path).name, f.rule) for f in result.findings if f.category != "meta"}
    assert where == {("models.py", "GL101")}


GETATTR = '''
    def __getattr__(self, name):  # answers any attribute: which cache it is is not known by class
        return getattr(self.backing, name)

    def decode(self, x, slots):'''


def _with_graphed(replace: str) -> set[tuple[str, str]]:
    files = {path: data.decode() for path, data in load(FIXTURES / "passed").items()}
    models = next(p for p in files if p.endswith("models.py"))
    files[models] = files[models].replace("\n    def decode(self, x, slots):", replace, 1)
    return {(Path(f.path).name, f.rule) for f in analyze(files) if f.category != "meta"}


def test_a_class_answering_attributes_itself_keeps_every_cache():
    assert ("caches.py", "GL307") in _with_graphed(GETATTR)
    assert ("caches.py", "GL307") not in _with_graphed("\n    def decode(self, x, slots):")
