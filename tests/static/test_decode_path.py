"""The decode path record (issue 19 items 3-4): unresolved calls by their definition, a name-only
guess capped at warning, unreached hot-named functions, and the plain record the reports render.

Every source here is written for the test; each unresolved-call case is one small engine shape.
"""

from __future__ import annotations

import textwrap

import pytest

from graphlint.static.decode_path import DecodePath
from graphlint.static.decode_record import decode_path_record
from graphlint.static.link import link
from graphlint.static.unresolved import (CUDA_OBJECT_METHODS, IO_METHODS, LOGGING_METHODS, MODULE_METHODS,
                                         TENSOR_METHODS, spelling)
from static_helpers import builtin_rules, options, summarize


def decode_path(files: dict[str, str], **kw) -> tuple[DecodePath, list]:
    out: list[DecodePath] = []
    findings = link(summarize(files, **kw), builtin_rules(), options(**kw), decode_out=out)
    return out[0], findings


def unresolved(files: dict[str, str], **kw) -> list[tuple[str, str]]:
    path, _ = decode_path(files, **kw)
    return [(u.function[1], spelling(u.call)) for u in path.unresolved]


#: a captured engine: ``Engine.step`` replays the graph its ``capture`` records around ``self.run``
ENGINE = """
import torch
from torch import nn


class Engine:
    def __init__(self, model, model_class, cfg):
        self.model_forward = model.forward
        self.model = model_class(cfg)
        self.graph = torch.cuda.CUDAGraph()

    def capture(self, x):
        with torch.cuda.graph(self.graph):
            self.out = self.run(x)

    def step(self, x):
        self.graph.replay()
        return self.out
"""


def engine(run_body: str, extra: str = "", init: str = "") -> dict[str, str]:
    anchor = "        self.graph = torch.cuda.CUDAGraph()\n"
    src = ENGINE.replace(anchor, anchor + textwrap.indent(textwrap.dedent(init), " " * 8))
    body = textwrap.indent(textwrap.dedent(run_body), " " * 8)
    return {"eng.py": src + "\n    def run(self, x):\n" + body + textwrap.dedent(extra)}


@pytest.mark.parametrize("body, init, call", [
    ("return self.model_forward(x)\n", "", "self.model_forward"),   # a bound method kept on self
    ("return self.model(x)\n", "", "self.model"),                   # built from a class passed in
    ("return self.model.generate(x)\n", "", "self.model.generate"),
    ("return getattr(self, self.name)(x)\n", "", "getattr(self, ...)"),
    ("return self.runner(x)\n", "self.runner = make_runner()\n", "self.runner"),  # a factory's result, untyped
])
def test_calls_the_call_graph_cannot_follow_are_unresolved(body, init, call):
    assert unresolved(engine(body, init=init)) == [("Engine.run", call)]


@pytest.mark.parametrize("body, init", [
    ("return torch.cat([x, x]) + math.sqrt(2) + len(x)\n", ""),           # torch, stdlib, builtins
    ("return self.proj(x)\n", "self.proj = nn.Linear(4, 4)\n"),            # a module built from torch's class
    ("self.k_cache.copy_(x)\nreturn self.k_cache\n", "self.register_buffer('k_cache', torch.zeros(4))\n"),
    ("self.pending.append(x)\nreturn self.pending.pop()\n", "self.pending = []\n"),  # builtin containers
    ("self.graphs[0].reset()\nreturn x\n", "self.graphs = {}\n"),          # a CUDA graph's own method (run is
    # captured here, and a captured call that only reaches a replaying function is a wrapper's alias: callgraph.replays)
    ("return helper(x)\n", ""),                                            # resolved: a function of the file
])
def test_known_externals_and_resolved_calls_are_not(body, init):
    extra = "\n\nimport math\n\n\ndef helper(x):\n    return x\n"
    assert unresolved(engine(body, extra=extra, init=init)) == []


def test_a_captured_call_that_resolves_to_nothing_is_listed_although_its_capture_routine_is_cold():
    """A capture routine is set-up code, never on the decode path; a call inside its capture is the
    decode step itself: when it runs nothing graphlint sees (a model built from a class it cannot
    follow), it is listed, or the region would vanish from the report unseen."""
    files = {"eng.py": """
import torch


class Engine:
    def __init__(self, factory, cfg):
        self.model = factory(cfg)
        self.graph = torch.cuda.CUDAGraph()

    def capture_graphs(self, x):
        self.model(x)  # a warm-up: set-up code, not listed
        with torch.cuda.graph(self.graph):
            self.out = self.model(x)

    def step(self):
        self.graph.replay()
        return self.out
"""}
    path, _ = decode_path(files)
    assert [(u.function[1], spelling(u.call), u.kind) for u in path.unresolved] == [
        ("Engine.capture_graphs", "self.model", "callback")]


