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
