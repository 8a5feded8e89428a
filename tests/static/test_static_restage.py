"""Missed hazards of fresh25 (training from the twenty-eighth session), in look-alikes of our own under
``fixtures/static/restage/``. Each folder is checked as a user would and reports exactly its ``# expect:``
markers, at their severities (both fail on main 265cf89):

- ``script_loop``: a script's decode loop under ``if __name__ == "__main__":`` that prefills, captures
  on its second position and replays after (mirage's Qwen demo): the replay is the step's, and the
  branch around the loop runs the steps, so the read-back in the replay's branch is reported.
- ``grown_ids``: ids from a tokenizer grown by ``torch.cat`` in the loop (mamba.py's Jamba
  ``generate``): a tensor from the loop's head on, so ``ids[:, [i]]`` uploads an index every token;
  its twin reads ``ids[:, i:i + 1]``, a view.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from static_helpers import assert_marked, check_fixture

from graphlint.static.grownnames import grown_names
from graphlint.static.replaybranches import replays_in_loop, replays_instead

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "restage"


@pytest.mark.parametrize("shape", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(monkeypatch, tmp_path, shape):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, shape), FIXTURES, shape)


def _loop(code: str) -> cst.For:
    return cst.parse_module(code).body[0]


def _replay_call(loop: cst.For) -> cst.Call:
    from graphlint.static.cstwalk import preorder
    return next(n for n in preorder(loop) if type(n) is cst.Call and type(n.func) is cst.Attribute
                and n.func.attr.value == "replay")


def _captures(node: cst.CSTNode) -> bool:
    return "graph(" in cst.Module(body=[]).code_for_node(node)


@pytest.mark.parametrize("code, instead", [
    # the replay of every step after the one that captured
    ("for p in range(n):\n    if p == 1:\n        with graph(g):\n            y = f(x)\n    else:\n        g.replay()\n", True),
    ("for p in range(n):\n    if p > 1:\n        g.replay()\n    elif p == 1:\n        with graph(g):\n            y = f(x)\n", True),
    # a warm-up replay of each graph a loop over batch sizes captures: not a step's
    ("for bs in sizes:\n    with graph(g[bs]):\n        y = f(x)\n    g[bs].replay()\n", False),
    ("for bs in sizes:\n    if bs in g:\n        with graph(g[bs]):\n            y = f(x)\n        g[bs].replay()\n", False),
])
def test_a_replay_counts_in_a_capturing_loop_only_in_a_branch_exclusive_of_the_capture(code, instead):
    loop = _loop(code)
    assert replays_instead(loop, _replay_call(loop), _captures) is instead


def test_a_branch_runs_the_steps_only_when_a_replay_it_recorded_sits_in_a_loop_inside_it():
    assert replays_in_loop((((3,), ()),), [])  # the loop 3 is inside the branch
    assert not replays_in_loop((((3,), ()),), [3])  # the branch is inside loop 3: a replay once per iteration
    assert not replays_in_loop(((((), ()),)), [])  # a replay outside any loop: the capture's first replay


@pytest.mark.parametrize("code, grown", [
    ("for i in r:\n    ids = torch.cat([ids, t], dim=1)\n", {"ids"}),
    ("while go:\n    if k:\n        ids = torch.cat((ids, t))\n", {"ids"}),
    ("for i in r:\n    ids = torch.cat([prefix, t])\n", set()),  # the name is not among the tensors joined
    ("for i in r:\n    ids = ids + [t]\n", set()),  # a Python list grows
    ("for i in r:\n    ids = np.concatenate([ids, t])\n", set()),  # an array grows
    ("for i in r:\n    def f(ids):\n        ids = torch.cat([ids, t])\n", set()),  # a nested scope's own name
])
def test_names_a_loop_grows_with_a_concatenation(code, grown):
    module = cst.parse_module("import torch\nimport numpy as np\n" + code)
    assert grown_names(module.body[2], {"torch": "torch", "np": "numpy"}) == grown
