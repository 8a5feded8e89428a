"""Per-token loops in other shapes than ``for i in range(n): x = f(x)`` over a local: iterator
objects (their ``__next__`` is the per-token body), state kept on ``self``, loops over ``tqdm(range(n))`` and
``itertools.count()``, a per-call wrapper's first-call branch. The look-alike packages
``fixtures/static/engines/{tokeniter,feedback,selfgenerate}`` hold the same at engine scale."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze, builtin_rules, options, summarize

from graphlint.static.link import link

ROOT = Path(__file__).resolve().parents[2]
TOKENITER = ROOT / "fixtures" / "static" / "engines" / "tokeniter"


def entries(files: dict[str, str | bytes]) -> dict[str, str]:
    out = []
    link(summarize(files), builtin_rules(), options(), out)
    return {e.function[1]: e.reason for e in out if e.context == "eager"}


def found(src: str) -> list[tuple[str, str]]:
    """(the reported line, stripped; the rule) for each finding."""
    return sorted((f.line_text.strip(), f.rule) for f in analyze({"m.py": src}))


def test_iterator_steps_and_generators_are_entries_and_data_iterators_are_not():
    files = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in sorted(TOKENITER.glob("*.py"))}
    got = entries(files)
    assert got["TokenStream.__next__"] == "per-token iterator step (one next() per token) calling Decoder.forward"
    # the model step in a method of its own, reading the ``self`` state ``__next__`` grows
    assert got["Sampled.__next__"] == "per-token iterator step (one next() per token) calling Sampled._logits"
    assert got["Generation.__iter__"].startswith("per-token loop calling")  # a generator ``__iter__``
    assert got["stream_tokens"].startswith("per-token loop calling")  # a generator function
    # a data loader, a tokenizer's generator, a feature extractor over images, training: none
    for name in ("Batches.__next__", "Vocab.__iter__", "Embedded.__next__", "encode_images", "embed_all", "train"):
        assert name not in got, name


MODEL = """
import itertools

import torch
from torch import nn
from tqdm import tqdm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)
"""


def test_output_fed_back_through_an_attribute_or_an_attributes_container_is_a_per_token_loop():
    src = MODEL + """

class Engine:
    def __init__(self, net: Net):
        self.net, self.out, self.log = net, [], []

    def run(self, x: torch.Tensor, n: int):
        self.out = [x]
        for _ in tqdm(range(n)):
            y = self.net(self.out[-1])
            self.out.append(y.argmax(-1))
            print(y.max().item())

    def until(self, x: torch.Tensor):
        self.last = x
        for i in itertools.count():
            self.last = self.net(self.last)
            if self.last.sum().item() > 0 or i > 9:
                return self.last
"""
    assert found(src) == [("if self.last.sum().item() > 0 or i > 9:", "GL101"),
                          ("print(y.max().item())", "GL101")]


def test_two_unrelated_attributes_do_not_feed_each_other():
    """``self.feats`` collects what the model made; the model reads ``self.images`` and ``self.at``:
    no token comes back (a feature extractor over a dataset, not a decode)."""
    src = MODEL + """

class Extract:
    def __init__(self, net: Net, images: list):
        self.net, self.images, self.at, self.feats = net, images, 0, []

    def run(self):
        while self.at < len(self.images):
            feat = self.net(self.images[self.at])
            self.feats.append(feat)
            self.at += 1
            print(feat.sum().item())
"""
    assert found(src) == []


def test_a_branch_clearing_its_own_flag_is_the_first_calls_setup():
    src = MODEL + """

class Wrapper:
    def __init__(self, net: Net):
        self.net, self._first = net, True

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self._first:
            print(x.sum().item())
            self._first = False
        return self.net(x).sum().item()


def generate(w: Wrapper, x: torch.Tensor, n: int):
    for _ in range(n):
        x = torch.full((4,), w(x))
    return x
"""
    # the first call's read-back is silent; every call's read-back and the per-token allocation are not
    assert found(src) == [("return self.net(x).sum().item()", "GL101"), ("x = torch.full((4,), w(x))", "GL201")]
