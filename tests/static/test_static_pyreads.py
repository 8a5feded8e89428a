"""Per-token reads that return Python values (branch ``pyreads``): a 0-dim integer step counter kept
in the state record a decode step hands the next (:mod:`graphlint.static.carried`; built through a
keyword dict naming the device, :func:`graphlint.static.scalars.device_of`), used as an index --
PyTorch selects with its ``item()`` -- and ``torch.equal`` / ``torch.allclose``, which return a
Python bool. The look-alikes stay quiet: a Python int counter carried the same way, a 0-dim counter
built in host memory. ``# expect:`` markers are the findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.static.valueflow import value_facts_of
from static_helpers import analyze, check_fixture, summarize
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "pyreads"


@pytest.mark.parametrize("name", ["stepstate"])
def test_each_package_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def _facts(name: str) -> set[str]:
    files = {p: s.decode() for p, s in load(FIXTURES / name).items()}
    return {f for facts in value_facts_of(summarize(files)).values() for f in facts if f.startswith("field:")}


def test_a_carried_field_keeps_what_the_first_record_was_given():
    facts = _facts("stepstate")
    assert "field:Decoder.advance:state.cursor=scalar" in facts  # ``torch.tensor(0, **opts)``, then ``at + 1``
    assert not any("cursor=scalar" in f and "advance" not in f for f in facts)  # an int; a host tensor


def test_a_carry_from_another_class_is_no_carry():
    """``Other(step=state.step + 1)`` with ``state`` a ``State`` (whose step is a Python int): a store of
    another class's field, not ``Other``'s own carried, so ``Other``'s field is not the 0-dim tensor its
    other store passes."""
    src = '''
import torch
from dataclasses import dataclass


@dataclass
class State:
    step: int


@dataclass
class Other:
    step: torch.Tensor


def first(x: torch.Tensor) -> Other:
    return Other(step=torch.tensor(0, device=x.device))


def advance(state: State) -> Other:
    return Other(step=state.step + 1)


def nxt(other: Other) -> Other:
    return Other(step=other.step + 1)


def read(x: torch.Tensor, other: Other):
    mine = other.step
    return x[:, mine]
'''
    facts = {f for fs in value_facts_of(summarize({"m.py": src})).values() for f in fs}
    assert not any("other.step=scalar" in f for f in facts), facts
    assert not analyze({"m.py": src.replace("state.step + 1", "state.step")})  # not a carry either way


def test_a_field_stored_from_outside_is_no_carry():
    """``b.pos = b.pos.cpu()`` outside the class: the constructor calls do not say what the field holds,
    and the carry must not hide the store that kept it unknown (tokasaurus's plants: a batch record built
    on the host, moved to the device by such stores)."""
    src = '''
import torch
from dataclasses import dataclass


@dataclass
class Batch:
    pos: torch.Tensor


def build() -> Batch:
    return Batch(pos=torch.tensor(0, device="cuda"))


def move(b: Batch):
    b.pos = b.pos.cpu()


def forward(b: Batch) -> Batch:
    return Batch(pos=b.pos)


def read(x: torch.Tensor, b: Batch):
    p = b.pos
    return x[:, p]
'''
    facts = {f for fs in value_facts_of(summarize({"m.py": src})).values() for f in fs}
    assert not any("pos=" in f for f in facts), facts
    assert any("pos=scalar" in f for f in _facts_of(src.replace("    b.pos = b.pos.cpu()", "    pass")))


def _facts_of(src: str) -> set[str]:
    return {f for fs in value_facts_of(summarize({"m.py": src})).values() for f in fs}


@pytest.mark.parametrize("call, reported", [
    ("torch.equal(token, eos)", True),
    ("torch.allclose(token.float(), eos.float())", True),
    ("torch.equal(ids, ids)", False),  # a Python list parameter: no tensor
    ("(token == eos).all()", False),
])
def test_comparisons_that_return_a_python_bool(call, reported):
    src = f'''
import torch


def decode_step(logits: torch.Tensor, eos: torch.Tensor, ids: list):
    token = logits.argmax(-1)
    return token, {call}
'''
    found = [f for f in analyze({"m.py": src}) if f.rule == "GL104"]
    assert bool(found) == reported


def test_a_distribution_draw_is_a_tensor():
    """``Categorical(logits=x).sample()`` is a tensor: a sampler returning it or an argmax returns one,
    and ``torch.equal`` on its result reads back."""
    src = '''
import torch


def pick(logits: torch.Tensor, greedy: bool):
    if greedy:
        return torch.argmax(logits, dim=-1)
    return torch.distributions.Categorical(logits=logits, validate_args=False).sample()


def decode_step(logits: torch.Tensor, eos: torch.Tensor, greedy: bool):
    token = pick(logits, greedy)
    return torch.equal(token, eos)
'''
    assert [f.rule for f in analyze({"m.py": src})] == ["GL104"]
