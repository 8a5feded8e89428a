"""``cstwalk.every_child`` against libcst's own ``children`` (and the walks read over it), and the walker
letting its tree go."""

from __future__ import annotations

import gc
import zlib
from pathlib import Path

import libcst as cst

from graphlint.static.cstwalk import every_child, jumps_out, preorder
from graphlint.static.grownstate import _names
from graphlint.static.keyedreturns import bound_in

from static_helpers import summarize

ROOT = Path(__file__).resolve().parents[2]


def _nodes(module: cst.Module):
    stack = [module]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def test_every_child_gives_libcsts_children_on_graphlints_own_sources():
    """The same nodes (as a multiset) for every node of every file here: every node class seen."""
    classes = set()
    for path in sorted((ROOT / "graphlint").rglob("*.py"))[::24]:
        for node in _nodes(cst.parse_module(path.read_text())):
            classes.add(type(node))
            assert sorted(map(id, every_child(node))) == sorted(map(id, node.children)), (path, type(node))
    assert len(classes) > 50


def _names_by_libcst(node):
    found, stack = set(), [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Name):
            found.add(cur.value)
        elif isinstance(cur, cst.Attribute):
            stack.append(cur.value)
        else:
            stack.extend(cur.children)
    return found


def test_names_read_skip_only_fields_that_hold_no_name():
    """``grownstate._names`` (over ``name_children``, whitespace and punctuation left out) reads
    the names libcst's ``children`` reach, for every statement and expression here; a keyword
    argument's name and an import's ``as`` name included."""
    checked = 0
    for path in sorted((ROOT / "graphlint").rglob("*.py"))[1::24]:
        for node in _nodes(cst.parse_module(path.read_text())):
            if isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement)):
                checked += 1
                assert _names(node) == _names_by_libcst(node), (path, type(node))
    assert checked > 1000
    call = cst.parse_expression("f(key=v, *rest)")
    assert _names(call) == {"f", "key", "v", "rest"}


def test_every_child_sees_keywords_and_whitespace():
    """A keyword argument's name is a child (libcst's ``children`` has it; the walker's own
    ``children`` skips it), and so is whitespace."""
    call = cst.parse_expression("f(key = v)")
    arg = call.args[0]
    kids = every_child(arg)
    assert arg.keyword in kids and arg.value in kids and arg.equal in kids
    assert not any(isinstance(k, str) for k in kids)


def test_a_summary_leaves_no_cycle_holding_its_tree():
    """The walker's closures refer to it; it is emptied after the walk, so the parsed tree is freed
    by reference counting, not left for the worker's collection after each file."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        summarize({"m.py": "import torch\n\ndef f(x):\n    y = x + 1\n    return torch.cat([y, x])\n"})
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, cst.CSTNode)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert left == []


def _jumps_by_libcst(stmt) -> bool:
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return any(isinstance(s, (cst.Return, cst.Raise, cst.Break, cst.Continue)) for s in stmt.body)
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return False
    return any(_jumps_by_libcst(c) for c in stmt.children
               if isinstance(c, (cst.BaseSuite, cst.BaseStatement, cst.Else, cst.ExceptHandler,
                                 cst.ExceptStarHandler, cst.Finally, cst.MatchCase)))


def _binds_one_name(fn, name: str) -> bool:
    """What the walker asked before ``bound_in``: one walk of the body per name (``preorder``'s
    fields: a ``with``'s or an import's ``as`` name is not among them)."""
    for node in preorder(fn.body):
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            if any(n.name.value == name for n in node.names):
                return True
        elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.Del,
                               cst.AsName)):
            target = node.name if isinstance(node, cst.AsName) else node.target
            if any(isinstance(n, cst.Name) and n.value == name for n in preorder(target)):
                return True
    return False


def test_jumps_and_bindings_read_over_every_child_answer_as_over_libcsts_children():
    """``jumps_out`` (every ``if`` of every block asks it) walks the tree without libcst's visitor
    machinery: the same answers as a walk over libcst's ``children``, for every statement here, some
    of each answer among them. ``keyedreturns.bound_in`` (one walk per function) answers as one walk
    per name asked did, for every name of every function here."""
    answers, bound = set(), 0
    for path in sorted((ROOT / "graphlint").rglob("*.py")):
        if zlib.crc32(path.relative_to(ROOT).as_posix().encode()) % 48:
            continue  # a sample of about one file in 48, the same files whatever others are added
        for node in _nodes(cst.parse_module(path.read_text())):
            if isinstance(node, cst.BaseStatement):
                answers.add(jumps_out(node))
                assert jumps_out(node) == _jumps_by_libcst(node), (path, type(node))
            if isinstance(node, cst.FunctionDef):
                names = {n.value for n in _nodes(node) if isinstance(n, cst.Name)}
                assert {n for n in names if _binds_one_name(node, n)} == bound_in(node) & names, (path, node.name.value)
                bound += bool(bound_in(node))
    assert answers == {True, False} and bound > 20
