"""A captured call through an attribute the checked code stores on an object from outside the
project (:mod:`graphlint.static.patched`): an overlay patches an upstream decoder it is handed with
a static stack and a capture closure; the capture reads the stack back. A ``.item()`` planted in
the captured callable, or in a layer it runs, is a captured error; read through an object that did
not flow from the patching name, nothing is. The host loop replaying the graph, with an eager
fallback that calls the captured code itself, stays a host step (warnings). Call graph edges:
``fixtures/static/callgraph/patched_outside``."""

from __future__ import annotations

import textwrap

from static_helpers import analyze

PLANT = "_planted = x.sum().item()"
HOST_PLANT = "_planted = pos.sum().item()"  # not the replay's result: a host step's own read

OVERLAY = """
import torch
from upstream.models import Decoder


class StaticBlock:
    def __init__(self, w):
        self.w = w

    def decode_step(self, x, pos):
        {layer}
        return x @ self.w


class StaticStack:
    def __init__(self, blocks):
        self.blocks = blocks

    def decode_step(self, x, pos):
        {stack}
        for block in self.blocks:
            x = block.decode_step(x, pos)
        return x


def capture(decoder, x, pos):
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        out = {owner}.static_stack.decode_step(x, pos)
    decoder.graphs[0] = graph
    decoder.outputs[0] = out


def replay(decoder, key):
    decoder.graphs[key].replay()


def infer(decoder, x, pos, n):
    static = getattr({owner}, "static_stack", None)
    for i in range(n):
        pos.fill_(i)
        if 0 in decoder.graphs:
            replay(decoder, 0)
            out = decoder.outputs[0]
        else:
            out = static.decode_step(x, pos)
        {host}
        x = out.argmax(-1)
    return x


def patch(decoder: Decoder):
    {store}
    decoder.graphs = {{}}
    decoder.outputs = {{}}
    decoder.precapture = lambda x, pos: capture(decoder, x, pos)
    decoder.infer = lambda x, pos, n: infer(decoder, x, pos, n)
    return decoder
"""

STORE = "decoder.static_stack = StaticStack([StaticBlock(w) for w in decoder.weights])"
SETATTR = 'setattr(decoder, "static_stack", StaticStack([StaticBlock(w) for w in decoder.weights]))'


def findings(layer="pass", stack="pass", host="pass", store=STORE, owner="decoder"):
    source = textwrap.dedent(OVERLAY).format(layer=layer, stack=stack, host=host, store=store, owner=owner)
    return sorted((f.line, f.severity) for f in analyze({"overlay.py": source})
                  if f.rule == "GL101" and f.severity != "info")


def line_of(slot: str) -> int:
    lines = textwrap.dedent(OVERLAY).splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.strip() == "{" + slot + "}")


def test_a_plant_in_the_captured_callable_stored_on_an_outside_object_is_a_captured_error():
    assert findings(stack=PLANT) == [(line_of("stack"), "error")]


def test_a_plant_in_a_layer_the_captured_callable_runs_is_a_captured_error():
    assert findings(layer=PLANT) == [(line_of("layer"), "error")]


def test_a_literal_setattr_stores_alike():
    assert findings(stack=PLANT, store=SETATTR) == [(line_of("stack"), "error")]


def test_an_object_that_did_not_flow_from_the_patching_name_reads_nothing():
    """``Decoder()`` made in the capture and the loop is another object: its ``static_stack`` is the
    library's, whatever was stored on the patched one under that name."""
    assert findings(stack=PLANT, layer=PLANT, owner="Decoder()") == []


def test_the_replaying_loop_with_an_eager_fallback_into_the_captured_code_stays_a_host_step():
    """The loop calls the captured stack eagerly when no graph was captured: the same step, no eager
    decode loop of its own -- the host plant is a warning, the captured ones errors."""
    assert findings(stack=PLANT, host=HOST_PLANT) == [(line_of("stack"), "error"), (line_of("host"), "warning")]
