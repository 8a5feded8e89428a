"""Sizes are not tensors: a parameter every caller passes Python numbers -- ``x.shape``, a tuple
of sizes unpacked from one, ``x.shape[-1]`` -- is no device value (:mod:`.valueflow`'s ``number``
parameter fact), so ``if input_shape[-1] > 1:`` is no host sync (GL105)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

MODEL = """
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def _mask(self, shape, x):
        if shape[-1] > 1:  # prefill builds a causal mask
            return torch.triu(torch.ones(shape[-1], shape[-1], device=x.device), 1)
        return None

    def _norm(self, x, n):
        if n > 1:
            return x / n
        return x

    def forward(self, ids):
        bsz, seqlen = ids.shape
        x = self.proj(ids.float())
        mask = self._mask({shape}, x)
        x = self._norm(x, {n})
        return x if mask is None else x + mask


def generate(model: Model, ids, steps: int):
    for _ in range(steps):
        logits = model(ids)
        ids = logits.argmax(-1)
    return ids
"""


def findings(tmp_path: Path, monkeypatch, shape: str, n: str) -> set[tuple[int, str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(textwrap.dedent(MODEL.format(shape=shape, n=n)))
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False)
    return {(f.line, f.rule) for f in run(settings).findings if f.rule == "GL105"}


def test_a_tuple_of_sizes_or_a_shape_passed_to_a_parameter_is_no_tensor(tmp_path, monkeypatch):
    cases = (("(bsz, seqlen)", "seqlen"), ("ids.shape", "ids.shape[-1]"), ("ids.size()", "x.size(-1)"))
    for i, (shape, n) in enumerate(cases):
        (tmp_path / str(i)).mkdir()
        assert findings(tmp_path / str(i), monkeypatch, shape, n) == set(), shape


def test_a_tensor_passed_to_the_same_parameter_is_still_tested(tmp_path, monkeypatch):
    found = findings(tmp_path, monkeypatch, "(bsz, seqlen)", "x.sum()")
    line = next(i for i, text in enumerate(textwrap.dedent(MODEL).splitlines(), 1) if "if n > 1:" in text)
    assert found == {(line, "GL105")}


def test_a_number_fact_is_learned_only_where_it_can_change_the_walk():
    """Numbers passed to a parameter matter only in a truth test of a parameter the walk would
    otherwise take for a tensor; anywhere else the fact would send the file round the cross-file
    pass again for nothing (on all of torch it sent 134 more files)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from static_helpers import summarize

    from graphlint.static.valueflow import value_facts_of

    callees = textwrap.dedent("""
        def decode_mask(shape):  # a decode-named function's parameter is presumed a tensor
            if shape[-1] > 1:
                return 1
            return 0

        def decode_offset(shape):
            return shape[-1] + 1

        def decode_typed(shape: tuple):
            if shape[-1] > 1:
                return 1
            return 0

        def helper(shape):  # not presumed a tensor: nothing to learn
            if shape[-1] > 1:
                return 1
            return 0
    """)
    caller = textwrap.dedent("""
        from m import decode_mask, decode_offset, decode_typed, helper

        def run(ids):
            bsz, seqlen = ids.shape
            a = decode_mask((bsz, seqlen))
            b = decode_offset((bsz, seqlen))
            c = decode_typed((bsz, seqlen))
            return a + b + c + helper((bsz, seqlen))
    """)
    facts = value_facts_of(summarize({"m.py": callees, "c.py": caller}))
    assert facts.get("m.py") == frozenset({"param:decode_mask:shape=number"})
