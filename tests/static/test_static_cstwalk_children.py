"""``cstwalk.every_child`` against libcst's own ``children``, and the walker letting its tree go."""

from __future__ import annotations

import gc
from pathlib import Path

import libcst as cst

from graphlint.static.cstwalk import every_child
from graphlint.static.grownstate import _names

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
