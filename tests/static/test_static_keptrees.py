"""A worker keeps the libcst trees it parsed for the cross-file pass (graphlint.static.keptrees):
a summary walked over a kept tree must be exactly the one a fresh parse gives, the parse must
really be skipped, and nothing is kept beyond the budget or outside a worker."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from graphlint.static import keptrees, summarize as summarize_module
from graphlint.static.summarize import summarize_file
from static_helpers import builtin_rules, options

ROOT = Path(__file__).resolve().parents[2]
DSV4 = sorted((ROOT / "dsv4").rglob("*.py"), key=lambda p: -p.stat().st_size)[::5]  # the largest and more


@pytest.fixture
def keeping():
    """This process keeps trees, as a worker does; emptied after."""
    room = keptrees._room[0]
    keptrees.allow(1 << 30)
    try:
        yield
    finally:
        keptrees._kept.clear()
        keptrees._room[0] = room
        keptrees._fresh[0] = False


def _parses(monkeypatch) -> list[str]:
    seen: list[str] = []
    parse = summarize_module.parse_cst

    def counted(text, checked, tree=None):
        seen.append(text)
        return parse(text, checked, tree)

    monkeypatch.setattr(summarize_module, "parse_cst", counted)
    return seen


SMALL = b'''import torch
from .ops import fused


class Step:
    def __init__(self, model):
        self.model = model
        self.cache = None

    def __call__(self, x, n: int):
        if self.cache is None:
            self.cache = torch.zeros(n, device="cuda")
        y = fused(self.model(x))
        return y[: n], int(y.sum().item())
'''


def test_a_small_summary_over_a_kept_tree_pickles_as_a_fresh_ones(keeping, monkeypatch):
    rules = builtin_rules()
    opts = options(rules)
    parses = _parses(monkeypatch)
    fresh = summarize_file("pkg/step.py", SMALL, rules, opts, frozenset({"fused"}))
    again = summarize_file("pkg/step.py", SMALL, rules, opts, frozenset({"fused"}))
    assert len(parses) == 1 and fresh.data is not None and pickle.dumps(fresh) == pickle.dumps(again)


@pytest.mark.slow
def test_a_summary_over_a_kept_tree_is_the_one_a_fresh_parse_gives(keeping, monkeypatch):
    """Files of the bundled engine, with and without a cross-file fact: the second summary reads the
    first one's tree (no parse), and pickles to the same bytes as a summary of a fresh parse."""
    rules = builtin_rules()
    opts = options(rules)
    parses = _parses(monkeypatch)
    for n, path in enumerate(DSV4):
        data = path.read_bytes()
        for facts in (frozenset(), frozenset({"torch.cat"}))[n % 2:]:
            keptrees._kept.clear()
            fresh = summarize_file(str(path), data, rules, opts, facts)
            before = len(parses)
            again = summarize_file(str(path), data, rules, opts, facts)
            assert len(parses) == before, path  # the kept tree, not a parse
            assert fresh.data is not None and pickle.dumps(fresh) == pickle.dumps(again), path


def test_changed_bytes_are_parsed_again(keeping, monkeypatch):
    rules = builtin_rules()
    opts = options(rules)
    parses = _parses(monkeypatch)
    summarize_file("m.py", b"def f(x):\n    return x\n", rules, opts)
    summarize_file("m.py", b"def f(x):\n    return x + 1\n", rules, opts)
    summarize_file("n.py", b"def f(x):\n    return x\n", rules, opts)
    assert len(parses) == 3 and len(keptrees._kept) == 3


def test_nothing_is_kept_past_the_budget_or_outside_a_worker(monkeypatch):
    rules = builtin_rules()
    opts = options(rules)
    assert keptrees._room[0] == 0  # the test process is no worker: it keeps nothing
    summarize_file("m.py", b"def f(x):\n    return x\n", rules, opts)
    assert keptrees._kept == {}
    source = b"def f(x):\n    return x\n"
    try:
        keptrees.allow(len(source) * keptrees.BYTES_PER_CHAR)
        summarize_file("a.py", source, rules, opts)
        summarize_file("b.py", source, rules, opts)  # over what is left
        assert list(keptrees._kept) == [("a.py", summarize_file("a.py", source, rules, opts).sha256)]
    finally:
        keptrees._kept.clear()
        keptrees._room[0] = 0
        keptrees._fresh[0] = False


def test_the_budget_is_a_sixteenth_of_file_memory_at_most_256_mb():
    assert keptrees.budget(1 << 30) == 64 << 20
    assert keptrees.budget(4 << 30) == keptrees.budget(0) == keptrees.MOST == 256 << 20
