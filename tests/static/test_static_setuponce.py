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
- ``needs_slot``: ``if self.bc.needs_configure(b, s): self._configure(b, s)`` where ``_configure``
  hands the object the slot (``self.bc.configure_slot(b, s, ...)``) runs once per slot
  (:func:`.armedcalls.answered`). A branch that sets up another object, or does another verb than
  the predicate asks, stays per step.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from static_helpers import analyze
from test_static_fixture import assert_marked, load

from graphlint.static.armedcalls import armed_call, arms_first
from graphlint.static.memoguards import object_miss
from graphlint.static.runonce import once_flag
from graphlint.static.tensorfacts import FunctionFacts

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "setuponce"


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    assert_marked(analyze(files), files)


def _function(code: str) -> tuple[cst.FunctionDef, FunctionFacts]:
    defn = cst.parse_module(textwrap.dedent(code)).body[0]
    return defn, FunctionFacts(defn=defn)


def _miss(code: str, positions: tuple = ()) -> bool:
    """:func:`object_miss` of the function's last ``if``, with the statement before it."""
    defn, facts = _function(code)
    facts.params = {p.name.value for p in defn.params.params}
    facts.positions = set(positions)
    body = defn.body.body
    at = max(i for i, s in enumerate(body) if type(s) is cst.If)
    return object_miss(body[at], body[at - 1] if at else None, facts)


@pytest.mark.parametrize("code", [
    "def f(self, k):\n    v = self.d.get(k)\n    if v is None:\n        v = build()\n        self.d[k] = v\n    return v\n",
    "def f(self, k):\n    v = self.d.get(k)\n    if not v:\n        v = build()\n        self.d[k] = v\n",
    "def f(self, a, b):\n    key = (a, b)\n    if key not in self.d:\n        self.d[key] = build()\n",
    "def f(self, rows):\n    k = tuple(r.slot for r in rows)\n    if self.d.get(k) is None:\n        self.d[k] = build()\n",
])
def test_a_miss_of_the_objects_own_dict_that_stores_under_the_key_is_set_up(code):
    assert _miss(code)


@pytest.mark.parametrize("code", [
    # the store is missing, under another key, into another dict
    "def f(self, k):\n    v = self.d.get(k)\n    if v is None:\n        v = build()\n    return v\n",
    "def f(self, k, j):\n    v = self.d.get(k)\n    if v is None:\n        self.d[j] = build()\n",
    "def f(self, k):\n    v = self.d.get(k)\n    if v is None:\n        self.e[k] = build()\n",
    # a dict of the function's own, or a name the lookup did not bind just before
    "def f(self, k):\n    d = {}\n    v = d.get(k)\n    if v is None:\n        d[k] = build()\n",
    "def f(self, k, v):\n    w = self.d.get(k)\n    if v is None:\n        self.d[k] = build()\n",
    # a key read from the step's data: a size, a loop variable
    "def f(self, x):\n    n = x.shape[1]\n    if n not in self.d:\n        self.d[n] = build()\n",
    "def f(self, xs):\n    for n in xs:\n        pass\n    if n not in self.d:\n        self.d[n] = build()\n",
])
def test_anything_else_is_no_per_object_memo(code):
    assert not _miss(code)


def test_a_key_naming_the_steps_position_is_no_memo():
    code = "def f(self, pos):\n    v = self.d.get(pos)\n    if v is None:\n        self.d[pos] = build()\n"
    assert _miss(code) and not _miss(code, positions=("pos",))


def _if(code: str) -> cst.If:
    return cst.parse_module(textwrap.dedent(code)).body[0]


def test_a_flag_in_one_conjunct_is_the_guards_flag():
    assert once_flag(_if("if self.split and not self.filled:\n    pass\n")) == "filled"
    assert once_flag(_if("if self.filled == False and n > 2:\n    pass\n")) == "filled"
    assert once_flag(_if("if self.split or not self.filled:\n    pass\n")) is None


def test_a_guard_on_another_objects_flag_names_the_methods_it_calls_there():
    assert armed_call(_if("if not self.comp.ready:\n    self.comp.build()\n")) == "armedby:ready@build"
    assert armed_call(_if("if a and not model.ready:\n    model.prep(1)\n    model.go()\n")) == "armedby:ready@go+prep"
    assert armed_call(_if("if not self.comp.ready:\n    self.other.build()\n")) is None
    assert armed_call(_if("if not self.ready:\n    self.build()\n")) is None  # self's own: runonce


def test_asking_an_object_whether_it_needs_a_verb():
    assert armed_call(_if("if self.bc.needs_configure(b):\n    self.bc.configure_slot(b)\n")) == "asks:self.bc.configure@"
    assert armed_call(_if("if self.bc.needs_configure(b):\n    self._setup(b)\n")) == "asks:self.bc.configure@_setup"
    assert armed_call(_if("if self.bc.needs_configure(b):\n    run(b)\n")) is None


def test_a_method_arms_the_flags_it_sets_before_anything_could_return():
    defn, _ = _function("def build(self):\n    self.ready = True\n    if x:\n        return\n    self.late = True\n")
    assert arms_first(defn) == {"ready"}
    defn, _ = _function("def build(self, n):\n    if n > 4:\n        self.ready = True\n")
    assert arms_first(defn) == set()


def test_a_branch_that_returns_the_calls_result_is_the_step_itself():
    """``if g.needs_capture(n): return g.capture(step, x)`` runs the step on that call (and is the
    capture's evidence): not set-up (fixtures/static/engines/passedcapture)."""
    assert armed_call(_if("if self.g.needs_capture(n):\n    return self.g.capture(f, x)\n")) is None
    assert armed_call(_if("if not self.g.ready:\n    return self.g.build(x)\n")) is None
    assert not _miss("def f(self, k):\n    v = self.d.get(k)\n    if v is None:\n        self.d[k] = v = build()\n        return run(v)\n")
