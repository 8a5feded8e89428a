"""Graph-aware hotness (issue 8): what the decode step is, and what each context reports.

Each test is a small engine written for it; the look-alike packages under
``fixtures/static/engines/`` cover the same patterns at the scale of a real engine.
"""

from __future__ import annotations

from static_helpers import analyze, builtin_rules, options, summarize

from graphlint.static.link import link


def found(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.rule, f.severity) for f in analyze({"m.py": src}, **kw)]


def entries(files: dict[str, str], **kw) -> list[tuple[str, str]]:
    out = []
    link(summarize(files, **kw), builtin_rules(), options(**kw), out)
    return sorted((e.context, e.function[1]) for e in out)


CAPTURED = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum().item()

class Runner:
    def __init__(self):
        self.model = Model()
        self.graph = torch.cuda.CUDAGraph()
        self.buf = torch.zeros(4, device="cuda")

    def capture(self):
        with torch.cuda.graph(self.graph):
            self.model(self.buf)

    def replay(self, ids):
        self.buf.copy_(torch.tensor(ids, pin_memory=True).cuda(non_blocking=True))
        self.graph.replay()
        return self.buf.argmax().item()

    def decode_step(self, ids):
        return self.replay(ids)
"""


def test_the_captured_callable_is_graph_code_and_the_replayer_the_host_step():
    assert entries({"m.py": CAPTURED}) == [
        ("graph", "Model.forward"), ("host", "Runner.decode_step"), ("host", "Runner.replay")]
    assert found(CAPTURED) == [
        (6, "GL101", "error"),  # inside the graph: strict
        (15, "GL501", "info"),  # selects no device: the process's one device, where the side stream is right
        (21, "GL101", "info"),  # the sampled result, read back after the replay
    ]


def test_a_read_back_before_the_replay_is_an_extra_sync_a_warning():
    src = CAPTURED.replace("        self.graph.replay()\n", "        n = ids.sum().item()\n        self.graph.replay()\n")
    assert (20, "GL101", "warning") in found(src)


def test_pinned_staging_is_silent_in_the_host_step_but_pageable_copies_are_not():
    src = CAPTURED.replace("torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)", "torch.tensor(ids).cuda()")
    assert (19, "GL403", "warning") in found(src)
    assert not [f for f in found(CAPTURED) if f[0] == 19]


def test_a_hot_named_warm_up_and_the_name_heuristic_are_off_once_the_engine_captures():
    src = CAPTURED + """
    def _warm_decode(self):
        torch.cuda.synchronize()
        return self.model(self.buf)

class Scheduler:
    def step(self, reqs):
        return [r.ids.tolist() for r in reqs]
"""
    codes = {(line, code) for line, code, _ in found(src)}
    assert not {code for line, code in codes if line > 24}


def test_an_eager_driver_of_captured_code_is_an_eager_entry_guessed_until_a_decode_path_calls_it():
    """Nothing calls ``step``: running the captured region eagerly and being named like decode code
    is a guess (an eager twin, a user API: a model's ``forward`` around its captured
    ``forward_with_bias``), so its findings are warnings; once a per-token loop calls it, errors."""
    src = """
import torch

class Decoder:
    def _layer(self, x):
        return torch.nonzero(x)

    def regions(self):
        return [Region("layer", self._layer)]

    def step(self, x):
        y = self._layer(x)
        return y.tolist()
"""
    src = "from graphlint.dynamic.target import Region\n" + src
    assert entries({"m.py": src}) == [("eager", "Decoder.step"), ("graph", "Decoder._layer")]
    assert [(c, s) for _, c, s in found(src)] == [("GL302", "error"), ("GL102", "warning")]
    looped = src + "\n\ndef generate(d: Decoder, x, n: int):\n    for _ in range(n):\n        x = d.step(x)\n"
    assert [(c, s) for _, c, s in found(looped)] == [("GL302", "error"), ("GL102", "error")]


def test_the_stage_of_a_target_whose_regions_declare_regions_is_a_host_step():
    """The target protocol runs ``stage(step)`` before the regions every step; the harness calls it,
    so no analysed code does. A region wrapped in place (``torch.no_grad()(fn)``) is its function."""
    src = """
