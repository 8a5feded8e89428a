"""rwkv-lightning's serving loops (fresh24), each a mechanism with fixtures of its own (branch ``servingloops``).

- A loop over a model's layers written over its per-layer weights (``for i in range(self.n_layer)``
  indexing the layer's weights and state slot) is no per-token loop (:mod:`graphlint.static.layerloops`):
  taken for one, it made the engine's loops that call the model once per token outer loops, unchecked.
- A ``while`` loop in a module's own method (prompts fed in rounds) is no serving loop
  (:meth:`graphlint.static.tokenloops.TokenLoops.module_method`).
- A loop that takes one queued element per iteration and never puts one back admits it: its body
  runs once per request (:mod:`graphlint.static.admitloops`)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "servingloops"


def test_the_engine_loops_are_checked_and_the_model_layer_loop_is_not_one(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "rnnserver")
    assert_marked(result, FIXTURES, "rnnserver")


def _loop(src: str):
    return cst.parse_module(src).body[0]


@pytest.mark.parametrize(("src", "layers"), [
    ("for i in range(self.n_layer):\n    x = f(x, w[f'b.{i}.k'])\n", True),
    ("for i in range(self.config.num_hidden_layers):\n    x = f(x, state[i])\n", True),
    ("for j in range(0, len(self.layers)):\n    x = self.step(x, j)\n", True),
    ("for _ in range(n_layers):\n    x = block(x)\n", False),  # nothing per layer is read: a shared block, or not layers
    ("for t in range(max_new_tokens):\n    x = model(x, t)\n", False),
    ("for i in range(n):\n    x = f(x, layers[i])\n", False),  # the count says nothing of layers
])
def test_a_layer_loop(src, layers):
    from graphlint.static.layerloops import layer_loop

    assert layer_loop(_loop(src)) is layers


@pytest.mark.parametrize(("src", "admits"), [
    ("while pending and len(rows) < 8:\n    req = pending.popleft()\n    rows.append(req)\n", True),
    ("while not self.inbox.empty():\n    msg = self.inbox.get_nowait()\n    handle(msg)\n", True),
    ("while len(heap) > 0:\n    item = heapq.heappop(heap)\n    use(item)\n", True),
    ("while frontier:\n    node = frontier.pop()\n    frontier.extend(children(node))\n", False),  # puts back: a work list
    ("while True:\n    msg = queue.get()\n    run(msg)\n", False),  # the test asks no queue: a server's loop
    ("while pending:\n    if ready():\n        req = pending.popleft()\n", False),  # not taken on every pass
    ("while rows:\n    req = pending.popleft()\n", False),  # taken from another queue than the test's
])
def test_an_admission_loop(src, admits):
    from graphlint.static.admitloops import admits_element

    assert admits_element(_loop(src)) is admits


@pytest.mark.parametrize(("body", "admits"), [
    ("keep = []\nwhile self.running:\n    req = self.running.popleft()\n    keep.append(req)\nself.running = keep\n",
     False),  # every request drained and put back each call: a pass over the batch, every step
    ("while pending:\n    req = pending.pop()\n    use(req)\npending.extend(later)\n", False),
    ("pending = deque(self.requests)\nwhile pending:\n    req = pending.popleft()\n", False),  # built each call
    ("pending = self.waiting\nwhile pending:\n    req = pending.popleft()\n    self.running.append(req)\n", True),
    ("while self.waiting:\n    req = self.waiting.popleft()\n    self.running.append(req)\nreturn self.running\n", True),
])
def test_a_queue_its_function_refills_is_no_admission(body, admits):
    """The loop drains the queue, but its own function builds it or puts elements back (a pass over the
    running batch through a second list): its body runs for every element on every call."""
    from graphlint.static.admitloops import admits_element

    fn = cst.parse_module("def step(self):\n" + "".join("    " + line + "\n" for line in body.splitlines())).body[0]
    loop = next(s for s in fn.body.body if type(s) is cst.While)
    assert admits_element(loop, fn.body) is admits


SWAPPED = '''
import torch
from collections import deque


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x)


class Engine:
    def __init__(self):
        self.model = Net()
        self.running = deque()

    def step(self):
        rows, keep = [], deque()
        while self.running:
            req = self.running.popleft()
            rows.append(torch.tensor([req.last], device="cuda"))
            keep.append(req)
        self.running = keep
        return self.model(torch.stack(rows)).argmax(-1)

    def serve(self):
        while True:
            ids = self.step()
            for req, tok in zip(self.running, ids.tolist()):
                req.last = tok
'''


def test_a_batch_drained_into_a_second_list_every_step_keeps_its_uploads():
    """``while self.running: req = self.running.popleft(); ...; keep.append(req)`` then ``self.running =
    keep``: each step's pass over its requests, whose per-request upload is per token."""
    from static_helpers import analyze

    assert sorted(f.rule for f in analyze({"eng.py": SWAPPED})) == ["GL102", "GL204"]


NESTED_STEP = '''
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x)


def serve(model, waiting, ids):
    {loop}
        def step(tok):
            nxt = torch.argmax(model(tok), -1)
            if nxt.item() == 0:
                nxt = nxt + 1
            return nxt

        for _ in range(req.max_new):
            ids = step(ids)
    return ids


def main(waiting):
    serve(Net(), waiting, torch.zeros(1, dtype=torch.long))
'''


@pytest.mark.parametrize("loop", ["while waiting:\n        req = waiting.popleft()", "for req in list(waiting):"])
def test_a_function_defined_in_an_admission_loop_is_not_admission(loop):
    """The admission loop is the enclosing function's: a step defined in its body and run per token by
    an inner loop keeps its read-back (the nested function's loop ids are its own)."""
    from static_helpers import analyze

    findings = analyze({"eng.py": NESTED_STEP.format(loop=loop)})
    assert [f.rule for f in findings] == ["GL101"]  # ``nxt.item()``
