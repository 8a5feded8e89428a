"""An eager engine that runs a loaded library model by hand (:mod:`graphlint.static.libmodels`):
the function that calls the model's modules is the step of the loop that feeds it the ids it
sampled -- an engine method (``offload_engine.py``) or a free function handed the model
(``free_runner.py``). Loops over layers, a training loop, a loop over prompts and a tokenizer
called like a module are none (``not_token_loops.py``). Fixtures in ``fixtures/static/eagerloop/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marker_severities, expected
from static_helpers import analyze, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "eagerloop"

#: per fixture: the entries (context, function) the check must find
ENTRIES = {
    "offload_engine.py": {("eager", "OffloadEngine.generate")},
    "free_runner.py": {("eager", "greedy")},
    "not_token_loops.py": set(),
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_engine_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    files = {(FIXTURES / name).relative_to(ROOT).as_posix(): (FIXTURES / name).read_bytes()}
    assert {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"} == expected(files)
    assert_marker_severities(result.findings, files)
    assert {(e.context, e.function[1]) for e in result.entries} == ENTRIES[name]


def test_the_loop_names_the_engine_method_it_runs_the_model_through(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "offload_engine.py")
    (entry,) = result.entries
    assert entry.reason == "per-token loop calling OffloadEngine.run_layers"


ENGINE = """
import torch
from lib import {cls}


class Engine:
    def __init__(self, path):
        self.net = {cls}.{load}(path)

    def run(self, ids):
        h = self.net.{call}(ids)
        torch.cuda.synchronize()
        return h

    def loop(self, ids, n):
        for _ in range(n):
            logits = self.run(ids)
            ids = logits.{pick}
        return ids


if __name__ == "__main__":
    Engine("p").loop(None, 4)
"""


@pytest.mark.parametrize(("cls", "load", "call", "pick", "found"), [
    ("GPT2LMHeadModel", "from_pretrained", "transformer", "argmax(-1)", True),
    ("AutoModelForCausalLM", "from_config", "model.embed_tokens", "topk(1)[1]", True),
    ("T5EncoderModel", "from_pretrained", "encoder", "argmax(-1)", True),
    ("GPT2LMHeadModel", "from_pretrained", "transformer", "softmax(-1)", False),  # nothing sampled: no carry of ids
    ("GPT2LMHeadModel", "from_pretrained", "state_dict", "argmax(-1)", False),  # a module's own method runs no model
    ("GPT2LMHeadModel", "from_pretrained", "generate", "argmax(-1)", False),  # a whole decode per call
    ("AutoTokenizer", "from_pretrained", "encode", "argmax(-1)", False),  # no model
    ("GPT2Config", "from_pretrained", "to_dict", "argmax(-1)", False),
])
def test_what_counts_as_running_a_library_model(cls, load, call, pick, found):
    findings = analyze({"engine.py": ENGINE.format(cls=cls, load=load, call=call, pick=pick)})
    assert any(f.rule == "GL106" and f.severity == "error" for f in findings) is found


def test_a_project_model_of_that_name_is_no_library_model():
    """``LlamaForCausalLM`` defined in the checked code: its calls resolve to it; nothing of its
    name makes the engine's method a step (the project class has no ``forward`` here)."""
    files = {"engine.py": ENGINE.format(cls="LlamaForCausalLM", load="from_pretrained", call="embed",
                                        pick="argmax(-1)").replace("from lib import", "from models import"),
             "models.py": "class LlamaForCausalLM:\n    @classmethod\n    def from_pretrained(cls, p):\n"
                          "        return cls()\n\n    def embed(self, ids):\n        return ids\n"}
    assert not [f for f in analyze(files) if f.rule == "GL106"]
