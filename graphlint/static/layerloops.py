"""A loop over a model's layers is never a per-token loop by itself.

A forward written over its per-layer weights rather than a ``ModuleList`` -- ``for i in
range(self.n_layer): xx, v = block(i, x, state[i], w[f"blocks.{i}.att.k"]); x = x + xx`` --
feeds its output back exactly as a decode loop does (the hidden state goes from one layer into
the next), and counts ``range(...)``. It runs once per call of the forward, whatever that call
is: a step of one token, or a prompt. Taken for the per-token loop, it made the serving loops
that call the forward once per token outer loops (:mod:`.outerloops`: each iteration seemed to
run a whole decode), so none of their per-token work was checked. A loop iterating a
``ModuleList`` (``for layer in self.layers``) is no step loop already (:func:`.loopnames.eligible`);
this is its indexed spelling: ``range`` up to a layer count -- a name spelling layers
(``n_layer``, ``config.num_hidden_layers``, ``self.num_layers``) or the length of a collection so
named (``len(self.layers)``) -- whose body reads what the index picks (a layer's weights or its
slot of the recurrent state). A loop whose index nothing reads (``for _ in range(n_layers)``,
one shared block applied again) is kept a candidate: nothing in it says layer.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.loopnames import is_range


def layer_loop(stmt: cst.For) -> bool:
    """``for i in range(n_layer): ...`` whose body reads ``i`` (see the module docstring)."""
    if type(stmt.target) is not cst.Name or not is_range(stmt.iter):
        return False
    args = [a.value for a in stmt.iter.args if a.keyword is None and a.star == ""]
    if not 1 <= len(args) <= 2 or not layer_count(args[-1]):
        return False
    index = stmt.target.value
    return any(type(n) is cst.Name and n.value == index for n in preorder(stmt.body))


def layer_count(node: cst.BaseExpression) -> bool:
    """``n_layer`` / ``self.config.num_hidden_layers`` / ``len(self.layers)``: a count of layers."""
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "len" and len(node.args) == 1:
        node = node.args[0].value
    name = node.attr.value if type(node) is cst.Attribute else node.value if type(node) is cst.Name else ""
    return "layer" in name.lower()
