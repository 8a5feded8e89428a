"""Objects built every step (:mod:`graphlint.static.perstep`): a view the decode loop builds anew
each step runs its lazy one-time set-up every step; an object that lives across steps, and a
class-level cache, keep theirs as set-up."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze, check_fixture, codes
from test_static_fixture import assert_marked

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "perstep"


def test_a_view_built_every_step_uploads_its_lazy_slot_ids_every_step(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "views.py")
    path = (FIXTURES / "views.py").relative_to(ROOT).as_posix()
    assert_marked(result.findings, {path: (FIXTURES / "views.py").read_bytes()})


def test_a_view_built_once_before_the_loop_keeps_its_lazy_set_up():
    source = (FIXTURES / "views.py").read_text()
    hoisted = source.replace("""    for _ in range(steps):
        view = pool.decode_view(slots)
""", """    view = pool.decode_view(slots)
    for _ in range(steps):
""")
    assert hoisted != source
    assert codes(analyze({"views.py": source})) == ["GL204"]
    assert codes(analyze({"views.py": hoisted})) == []


LAZY_CAPTURE = """
import torch


class Graphed:
    def __init__(self, fn):
        self.fn, self._graph = fn, None

    def __call__(self, x):
        if self._graph is None:
            self._graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self._graph):
                self._out = self.fn(x)
        self._graph.replay()
        return self._out
"""


def test_a_rule_reported_anywhere_stays_reported_in_lazy_set_up():
    assert codes(analyze({"graphed.py": LAZY_CAPTURE})) == ["GL501"]  # the capture's missing stream
