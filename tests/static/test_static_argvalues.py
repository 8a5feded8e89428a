"""Reachability that depends on values (:mod:`graphlint.static.argvalues`): the branches no hot
caller's arguments, and no value the project stores into a configuration field, can take."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphlint.static.link import link
from static_helpers import DECODE_LOOP, analyze, builtin_rules, decode_loop, options, summarize

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "argvalues"


def fixture_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}


def lines(findings) -> list[tuple[str, int]]:
    return sorted((f.path, f.line) for f in findings)


def source_line(files: dict[str, str], path: str, marker: str) -> int:
    return next(i for i, text in enumerate(files[path].splitlines(), 1) if marker in text)


def test_the_fixture_reports_only_the_branch_the_decode_loop_takes():
    files = fixture_files()
    found = [f for f in analyze(files) if f.rule.startswith("GL1")]
    assert lines(found) == [("model.py", source_line(files, "model.py", "# LIVE"))]


def test_entries_count_the_decided_branches():
    rules = builtin_rules()
    contexts = []
    link(summarize(fixture_files(), rules), rules, options(rules), contexts_out=contexts)
    assert contexts[0].decided >= 5


def run(src: str, **files: str):
    return analyze({"m.py": textwrap.dedent(src), **{k: textwrap.dedent(v) for k, v in files.items()}})


LOOP = "\nimport torch\n" + DECODE_LOOP


def model_with(branch: str) -> str:
    return f"""
import torch

class M(torch.nn.Module):
    def forward(self, x, mask=None, use_cache=True, mode="decode"):
        {branch}
            x.sum().item()
        return x * 2

def build():
    return M()

def main():
    from m import loop
    loop(build(), torch.zeros(3), 4)
"""


def test_a_parameter_every_hot_caller_passes_as_a_constant_decides_its_branch():
    for branch in ("if mask is not None:", "if not use_cache:", 'if mode == "prefill":',
                   'if mode != "decode":', "if mask is not None and use_cache:"):
        assert run(LOOP.format(args=""), n=model_with(branch)) == [], branch


def test_an_unknown_argument_keeps_the_branch():
    for args, branch in ((", mask=x", "if mask is not None:"), (", **kw", "if mask is not None:"),
                         (", use_cache=x.numel() > 3", "if not use_cache:"), ("", "if mask is None:"),
                         ("", "if mask is not None or x.dim() > 1:")):
        src = LOOP.format(args=args).replace("def loop(model, x, n):", "def loop(model, x, n, **kw):")
        found = run(src, n=model_with(branch))
        assert [f.rule for f in found] == ["GL101"], (args, branch)


def test_a_parameter_rebound_before_the_branch_is_unknown_unless_to_a_constant():
    body = """
import torch

class M(torch.nn.Module):
    def forward(self, x, mask=None):
        {rebind}
        if mask is not None:
            x.sum().item()
        return x * 2
""" + decode_loop() + """
def main():
    loop(M(), torch.zeros(3), 4)
"""
    assert run(body.format(rebind="mask = x > 0")) != []
    assert run(body.format(rebind="mask = None")) == []
    assert run(body.format(rebind="if x.dim() > 3:\n            mask = x > 0")) != []


def test_a_configuration_field_the_project_stores_one_constant_into_is_decided():
    src = """
import torch

class Cfg:
    impl = "eager"

class M(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def forward(self, x):
        if self.cfg.impl == "flash":
            x.sum().item()
        return x * 2
""" + decode_loop() + """
def main():
    {setup}
    loop(M(cfg), torch.zeros(3), 4)
"""
    assert run(src.format(setup="cfg = Cfg()")) == []
    assert run(src.format(setup="cfg = Cfg(); cfg.impl = 'flash'")) != []  # the project can set it
    assert run(src.format(setup="cfg = Cfg(); cfg.impl = input()")) != []  # a value from outside: unknown
    assert run(src.format(setup="cfg = Cfg(**kw)").replace("def main():", "def main(**kw):")) != []


def test_a_field_no_analysed_code_stores_is_unknown_but_getattr_has_its_default():
    src = """
import torch

class M(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def forward(self, x):
        if {test}:
            x.sum().item()
        return x * 2
""" + decode_loop() + """
def main(config):
    loop(M(config), torch.zeros(3), 4)
"""
    assert run(src.format(test="self.config.flash")) != []  # a library may set it
    assert run(src.format(test='getattr(self.config, "flash", False)')) == []


def test_a_shape_branch_in_captured_code_is_at_most_a_warning():
    src = """
import torch

def evict(x):
    return x.sum().item()

class Runner:
    def step(self, x):
        if x.shape[-1] > 64:
            evict(x)
        return x * 2

    def capture(self, x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.step(x)
        self.g = g
"""
    found = [f for f in run(src) if f.rule == "GL101"]
    assert [f.severity for f in found] == ["warning"]
    assert "tensor shapes" in found[0].message
