"""Speculative step loops are per-token loops (branch ``specstep``, issue 19; the fourteenth fresh
set's UMbreLLa engines, read as a training set).

- A model kept as plain tensors on an object of its own names its forward as it likes
  (``inference``): the method a capture records, of an object that holds tensors, is a model step,
  and so are its overrides in the class family -- the eager target beside the captured draft
  (:mod:`graphlint.static.objectsteps`). A sampler method of an object holding only floats stays a
  kernel: the acceptance walk that calls it is no per-token loop.
- ``while going: self.build_tree(); going = self.verify()`` is then the per-token loop, eager draft
  or replayed (a replayed draft's step loop no longer makes it an outer loop); the step's result is
  the verifier's, whose acceptance ``nonzero`` is the accepted-length read, by design (``info``), and
  the loop's re-read of the accepted ids is a second read (:meth:`.stepresult.ResultReads.verified`).
- A ``self`` position advanced by a size a ``nonzero`` read back (the accepted length), or
  assigned from one, is a host value computed from a read: in an eager engine's host logic GL307
  leaves it to the read (``matchers.attr_mutation.ReadSizes``); a counter stays reported.
- A value one of two arms of a test on a position picks (``width if step > 0 else 1``) is no
  position (GL308); a number without a device is a 0-dim CPU scalar operand (GL205's good example),
  unless the statement copies it to a device (``torch.tensor(0).to(dev)``).

Fixtures: ``fixtures/static/specstep/``; ``# expect:`` markers are their findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import analyze, check_fixture, codes
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "specstep"


@pytest.mark.parametrize("name", ["tree", "replayed", "sampler"])
def test_each_fixture_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def _eager_loops(result) -> set[str]:
    return {e.function[1] for e in result.entries if e.context == "eager" and e.loops}


def test_an_engine_whose_model_forward_is_inference_has_its_speculative_loop(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "tree")
    assert {"Engine.generate", "Engine.build_tree"} <= _eager_loops(result)
    assert not result.decode_path.outer_loops


def test_a_replayed_draft_leaves_the_loop_above_it_per_token(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "replayed")
    assert "GraphEngine.generate" in _eager_loops(result)
    assert not result.decode_path.outer_loops  # main took it for a loop over whole decodes


def test_the_acceptance_nonzero_is_the_step_read_and_the_loop_reread_is_not(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "tree")
    rated = {(f.rule, f.severity) for f in result.findings if f.path.endswith("engine.py") and f.rule != "GL307"}
    assert rated == {("GL302", "info"), ("GL102", "error")}


def test_a_captured_method_of_an_object_without_tensors_is_no_model(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "sampler")
    assert not _eager_loops(result)


ENGINE = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = torch.zeros(64, 8, device="cuda")
        self.pos = 0

    def forward(self, kv):
        self.k[self.pos] = kv
        self.pos += 1
        return torch.tanh(self.k)


class Engine:
    def __init__(self, model):
        self.model = model
        self.tokens = torch.zeros(64, 8, dtype=torch.long, device="cuda")
        self.n = 0
        self.count = 0

    def generate(self, tok, steps: int):
        for _ in range(steps):
            out = self.model(tok)
            tok = out.argmax(-1)
            path = (tok > 0).nonzero()
            length = path.shape[0]
            self.tokens[self.n] = tok
            self.tokens[self.count] = tok
            self.n = self.n + length
            self.count += 1
        return tok


def main():
    return Engine(Decoder()).generate(torch.zeros(8, device="cuda"), 4)
"""


def test_a_position_advanced_by_a_read_back_size_is_the_read_s_in_host_logic():
    """``self.n`` advances by the size ``nonzero`` read back (a speculative step's accepted length):
    in the loop's host logic that position is the read's consequence, not a GL307 of its own; a
    counter (``self.count += 1``) stays reported there, and the model's own counter everywhere."""
    lines = ENGINE.splitlines()
    found = {lines[f.line - 1].strip() for f in analyze({"engine.py": ENGINE}) if f.rule == "GL307"}
    assert found == {"self.k[self.pos] = kv", "self.tokens[self.count] = tok"}


def test_a_number_without_a_device_is_a_scalar_operand_unless_it_is_moved():
    src = """
import torch


def decode_step(x: torch.Tensor, dim: int, device: torch.device):
    scale = torch.tensor(dim ** 0.5, dtype=x.dtype)
    pos = torch.tensor(0, dtype=torch.int64).to(device)
    return x * scale, pos
"""
    assert [f.line for f in analyze({"m.py": src}) if f.rule == "GL205"] == [7]


def test_one_arm_of_a_test_on_a_position_is_no_position():
    src = """
import torch


def decode_step(cache: torch.Tensor, kv: torch.Tensor, step: int):
    width = 4 if step > 0 else 1
    cache[:, :width] = kv
    end = step + 1 if step > 0 else 1
    return cache[:, :end]
"""
    findings = [f for f in analyze({"m.py": src}) if f.rule == "GL308"]
    assert [f.line for f in findings] == [9]  # ``end`` is the position in one arm; ``width`` never is
    assert codes(findings) == ["GL308"]