from graphlint.dynamic.target import Region
import torch

class Target:
    def __init__(self):
        self.ids = torch.zeros(1, dtype=torch.long)

    def stage(self, step):
        self.ids = torch.tensor([step % 7], device="cuda")

    def _forward(self):
        return self.ids + 1

    def regions(self):
        return [Region("step", torch.no_grad()(self._forward))]
"""
    assert entries({"m.py": src}) == [("graph", "Target._forward"), ("host", "Target.stage")]
    assert [(c, s) for _, c, s in found(src)] == [("GL204", "warning")]


def test_per_token_loop_bodies_are_hot_and_the_code_around_them_is_not():
    src = """
import torch

class Net(torch.nn.Module):
    def forward(self, tokens, start_pos: int):
        return tokens.float()

def generate(model: Net, prompt: list, total: int):
    tokens = torch.full((1, total), -1, device="cuda")
    done = torch.zeros(1, dtype=torch.bool, device="cuda")
    prev_pos = 0
    for cur_pos in range(len(prompt), total):
        logits = model.forward(tokens[:, prev_pos:cur_pos], prev_pos)
        tokens[:, cur_pos] = logits.argmax(-1)
        prev_pos = cur_pos
        if all(done):
            break
    return tokens.tolist()
"""
    # eager code no graph captures: the Python position slices only a capture would freeze are warnings
    assert found(src) == [(13, "GL308", "warning"), (14, "GL308", "warning"), (16, "GL104", "error")]
    assert ("eager", "generate") in entries({"m.py": src})


def test_a_loop_over_requests_calling_a_per_token_loop_is_not_itself_per_token():
    src = """
import torch

