"""Quantization calibration is tooling (:mod:`graphlint.static.calibration`): an observer's methods
are cold, and a model that runs an observer on every forward is no decode step -- not through a
library ``generate``, not through a ``torch.compile`` -- while the engine's own captured decode path
beside it keeps every finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import analyze, check_fixture, codes
from test_static_fixture import assert_marked

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "calibration"


def test_a_calibration_tree_is_not_decode_code_and_the_engine_beside_it_is(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, ".")
    files = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in sorted(FIXTURES.rglob("*.py"))}
    assert_marked(result.findings, files)
    functions = {e.function[1] for e in result.entries}
    assert {"TinyLM.forward", "Runner.step", "serve"} <= functions
    assert not functions & {"ExportLM.forward", "Attention.forward", "RangeObserver.forward"}


OPTIONAL = """
import torch
from torch import nn
from torch.ao.quantization.observer import ObserverBase
from transformers import PreTrainedModel


class Observer(ObserverBase):
    def forward(self, x):
        self.lo = min(self.lo, x.min())
        return x


class LM(PreTrainedModel):
    def __init__(self, config, observe=False):
        super().__init__(config)
        self.proj = nn.Linear(8, 8)
        self.observer = Observer() if observe else None

    def forward(self, input_ids, **kwargs):
        h = self.proj(input_ids)
        if self.observer is not None:
            h = self.observer(h)
        pos = torch.arange(h.shape[1], device=h.device)
        return h + pos

    def calibrating(self, h):
        return self.observer is not None and h.numel() > 0


def chat(config, ids):
    model = LM(config)
    return model.generate(ids, max_new_tokens=256)
"""


#: ways a forward runs its observer only sometimes: each keeps the model a decode step
OPTIONAL_CALLS = {
    "known test": ("if self.observer is not None:\n            h = self.observer(h)", ""),
    "unknown test": ("if self.calibrating(h):\n            h = self.observer(h)", ""),
    "early exit": ("if not self.calibrating(h):\n            return h + pos\n        h = self.observer(h)", ""),
    "nested exit": ("if self.ready:\n            if self.calibrating(h):\n                return h + pos\n"
                    "        h = self.observer(h)", ""),
    "conditional operand": ("h = self.observer(h) if self.calibrating(h) else h", ""),
    "and operand": ("seen = self.calibrating(h) and self.observer(h)", ""),
    "handler": ("try:\n            h = self.proj(h)\n        except RuntimeError:\n            h = self.observer(h)", ""),
}


@pytest.mark.parametrize("case", sorted(OPTIONAL_CALLS))
def test_a_model_whose_observer_runs_only_sometimes_stays_a_decode_step(case):
    call, _ = OPTIONAL_CALLS[case]
    source = OPTIONAL.replace("if self.observer is not None:\n            h = self.observer(h)", call)
    found = analyze({"lm.py": source})
    assert "GL201" in codes(found)  # the forward's per-token allocation; the observer's read is calibration
    assert "GL104" not in codes(found)


def test_a_model_that_always_runs_its_observer_is_calibration():
    source = OPTIONAL.replace("if self.observer is not None:\n            h = self.observer(h)", "h = self.observer(h)")
    assert codes(analyze({"lm.py": source})) == []


def test_only_quantization_observers_and_fake_quantizers_are_calibration():
    from graphlint.static.calibration import calibration_base

    assert calibration_base("torch.ao.quantization.observer.MinMaxObserver")
    assert calibration_base("torchao.quantization.pt2e.UniformQuantizationObserverBase")
    assert calibration_base("torch.ao.quantization.fake_quantize.FakeQuantize")
    assert not calibration_base("torchao.quantization.Int4WeightOnlyConfig")
    assert not calibration_base("mylib.observers.RangeObserver")
