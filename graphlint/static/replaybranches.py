"""A capture and its replays in one loop: which replay is the steps', which branch runs them.

Two shapes a script's decode loop takes when it captures its own step (``for pos in range(...): if
pos == start: prefill  elif pos == start + 1: with torch.cuda.graph(g): logits = model(ids)  else:
ids.copy_(...); g.replay()``):

- the replay sits in a loop that also captures, so it looked like a warm-up replay of each graph a
  loop over batch sizes captures and replays once (:meth:`.regions.RegionRecorder.replay_call`);
  one in a branch of an ``if`` whose other branch captures is the replay of every later step;
- the capture sits in an ``if`` of a step loop -- a ``while`` or a ``for`` over ``range(...)`` --
  that does not hold the replay (``while step < n: ...; if graph is None: record; stage; g.replay()``):
  the graph is recorded on the loop's first pass that needs it and replayed on every pass
  (:func:`records_lazily`), the loop is the step's, not a warm-up over batch sizes (a ``for`` over a
  collection capturing each graph and replaying it once stays one);
- the loop sits in a branch (a script's ``if __name__ == "__main__":``), and a branch that captures
  and replays was taken for a capture replayed once, its statements forgotten for the step
  (:meth:`.regions.RegionRecorder.capture_branch`); one in which a replay the walk recorded (not a
  warm-up: see the first item) sits in a loop inside the branch runs the steps.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphlint.static.cstwalk import preorder


def replays(node: cst.CSTNode) -> bool:
    """A ``g.replay()`` anywhere inside ``node`` (a branch, the statements after an ``if``)."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "replay"
               and not n.args for n in preorder(node))


def replays_in_loop(replay_loops: tuple, outer: list[int]) -> bool:
    """Whether one of the replays a branch recorded (``FunctionInfo.replay_loops`` entries: the loops
    around each, and its arms) sits in a loop inside the branch (one not in ``outer``, the loops around
    the ``if``): the branch runs the steps (a script's ``if __name__ == "__main__":`` around its decode
    loop), not a capture replayed once. A warm-up replay in a loop that captures records none."""
    return any(set(loops) - set(outer) for loops, _ in replay_loops)


def replays_instead(loop: cst.For | cst.While, call: cst.Call, captures: Callable[[cst.CSTNode], bool]) -> bool:
    """``call`` (a replay) sits in one branch of an ``if`` in ``loop`` whose other branch captures and
    its own does not (``elif pos == start + 1: capture  else: g.replay()``): the replay of the steps
    after the one that captured, not a warm-up replay of each graph a loop over batch sizes captures
    (``captures``: whether a node holds a capture, :func:`.regions.contains_capture`)."""
    for node in preorder(loop.body):
        if type(node) is not cst.If or node.orelse is None:
            continue
        orelse = node.orelse if type(node.orelse) is cst.If else node.orelse.body
        for mine, other in ((node.body, orelse), (orelse, node.body)):
            if any(n is call for n in preorder(mine)) and not captures(mine) and captures(other):
                return True
    return False


def _step_loop(loop: cst.For | cst.While) -> bool:
    """A ``while`` loop or a ``for`` over ``range(...)``: the loops that may run steps."""
    if type(loop) is cst.While:
        return True
    it = loop.iter
    return type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range"


def records_lazily(loop: cst.For | cst.While, call: cst.Call, captures: Callable[[cst.CSTNode], bool]) -> bool:
    """``call`` (a replay) runs on every pass of the step loop ``loop``, whose capture sits in an ``if``
    that does not hold the replay (``if graph is None: record``): a graph recorded on the first pass
    that needs it, replayed by every pass (see the module docstring)."""
    if not _step_loop(loop):
        return False
    for node in preorder(loop.body):
        if type(node) is cst.If and captures(node.body) and not any(n is call for n in preorder(node)):
            return True
    return False
