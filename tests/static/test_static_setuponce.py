"""One-time set-up inside functions a decode step calls (fresh27's exllamav3 shapes), in
look-alikes of our own under ``fixtures/static/setuponce/``. Each folder is linked on its own and
reports exactly its ``# expect:`` markers, at their severities (every folder fails on main f59da113):

- ``slot_memo``: a table looked up in a dict of the object's own under the batch's slot tuple or row
  count (``bt = self.cache.get(k)`` / ``if bt is None: ...; self.cache[k] = bt``) is built once per
  key (:mod:`.memoguards`, a per-object memo through the local the lookup binds). A key naming the
  step's position, a miss that never stores and a dict made in the function rebuild every step.
- ``flag_conjunct``: ``if self.split and not self.filled: ...; self.filled = True`` runs once per
  load (:func:`.runonce.once_flag`, a flag as one conjunct of the test). A flag nothing sets and
  ``if a or not self.filled`` stay per step.
- ``armed_callee``: ``if not self.comp.ready: self.comp.build()`` where ``build`` sets ``self.ready
  = True`` first (:mod:`.armedcalls`): what ``build`` does is set-up. A build that sets another
  flag, or the flag only on one path, stays per step.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from static_helpers import analyze
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "setuponce"


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    assert_marked(analyze(files), files)
