"""Exact-type checks in place of ``isinstance`` against libcst's ABC node classes, and searches a
file's source says it cannot need (``speed16``): the same facts, computed with less work."""

from __future__ import annotations

import inspect
import pickle
from pathlib import Path

import libcst as cst

from static_helpers import summarize

from graphlint.static import cstwalk
from graphlint.static.rebound import rebound_fields
from graphlint.static.steadyargs import SteadyArgs

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "static" / "exacttypes" / "rebinds.py"


def test_concrete_sets_answer_what_isinstance_answers():
    module = cst.parse_module(FIXTURE.read_text() + (ROOT / "graphlint" / "static" / "steadyargs.py").read_text())
    checked = 0
    for node in cstwalk.preorder(module):
        for base, classes in ((cst.BaseSmallStatement, cstwalk.SMALL_STATEMENTS),
                              (cst.BaseExpression, cstwalk.EXPRESSIONS),
                              (cst.BaseCompoundStatement, cstwalk.COMPOUND_STATEMENTS)):
            assert (type(node) in classes) == isinstance(node, base), (type(node).__name__, base.__name__)
            checked += 1
    assert checked > 3000


def test_only_libcst_node_classes_no_one_can_build_are_subclassed():
    """What makes ``type(n) is cst.Name`` the same question as ``isinstance(n, cst.Name)``: a node's
    class has no subclass (an abstract or ``Base*`` class has no node of its own)."""
    for cls in cstwalk.concrete(cst.CSTNode):
        if cls.__subclasses__():
            assert inspect.isabstract(cls) or cls.__name__.startswith("Base"), cls
    assert not cst.Name.__subclasses__() and inspect.isabstract(cst.BaseExpression)


def test_a_statement_walk_finds_every_rebound_field():
    module = cst.parse_module(FIXTURE.read_text())
    klass = next(s for s in module.body if type(s) is cst.ClassDef)
    expected = {"step_pos", "in_if", "in_elif", "in_else", "in_for", "in_for_else", "in_while", "in_while_else",
                "in_with", "in_try", "in_except", "in_try_else", "in_finally", "in_suite", "a", "in_nested",
                "in_case", "in_except_star"}
    assert rebound_fields(klass, calls=False) == expected
    assert rebound_fields(klass, calls=True) == expected
    with_call = cst.parse_module(FIXTURE.read_text() + "\n    def later(self):\n        setattr(self, 'x', 1)\n")
    klass = next(s for s in with_call.body if type(s) is cst.ClassDef)
    assert "*" in rebound_fields(klass, calls=True)


def test_the_source_says_which_searches_a_file_needs():
    steady = SteadyArgs()
    assert (steady.walrus, steady.setattr) == (True, True)  # nothing read: search everything
    steady.read_source("x = 1\n")
    assert (steady.walrus, steady.setattr) == (False, False)
    steady.read_source("y = [n for x in xs if (n := f(x))]\nsetattr(a, 'b', 1)\n")
    assert (steady.walrus, steady.setattr) == (True, True)


def test_skipping_the_searches_leaves_every_summary_the_same(monkeypatch):
    files = {p.name: p.read_bytes() for folder in ("steadyargs/segments", "exacttypes")
             for p in sorted((ROOT / "fixtures" / "static" / folder).glob("*.py"))}
    fast = [pickle.dumps(s) for s in summarize(files)]
    sites = [site for s in summarize({"walrus.py": files["walrus.py"]}) for fn in s.data.functions.values()
             for site in fn.calls if site.kinds is not None and len(site.kinds) > 2]
    assert [site.kinds[2] for site in sites] == [(3,)]  # ``len(self.sizes)``; not ``start``
    monkeypatch.setattr(SteadyArgs, "read_source", lambda self, text: None)
    full = [pickle.dumps(s) for s in summarize(files)]
    assert fast == full