class Net(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

def complete(model: Net, x, n: int):
    for step in range(n):
        x = model(x)
    return x

def chat(model: Net, read):
    history = []
    while True:
        history.append(complete(model, read(), 4).tolist())
"""
    names = entries({"m.py": src})
    assert ("eager", "complete") in names and ("eager", "chat") not in names
    assert found(src) == []


def test_torch_compile_with_cuda_graphs_makes_its_callers_loop_the_host_step():
    src = """
import torch

def one_token(model, x):
    noise = torch.empty_like(x)
    return x + noise

def decode_n(model, x, n: int):
    out = []
    for _ in range(n):
        x = one_token(model, x)
        out.append(torch.zeros(1, device="cuda"))
    return out

def main(model, x):
    global one_token
    one_token = torch.compile(one_token, mode="reduce-overhead")
    return decode_n(model, x, 8)
"""
    assert entries({"m.py": src}) == [("graph", "one_token"), ("host", "decode_n")]
    assert found(src) == [(12, "GL201", "warning")]  # the compiled step's own allocation is inductor's


def test_prefill_and_training_branches_are_not_hot_and_configurable():
    src = """
import torch

def decode_step(x, seqlen: int, is_prefill: bool, training: bool):
    if seqlen > 1:
        x = x + torch.full((seqlen, seqlen), 0.0, device=x.device)
    if is_prefill:
        x = x.nonzero()
    mask = torch.ones(3, device=x.device) if seqlen != 1 else None
    if training:
        x = x * x.sum().item()
    if seqlen == 1:
        return x
    return x.tolist()
"""
    assert found(src) == []
    assert {c for _, c, _ in found(src, prefill_guards=())} >= {"GL201", "GL302", "GL101", "GL102"}


def test_multi_device_capture_loops_make_graph_without_stream_an_error():
    src = """
import torch

def capture(graphs, stages, devices):
    for i, dev in enumerate(devices):
        torch.cuda.set_device(dev)
        with torch.cuda.graph(graphs[i]):
            stages[i]()

def capture_one(graph, stage):
    with torch.cuda.graph(graph):
        stage()
"""
    assert found(src) == [(6, "GL502", "error"), (7, "GL501", "error"), (11, "GL501", "info")]


def test_make_graphed_callables_and_abstract_typed_calls_resolve_to_every_implementation():
    src = """
import torch
from abc import ABC, abstractmethod

class Backend(ABC):
    @abstractmethod
    def prepare(self, x): ...

class Fast(Backend):
    def prepare(self, x):
        return torch.nonzero(x)

class Block(torch.nn.Module):
    def __init__(self, backend: Backend):
        super().__init__()
        self.backend = backend

    def forward(self, x):
        return self.backend.prepare(x)

def setup(block: Block, x):
    return torch.cuda.make_graphed_callables(block, (x,))
"""
    assert ("graph", "Block.forward") in entries({"m.py": src})
    assert [(c, s) for _, c, s in found(src)] == [("GL302", "error")]


def test_a_factorys_return_annotation_types_the_attribute_it_builds():
    src = """
import torch

class Metadata:
    def prepare(self, n: int):
        return torch.arange(n + 1, device="cuda")

def make_metadata() -> Metadata:
    return Metadata()

class Runner:
    def __init__(self):
        self.meta = make_metadata()
        self.graph = torch.cuda.CUDAGraph()

    def replay(self, n: int):
        self.meta.prepare(n)
        self.graph.replay()
"""
    assert found(src) == [(6, "GL201", "warning")]


def test_graphlint_entries_json_and_text(tmp_path, monkeypatch, capsys):
    import json

    from graphlint.cli import main

    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    (tmp_path / "m.py").write_text(CAPTURED)
    monkeypatch.chdir(tmp_path)
    assert main(["entries", "--no-cache", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows["captures"] is True
    assert [(r["context"], r["function"], r["line"]) for r in rows["entries"]] == [
        ("graph", "Model.forward", 5), ("host", "Runner.replay", 18), ("host", "Runner.decode_step", 23)]
    assert rows["entries"][0]["evidence"] == {"path": "m.py", "line": 15}  # the capture
    assert main(["entries", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "graph  m.py:5  Model.forward" in text and "replays a CUDA graph  [m.py:20]" in text
    assert main(["check", "--no-cache", "--show-entries", "--exit-zero"]) == 0
    assert "Decode step: 3 entries (the engine captures CUDA graphs)" in capsys.readouterr().out


def test_per_layer_choices_resolve_to_every_candidate_from_an_explicit_entry():
    """``MLP() if ... else MoE()``, a dict of bound methods picked per layer and ``getattr(self, name)``:
    with an explicit entry nothing is hot by name, so only call resolution reaches these."""
    src = """
import torch
from torch import nn

class Dense(nn.Module):
    def forward(self, x):
        return torch.relu(x)

class Routed(nn.Module):
    def forward(self, x):
        return torch.bincount(x.flatten())

class Gate(nn.Module):
    def forward(self, x):
        return x.sum().item()

class Layer(nn.Module):
    def __init__(self, i: int):
        super().__init__()
        self.ffn = Dense() if i == 0 else Routed()
        self.gate_a = Gate()
        self.ops = {"fast": self._fast, "slow": self._slow}

    def _fast(self, x):
        return x

    def _slow(self, x):
        return torch.nonzero(x)

    def run_layer(self, x, kind: str, name: str):
        x = self.ops[kind](x)
        x = getattr(self, f"gate_{name}")(x)
        return self.ffn(x)
"""
    entry = ("m.py:Layer.run_layer",)
    assert sorted(f.rule for f in analyze({"m.py": src}, entries=entry)) == ["GL101", "GL301", "GL302"]


def test_a_one_time_flag_makes_its_branch_setup():
    """``if not self._prepared: self._prepare(x)`` with ``self._prepared = True`` set by the callee."""
    src = """
import torch

class Bias:
    def __init__(self, ids: list):
        self.ids = ids
        self._prepared = False

    def __call__(self, scores: torch.Tensor):
        if not self._prepared:
            self._prepare(scores)
        if not self.enabled:
            scores = scores + torch.zeros_like(scores)
        return scores + self.bias

    def _prepare(self, scores: torch.Tensor):
        self.bias = torch.tensor(self.ids, device=scores.device)
        self._prepared = True

def processors(ids: list):
    return [Bias(ids)]
"""
    assert found(src) == [(13, "GL202", "warning")]  # ``enabled`` is never set True: its branch stays


def test_a_processor_no_code_here_builds_is_not_an_entry():
    src = """
import torch

class Processor:
    def __call__(self, scores):
        return scores

class TopK(Processor):
    def __call__(self, scores: torch.Tensor):
        return scores.masked_fill(scores < scores.max(), -1.0).nonzero()

class WhisperOnly(Processor):
    def __call__(self, scores: torch.Tensor):
        return scores.nonzero()

def build(top_k: int):
    return [TopK()] if top_k else []
"""
    assert [(line, code) for line, code, _ in found(src)] == [(10, "GL302")]


def test_filling_an_optional_argument_the_loop_passes_is_not_the_step():
    src = """
import torch

def forward_step(x: torch.Tensor, position_ids=None, mask=None):
    if position_ids is None:
        position_ids = torch.arange(x.shape[1], device=x.device)
    if mask is None:
        x = x * 2
    return x + position_ids + torch.zeros_like(x)
"""
    assert [(line, code) for line, code, _ in found(src)] == [(9, "GL202")]



def test_a_replay_whose_capture_is_not_found_is_not_called_nothing_captured(tmp_path, capsys, monkeypatch):
    """transformers' continuous batching replays a graph whose captured callable graphlint does not
    resolve: the header must not claim that nothing is captured."""
    (tmp_path / "runner.py").write_text(
        "import torch\n\n\n"
        "class Runner:\n"
        "    def step(self, batch):\n"
        "        self.graphs[batch.size].replay()\n"
        "        return self.out\n"
    )
    from graphlint.cli import main

    monkeypatch.chdir(tmp_path)
    main(["entries", "runner.py"])
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Decode step:"))
    # the replay is evidence: the host step is the entry, the hot-names guess stays off
    assert head == ("Decode step: 1 entry (CUDA graphs are replayed, but their captured code was not found; "
                    "the rest is an eager decode path)")


PASSED = """
import torch

class Graphs:
    def __init__(self):
        self.g = torch.cuda.CUDAGraph()

    def capture(self, fn, x):
        return self._capture(fn, x)

    def _capture(self, fn, x):
        with torch.cuda.graph(self.g):
            self.out = fn(x)
        return self.out

    def replay(self, x):
        self.g.replay()
        return self.out

class Model:
    def __init__(self):
        self.graphs = Graphs()

    def run(self, x, first: bool):
        n = x.sum().item()
        if first:
            return self.graphs.capture(self._step, x)
        return self.graphs.replay(x)

    def _step(self, x):
        return x * x.max().item()

    def encode(self, x):
        return x.mean().item()
"""


def test_a_callable_passed_to_a_captured_parameter_is_graph_code_and_its_caller_the_host_step():
    """``fn(x)`` inside the capture with ``fn`` a parameter, passed on from ``capture`` to ``_capture``:
    what ``run`` hands over is captured; ``run`` leads to the replay, so it is the host step; the
    name heuristic is off (``encode`` is no entry)."""
    assert entries({"m.py": PASSED}) == [("graph", "Model._step"), ("host", "Graphs.replay"), ("host", "Model.run")]
    assert found(PASSED) == [(12, "GL501", "info"), (25, "GL101", "warning"), (31, "GL101", "error")]


def test_a_parameter_called_outside_the_capture_or_never_handed_a_callable_captures_nothing():
    src = PASSED.replace("            self.out = fn(x)", "            self.out = x * 2").replace(
        "        return self.out\n\n    def replay", "        fn(x)\n        return self.out\n\n    def replay")
    assert ("graph", "Model._step") not in entries({"m.py": src})


def test_prefill_named_functions_are_not_hot_and_configurable():
    src = """
import torch

def decode(batch, waiting):
    prefill_reqs(waiting)
    return batch.argmax(-1)

def prefill_reqs(reqs):
    return reqs.sum().item()
"""
    assert found(src) == []
    assert found(src, prefill_names=()) == [(9, "GL101", "warning")]  # guessed from the name: at most a warning
    assert found(src, prefill_names=(), entries=("m.py:decode",)) == [(9, "GL101", "error")]
