"""``valuefacts.loop`` finds what a loop binds without walking expressions
(:func:`graphlint.static.cstwalk.statement_binders`): the same nodes as a walk of every node."""

from pathlib import Path

import libcst as cst

from graphlint.static.cstwalk import BINDERS, STATEMENT_PARENTS, preorder, statement_binders

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "static" / "loopbinders" / "blocks.py"


def _every(node):
    return {id(n) for n in preorder(node) if type(n) in BINDERS}


def _loops(module):
    return [n for n in preorder(module) if type(n) in (cst.For, cst.While)]


def test_every_block_kind_is_entered():
    """The fixture binds a name in every kind of block under a loop; the walk without
    expressions finds each binder a walk of every node finds."""
    module = cst.parse_module(FIXTURE.read_text())
    for loop in _loops(module):
        assert {id(n) for n in statement_binders(loop)} == _every(loop)
    outer = _loops(module)[0]
    names = {n.value for b in statement_binders(outer) for n in preorder(b.target) if type(n) is cst.Name}
    assert set("abcdefghijknopqrstuwxy") | {"bb", "cc", "dd", "ee", "ff", "item"} <= names


def test_it_fails_without_a_kind():
    """The fixture is able to tell: without any one statement parent, a binder is missed."""
    module = cst.parse_module(FIXTURE.read_text())
    outer = _loops(module)[0]
    import graphlint.static.cstwalk as cstwalk

    for kind in STATEMENT_PARENTS:
        cstwalk.STATEMENT_PARENTS = STATEMENT_PARENTS - {kind}
        try:
            found = {id(n) for n in cstwalk.statement_binders(outer)}
        finally:
            cstwalk.STATEMENT_PARENTS = STATEMENT_PARENTS
        assert found != _every(outer), kind


def test_graphlint_sources():
    for name in ("walker.py", "valuefacts.py", "steadyargs.py", "budget.py"):
        module = cst.parse_module((ROOT / "graphlint" / "static" / name).read_text())
        for loop in _loops(module):
            assert {id(n) for n in statement_binders(loop)} == _every(loop)