def test_an_object_typed_by_a_base_the_project_derives_from_is_a_blind_spot():
    """``model: nn.Module`` is whatever project model is passed; a tokenizer class nothing here
    derives from is a library object, not the project's."""
    extra = """

from tokenizers import Tokenizer


class Block(nn.Module):
    def forward(self, x):
        return x


def run_model(model: nn.Module, tok: Tokenizer, x):
    tok.decode(x)
    return model(x)
"""
    assert unresolved(engine("return run_model(self.m, self.t, x)\n", extra=extra)) == [
        ("run_model", "model")]


def test_project_globals_and_locals_called_are_unresolved_but_logging_is_not():
    files = {
        "pkg/__init__.py": "",
        "pkg/registry.py": "import logging\nlogger = logging.getLogger(__name__)\nfused = make_fused()\n",
        "pkg/gen.py": """
import torch
from .registry import fused, logger


def decode_one(x: torch.Tensor, sampler):
    logger.info("step")
    return sampler(fused(x))


def generate(x: torch.Tensor, steps: int, sampler):
    for _ in range(steps):
        x = decode_one(x, sampler)
    return x
""",
    }
    assert sorted(unresolved(files)) == [("decode_one", "fused"), ("decode_one", "sampler")]


def test_only_the_calls_inside_a_per_token_loop_count_for_its_function():
    files = {"gen.py": """
import torch


def decode_one(x: torch.Tensor):
    return x * 2


def generate(x: torch.Tensor, steps: int, prepare, on_token):
    x = prepare(x)
    for _ in range(steps):
        x = decode_one(x)
        on_token(x)
    return x
"""}
    path, _ = decode_path(files)
    assert [(u.function[1], spelling(u.call)) for u in path.unresolved] == [("generate", "on_token")]
    assert path.functions == 2 and not path.guessed and not path.unreached


def test_known_method_lists_name_real_torch_and_logging_methods():
    torch = pytest.importorskip("torch")
    import logging

    assert TENSOR_METHODS <= set(dir(torch.Tensor))
    assert MODULE_METHODS <= set(dir(torch.nn.Module)) and "forward" not in MODULE_METHODS
    cuda = {*dir(torch.cuda.CUDAGraph), *dir(torch.cuda.Stream), *dir(torch.cuda.Event)}
    assert CUDA_OBJECT_METHODS <= cuda
    assert LOGGING_METHODS - {"warning_once"} <= set(dir(logging.Logger))
    import collections, pathlib, queue, re, threading

    io = {n for t in (queue.Queue, threading.Event, threading.Lock().__class__, collections.deque, pathlib.Path,
                      re.Pattern, re.Match, open(__file__).__class__) for n in dir(t)}
    assert IO_METHODS <= io


# -- a name-only guess never fails the gate ---------------------------------------------------
GUESSED = """
import torch


def decode_step(x: torch.Tensor):
    return x.sum().item()
"""


def test_a_finding_reached_only_from_a_name_guess_is_at_most_a_warning():
    path, findings = decode_path({"m.py": GUESSED})
    assert path.guessed and path.names_on and path.guessed_functions == 1
    assert [(f.line, f.rule, f.severity) for f in findings] == [(6, "GL101", "warning")]
    assert findings[0].message.endswith("(on a decode path guessed from function names: at most a warning)")
    _, given = decode_path({"m.py": GUESSED}, entries=("m.py:decode_step",))
    assert [(f.severity, f.message.endswith(")")) for f in given] == [("error", False)]


def test_evidence_turns_the_guess_off_and_says_what_it_left_unchecked():
    """A per-token loop reaches ``sample``: that is evidence, so the name-only guess is off. A
    hot-named function nothing calls is then not checked at all -- neither an error nor a capped
    warning -- and the decode path lists it as unreached, with its hazard's line."""
    src = """
import torch


def sample(logits: torch.Tensor):
    return logits.argmax().item()


def decode_step(x: torch.Tensor):
    return x * 2


def generate(x: torch.Tensor, steps: int):
    for _ in range(steps):
        x = decode_step(x)
        sample(x)
    return x


def debug_step(x: torch.Tensor):
    y = x.max().item()
    return sample(x) + y
"""
    path, findings = decode_path({"m.py": src})
    assert not path.guessed and not path.names_on and path.guessed_functions == 0
    got = {(f.line, f.function, f.severity, f.chain[0]) for f in findings}
    assert got == {(6, "sample", "error", "m.py:generate")}
    assert [(u.function, u.hazards) for u in path.unreached] == [(("m.py", "debug_step"), ((21, "GL101"),))]


# -- unreached hot-named functions --------------------------------------------------------------
NEW_FILE = """
import torch


def decode_step(logits: torch.Tensor):
    return logits.argmax().item()


def forward_clean(x):
    return x
"""


