"""What runs once or stays bounded is no per-step cost: queues and windows are not growing
tensors, lazy state and one-step branches are setup. Their look-alikes at engine scale are in
``fixtures/static/engines/sampling/``."""

from __future__ import annotations

from static_helpers import analyze


def found(src: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in analyze({"m.py": src})]


QUEUES = """
import torch

class Pool:
    def give(self, pages: torch.Tensor):
        self.free = torch.cat([self.free, pages])

    def take(self, n: int) -> torch.Tensor:
        self.free, out = self.free[n:], self.free[:n]
        return out

class Window:
    def push(self, ids: torch.Tensor):
        self.ctx = torch.cat([self.ctx, ids[:, -1:]], dim=1)
        self.ctx = self.ctx[:, 1:]

class Cache:
    def update(self, k: torch.Tensor):
        self.keys = torch.cat([self.keys, k], dim=-2)
        return self.keys

    def rollback(self, n: int):
        self.keys = self.keys[..., :n, :]

def decode_step(pool: Pool, win: Window, cache: Cache, ids: torch.Tensor, k: torch.Tensor):
    pool.give(ids)
    win.push(ids)
    return cache.update(k)
"""


def test_tensors_consumed_from_the_front_are_queues_or_windows_not_growing():
    """A free list handed out from its front, a context trimmed back after each append: bounded.
    A cache trimmed from its end (a rollback) still grows every step."""
    assert found(QUEUES) == [(19, "GL207")]


def test_a_tail_window_rebuilt_every_call_is_no_growing_tensor_unless_a_loop_carries_it():
    src = """
import torch

def decode_step(positions: torch.Tensor, k: int, steps: int):
    window = positions[:, -k:]
    window = torch.cat([window, window + k], dim=-1)
    carried = positions[:, -k:]
    for _ in range(steps):
        carried = torch.cat([carried, carried[:, -1:] + 1], dim=-1)
    whole = positions[:, :-1]
    whole = torch.cat([whole, whole[:, -1:]], dim=-1)
    return window, carried, whole
"""
    assert found(src) == [(9, "GL207"), (11, "GL207")]


def test_a_window_at_constant_bounds_rebuilt_in_the_loop_is_no_growing_tensor():
    """``row = logits[0, 0, :VOCAB_SIZE]`` then ``row = torch.hstack((row, eos))`` in the same loop:
    the row is cut to the same size every iteration; a window whose bound is no constant is still
    taken for a growing tensor (it may be the carried one, cut back)."""
    src = """
import torch

VOCAB_SIZE = 1000

def decode_step(logits: torch.Tensor, n: int, steps: int):
    for _ in range(steps):
        row = logits[0, 0, :VOCAB_SIZE]
        row = torch.hstack((row, logits[0, 0, -1:]))
        upto = logits[0, 0, :n]
        upto = torch.cat([upto, upto[-1:]])
        logits = logits + row.sum() + upto.sum()
    return logits
"""
    assert found(src) == [(11, "GL207")]


def test_lazy_state_in_a_dict_slot_is_setup():
    src = """
import torch

class Guidance:
    def __call__(self, ids: torch.Tensor, scores: torch.Tensor):
        if self.state["mask"] is None:
            self.state["mask"] = torch.ones_like(ids)
        if self.state["other"] is None:
            self.state["mask"] = torch.zeros_like(ids)
        return scores

def decode_step(g: Guidance, ids: torch.Tensor, scores: torch.Tensor):
    return Guidance()(ids, scores)
"""
    assert found(src) == [(9, "GL202")]


def test_a_branch_true_at_one_position_runs_once_per_generation():
    """``cur_len == 1`` and ``step == self.last - 1`` are one step each; ``seqlen == 1`` is every
    decode step (a step's token count, a prefill guard), ``cur_len == past_len`` (two positions) may be any step.
    The test itself is still a branch on a Python position (GL309): capture would freeze it."""
    src = """
import torch

def decode_step(ids: torch.Tensor, scores: torch.Tensor, step: int, last: int, past_len: int):
    cur_len = ids.shape[-1]
    seqlen = 1
    if cur_len == 1:
        scores = torch.full_like(scores, -1.0)
    if step == last - 1:
        scores = torch.zeros_like(scores)
    if seqlen == 1:
        scores = torch.ones_like(scores)
    if cur_len == past_len:
        scores = torch.empty_like(scores)
    if step % 8 == 0:
        scores = torch.rand_like(scores)
    return scores
"""
    assert found(src) == [(9, "GL309"), (12, "GL202"), (13, "GL309"), (14, "GL202"), (15, "GL309"), (16, "GL202")]


def test_a_branch_on_an_option_nothing_sets_is_dead_code():
    """``if self.packed is not None:`` where no analysed code gives ``packed`` a value is dead;
    a value set on the object (``proc.bias = ...``), by a subclass or by ``setattr(self, name, v)``
    in the class keeps the branch live."""
    src = """
import torch

class Proc:
    def __init__(self):
        self.packed = None
        self.bias = None
        self.extra = None

    def __call__(self, scores: torch.Tensor):
        if self.packed is not None:
            scores = scores + torch.zeros_like(scores)
        if self.bias is not None and scores.dim() == 2:
            scores = scores + torch.ones_like(scores)
        if self.extra is not None:
            scores = scores + torch.empty_like(scores)
        return scores

class Configured(Proc):
    def configure(self, options: dict):
        for key, value in options.items():
            setattr(self, key, value)

def decode_step(scores: torch.Tensor):
    proc = Proc()
    proc.bias = scores[0]
    return proc(scores)
"""
    assert found(src) == [(12, "GL202"), (14, "GL202"), (16, "GL202")]  # a subclass sets any attribute
    assert found(src.replace("            setattr(self, key, value)", "            pass")) == [(14, "GL202")]
