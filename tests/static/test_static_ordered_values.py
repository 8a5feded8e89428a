"""Ordered comparisons and membership against literals decide branches too (:mod:`.valuefacts`
``("cmp", ...)`` / ``("in", ...)``, :mod:`.argvalues`): ``if top_k > 0:`` where every hot caller
passes ``top_k=-1`` is dead; one unknown value, or a value Python cannot order, decides nothing."""

from __future__ import annotations

import textwrap

from static_helpers import analyze, decode_loop


def run(src: str):
    return analyze({"m.py": textwrap.dedent(src)})


def model(branch: str, default: str = "-1") -> str:
    return f"""
import torch

class M(torch.nn.Module):
    def forward(self, x, top_k={default}, mode="decode"):
        {branch}
            x.sum().item()
        return x * 2
""" + decode_loop("{args}") + """
def main():
    loop(M(), torch.zeros(3), 4)
"""


def test_an_ordered_comparison_every_hot_value_fails_is_dead():
    for branch in ("if top_k > 0:", "if 0 < top_k:", "if top_k >= 1:", "if not top_k < 0:",
                   'if mode in ("prefill", "extend"):', 'if mode not in ["decode"]:'):
        assert run(model(branch).format(args="")) == [], branch


def test_an_ordered_comparison_a_hot_value_passes_stays():
    for branch in ("if top_k < 0:", "if top_k <= -1:", "if 0 > top_k:", 'if mode in ("decode",):'):
        found = run(model(branch).format(args=""))
        assert [f.rule for f in found] == ["GL101"], branch


def test_an_unknown_or_unorderable_value_decides_nothing():
    # a caller passing something unknown, "some object", or None (``None > 0`` raises: not decided)
    for args, default in ((", top_k=x.numel()", "-1"), (", top_k=[1]", "-1"), ("", "None")):
        found = run(model("if top_k > 0:", default).format(args=args))
        assert [f.rule for f in found] == ["GL101"], (args, default)
    # a display holding a non-literal decides nothing either
    found = run(model('if mode in ("prefill", x):').format(args=""))
    assert [f.rule for f in found] == ["GL101"]


def test_a_configuration_field_with_one_stored_value_is_ordered_too():
    src = """
import torch

class Cfg:
    top_k = -1

class M(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def forward(self, x):
        if self.cfg.top_k > 0:
            x.sum().item()
        return x * 2
""" + decode_loop() + """
def main():
    {setup}
    loop(M(cfg), torch.zeros(3), 4)
"""
    assert run(src.format(setup="cfg = Cfg()")) == []
    assert run(src.format(setup="cfg = Cfg(); cfg.top_k = 50")) != []
