"""A model held as a field of a graph runner, followed into the layers it captures (branch
``runnerfield``; the shape of fresh20's dInfer, in code of our own).

Three links: ``torch.get_device_module(dev).graph(g)`` captures, through the field the runner's
``__init__`` binds it to; the closure captured calls the forward a context manager yields for the
model runner's model, the runner built with the model runner; and the model's layers come from a
library's layer factory handed a lambda (``make_layers``). A buffer handed in and rebuilt out of
place inside the graph is the graph pool's output, not a per-step copy."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "runnerfield"


def test_the_captured_forward_and_its_layers_are_graph_code(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "diffusion-serve")
    assert_marked(result, FIXTURES, "diffusion-serve")
    chains = {f.line: [step.rpartition(":")[2] for step in f.chain] for f in result.findings}
    capture = ["GraphRunner._capture", "GraphRunner.capture_one.run_once", "DiffusionLM.forward"]
    assert chains == {15: [*capture, "Block.forward", "Attention.forward"], 48: capture}


def test_a_buffer_handed_in_is_rebuilt_by_the_graph_and_an_attribute_written_back_is_not(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "graphcache.py")
    assert_marked(result, FIXTURES, "graphcache.py")
