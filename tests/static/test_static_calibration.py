"""Quantization calibration is tooling (:mod:`graphlint.static.calibration`): an observer's methods
are cold, and a model that runs an observer on every forward is no decode step -- not through a
library ``generate``, not through a ``torch.compile`` -- while the engine's own captured decode path
beside it keeps every finding."""

from __future__ import annotations

from pathlib import Path

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


def chat(model, ids):
    return model.generate(ids, max_new_tokens=256)
"""


def test_a_model_whose_observer_is_optional_stays_a_decode_step():
    found = analyze({"lm.py": OPTIONAL})
    assert codes(found) == ["GL201"]  # the forward's per-token allocation; the observer's read is calibration


def test_only_quantization_observers_and_fake_quantizers_are_calibration():
    from graphlint.static.calibration import calibration_base

    assert calibration_base("torch.ao.quantization.observer.MinMaxObserver")
    assert calibration_base("torchao.quantization.pt2e.UniformQuantizationObserverBase")
    assert calibration_base("torch.ao.quantization.fake_quantize.FakeQuantize")
    assert not calibration_base("torchao.quantization.Int4WeightOnlyConfig")
    assert not calibration_base("mylib.observers.RangeObserver")