def test_a_new_decode_step_nothing_reaches_is_named_with_why():
    files = {**engine("return self.model_forward(x)\n"), "new.py": NEW_FILE}
    path, findings = decode_path(files)
    assert [f for f in findings if f.path == "new.py"] == []
    assert [(u.function, u.why, u.hazards) for u in path.unreached] == [
        (("new.py", "decode_step"), "no caller; the decode path comes from the captures found", ((6, "GL101"),))]


def test_why_names_the_callers_off_the_decode_path_and_given_entries():
    files = {**engine("return self.model_forward(x)\n", extra="""

    def warmup(self, x):
        return decode_step(x)


def decode_step(logits: torch.Tensor):
    return logits.argmax().item()
""")}
    path, _ = decode_path(files)
    assert [u.why for u in path.unreached] == ["called only from Engine.warmup, off the decode path"]
    path, _ = decode_path({"new.py": NEW_FILE, "other.py": GUESSED}, entries=("other.py:decode_step",))
    assert [(u.function[1], u.why) for u in path.unreached] == [
        ("decode_step", "no caller; the decode path is the given entries")]


# -- the plain record --------------------------------------------------------------------------
def test_the_record_sorts_entries_and_finds_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = engine("y = self.model_forward(x)\nreturn y\n")
    (tmp_path / "eng.py").write_text(files["eng.py"])
    path, _ = decode_path(files)
    record = decode_path_record(path)
    lines = [text.strip() for text in files["eng.py"].splitlines()]
    capture, step, call = (lines.index(text) + 1 for text in (
        "with torch.cuda.graph(self.graph):", "def step(self, x):", "y = self.model_forward(x)"))
    assert record["captured_regions"] == [{"path": "eng.py", "line": capture, "functions": ["Engine.run"]}]
    assert [(h["function"], h["line"]) for h in record["host_steps"]] == [("Engine.step", step)]
    assert record["token_loops"] == record["eager_entries"] == record["guessed_entries"] == []
    assert record["unresolved"] == [{"path": "eng.py", "line": call, "function": "Engine.run",
                                     "call": "self.model_forward", "kind": "callback"}]
    assert record["unresolved_calls"] == 1 and record["functions"] == 2 and not record["guessed"]
    assert record["unresolved_kinds"] == {"library": 0, "callback": 1, "optional": 0, "not-followed": 0}
    brief = decode_path_record(path, "headline")  # the text headline: counts, evidence lines only
    assert brief["unresolved"] == [] and brief["unresolved_calls"] == 1 and brief["unresolved_kinds"]["callback"] == 1
    assert brief["captured_regions"] == record["captured_regions"]
    json_level = decode_path_record(path, "entries")  # check's JSON/SARIF: entries' lines, calls unlocated
    assert json_level["unresolved"] == [{"path": "eng.py", "function": "Engine.run", "call": "self.model_forward",
                                         "kind": "callback"}]
    assert json_level["host_steps"] == record["host_steps"]


def test_the_seam_takes_any_call_graphs_unresolved_calls_and_their_positions(tmp_path, monkeypatch):
    """What a points-to call graph plugs in: ``find_unresolved(hot)`` returning
    :class:`UnresolvedCall` records, with the position it knows (statement path, anchor, rank)."""
    from graphlint.static.callgraph import CallGraph
    from graphlint.static.decode_path import decode_path as build
    from graphlint.static.entries import Discovery
    from graphlint.static.facts import ModuleInfo
    from graphlint.static.index import Index
    from graphlint.static.unresolved import UnresolvedCall

    monkeypatch.chdir(tmp_path)
    files = engine("y = self.model_forward(x)\nreturn self.model_forward(y)\n")  # by name: the first
    (tmp_path / "eng.py").write_text(files["eng.py"])
    infos = [s.data for s in summarize(files) if isinstance(s.data, ModuleInfo)]
    index = Index(infos)
    graph = CallGraph(infos, index)
    calls = {(i.path, q): [(t, site) for site in fn.calls for t in graph.site_targets(i, q, site)]
             for i in infos for q, fn in i.functions.items()}
    contexts = Discovery(infos, index, calls, options(), graph).run()
    asked = []

    def graph_unresolved(hot):
        asked.append(dict(hot))
        # the second statement of Engine.run (class body 2, method 3), its first call: not the first by name
        return [UnresolvedCall(("eng.py", "Engine.run"), ("a", ("n", "self"), "model_forward"),
                               ((("body", 2), ("body", 3), ("body", 1)), "Call", 1))]

    path = build(infos, calls, contexts, options(), builtin_rules(), find_unresolved=graph_unresolved)
    assert asked == [{("eng.py", "Engine.run"): None, ("eng.py", "Engine.step"): None}]
    row = decode_path_record(path)["unresolved"]
    assert row == [{"path": "eng.py", "line": files["eng.py"].splitlines().index(
        "        return self.model_forward(y)") + 1, "function": "Engine.run", "call": "self.model_forward",
        "kind": "not-followed"}]  # a seam that says no kind: graphlint's own gap
