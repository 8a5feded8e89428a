"""One-line blocks (``if done: break``) read like the same block spelled over two lines.

libcst gives ``if t: break`` a ``SimpleStatementSuite`` whose ``body`` holds the small statements
themselves, not lines: predicates that looked for a ``SimpleStatementLine`` as the block's last
element answered "no jump, no exit, no stop" for every one-liner, so a read after ``if x is None:
return`` looked reachable from the ``return`` and a one-line stop flag was no stop test."""

from __future__ import annotations

import libcst as cst
import pytest

from graphlint.static.cstwalk import ends_in_jump, last_returns, top_small_statements
from graphlint.static.handback import ends_in_exit
from graphlint.static.stopchecks import stops_loop

PAIRS = [  # (one-line spelling, two-line spelling) of the same if-statement
    ("if t: break\n", "if t:\n    break\n"),
    ("if t: continue\n", "if t:\n    continue\n"),
    ("if t: return x\n", "if t:\n    return x\n"),
    ("if t: raise E\n", "if t:\n    raise E\n"),
    ("if t: x = 1; return x\n", "if t:\n    x = 1\n    return x\n"),
    ("if t: stop = True\n", "if t:\n    stop = True\n"),
    ("if t: x = 1\n", "if t:\n    x = 1\n"),
    ("if t: return x; y = 2\n", "if t:\n    return x\n    y = 2\n"),
]


def _if(src: str) -> cst.If:
    stmt = cst.parse_statement(src)
    assert type(stmt) is cst.If
    return stmt


@pytest.mark.parametrize(("one", "two"), PAIRS)
def test_a_one_line_block_answers_as_its_two_line_spelling(one, two):
    a, b = _if(one), _if(two)
    assert ends_in_jump(a.body) == ends_in_jump(b.body)
    assert last_returns(a.body) == last_returns(b.body)
    assert ends_in_exit(a.body) == ends_in_exit(b.body)
    assert stops_loop(a) == stops_loop(b)
    assert [type(s) for s in top_small_statements(a.body)] == [type(s) for s in top_small_statements(b.body)]


def test_the_one_liners_are_read_for_what_they_are():
    assert ends_in_jump(_if("if t: break\n").body)
    assert ends_in_jump(_if("if t: raise E\n").body)
    assert not ends_in_jump(_if("if t: x = 1\n").body)
    assert last_returns(_if("if t: return x\n").body)
    assert not last_returns(_if("if t: continue\n").body)
    assert ends_in_exit(_if("if t: return x\n").body)
    assert not ends_in_exit(_if("if t: break\n").body)
    assert stops_loop(_if("if nxt == eos: stop = True\n"))
    assert not stops_loop(_if("if t: fresh = True\n"))


def test_an_if_whose_every_branch_returns_on_one_line_never_falls_off():
    body = cst.parse_module("def f(x):\n    if x: return 1\n    else: raise E\n").body[0].body
    assert ends_in_exit(body)
    body = cst.parse_module("def f(x):\n    if x: return 1\n    else: y = 2\n").body[0].body
    assert not ends_in_exit(body)
