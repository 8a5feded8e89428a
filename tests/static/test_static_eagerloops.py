"""The eighteenth set's eager-loop misses, each a mechanism with fixtures of its own (branch ``eagerloops``).

- A layer stack of deep copies (``nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])``) runs
  the prototype layer's forward (:mod:`graphlint.static.libflows`): the per-layer code is reached.
- A cache grown in one arm of a conditional expression (``past = torch.cat([past, p]) if past is not
  None else p``) grows (:mod:`graphlint.static.matchers.growing_concat`).
- Training-only code is not the decode step (:mod:`graphlint.static.guards`): ``if x.requires_grad:``,
  the rest after ``if ... or not x.requires_grad: return``, a module's ``if __name__ == "__main__":``.
- Device maxima used as sizes: a parameter the function reduces whole (``x_lens.max()``) learns that
  its callers pass a device tensor (:mod:`graphlint.static.valueflow`) -- a caller's annotated
  parameter handed on counts as its annotation says when nothing calls the caller
  (:mod:`graphlint.static.paramkinds`), ``torch.LongTensor(...)`` is a (host) tensor -- and
  ``F.pad``'s amounts are sizes (:mod:`graphlint.static.matchers.scalar_index`).
- ``tok in stop_ids`` with ``tok`` a device tensor and ``stop_ids`` a Python list or tuple asks
  ``bool(tok == x)`` of each element: a read per element, GL105 (:mod:`graphlint.static.matchers.truth_test`).
- A counter reset only in a block that leaves the loop (``made = 0; break``) is still a counter:
  ``if made == 0:`` runs on the first iteration only (:mod:`graphlint.static.iterations`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import check_fixture
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "eagerloops"


@pytest.mark.parametrize("name", ["clones", "maxima", "listed"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


@pytest.mark.parametrize(("test", "branch"), [
    ("x.requires_grad", "body"),
    ("not x.requires_grad", "orelse"),
    ("torch.jit.is_scripting() or not x.requires_grad", "orelse"),
    ("self.training or x.requires_grad", "body"),
    ("flag or x.requires_grad", None),  # a side decode may take: no guard
])
def test_training_only_tests(test, branch):
    import libcst as cst

    from graphlint.static.guards import guarded_branch
    from graphlint.static.options import DEFAULT_GUARDS, DEFAULT_PREFILL_GUARDS

    found = guarded_branch(cst.parse_expression(test), {"torch": "torch"}, DEFAULT_GUARDS, DEFAULT_PREFILL_GUARDS)
    assert found == branch


@pytest.mark.parametrize(("test", "main"), [('__name__ == "__main__"', True), ('"__main__" == __name__', True),
                                            ('__name__ == "models.layers"', False), ("name == '__main__'", False)])
def test_a_self_test(test, main):
    import libcst as cst

    from graphlint.static.guards import main_test

    assert main_test(cst.parse_expression(test)) is main
