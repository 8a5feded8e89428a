"""A callable compiled with CUDA graphs flows like any value (issue 19 item 2): through names,
keyword parameters, fields and returns, its call is a replay (its target's forward is captured
code, its caller the host step) -- one folder per shape under ``fixtures/static/compiledflow/``,
each linked on its own, reporting exactly its ``# expect:`` markers with their severities.

- ``param_flow``: the mode an argparse option may choose (``choices``), the compiled model handed
  to a generator by keyword; the generator's eager prefill call (``if i == 0: model(ids)``) does not
  make its loop an eager decode loop.
- ``field_flow``: a factory whose mode is a parameter, called with a literal positionally; its
  result stored in a field and called by the step; the eager model's direct call stays eager.
- ``config_mode``: the mode a dataclass field's default holds; the model is a library's (its
  forward unseen), the loop calling it is the host step all the same.
- ``library_registry``: the model class a plugin registers by factory with a library's registry
  (``models.register_model(name, variant, factory)``); the library's loader of the same module
  (``get_model``) builds it, so compiling what it returned captures the class's forward; a class
  registered with another module's registry is not a model it returns.
- ``eager_mode`` (counter-case): no setting may ask for CUDA graphs -- the loop stays an eager
  decode loop, every rule strict.
- ``guessed_edge`` (counter-case): a compiled function installed into a library model's layers is
  reached only through an installed guess, which makes no host step: the loop is eager.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from static_helpers import analyze, builtin_rules, options, summarize
from test_static_fixture import expected, load, markers

from graphlint.static.compilemodes import scan
from graphlint.static.link import link

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "compiledflow"

ENTRIES = {  # shape -> (context, function, loop body only)
    "param_flow": {("graph", "model.py:TinyLM.forward", False), ("host", "generate.py:generate", True)},
    "field_flow": {("graph", "model.py:Decoder.forward", False), ("host", "runner.py:Runner.step", False),
                   ("host", "runner.py:serve", True)},
    "config_mode": {("host", "engine.py:Engine.generate", True)},
    "eager_mode": {("eager", "generate.py:generate", True)},
    "library_registry": {("graph", "models.py:PagedLM.forward", False), ("host", "serve.py:decode", True)},
    "guessed_edge": {("graph", "patch.py:fast_mlp", False), ("eager", "patch.py:chat", True)},
}


def entries(shape: str) -> set[tuple[str, str, bool]]:
    rules = builtin_rules()
    found: list = []
    link(summarize(load(SHAPES / shape)), rules, options(rules), entries_out=found)
    prefix = f"fixtures/static/compiledflow/{shape}/"
    return {(e.context, f"{e.function[0].removeprefix(prefix)}:{e.function[1]}", bool(e.loops)) for e in found}


@pytest.mark.parametrize("shape", sorted(ENTRIES))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    findings = analyze(files)
    found = {(f.path, f.line, f.rule) for f in findings}
    assert sorted(found - expected(files)) == [], "unexpected findings"
    assert sorted(expected(files) - found) == [], "missed hazards"
    severities = {(f.path, f.line, f.rule): f.severity for f in findings}
    for path, line, code in markers(files):
        rule, severity = code.split("/")
        assert severities[(path, line, rule)] == severity, (path, line, rule)


@pytest.mark.parametrize("shape", sorted(ENTRIES))
def test_the_compiled_call_is_a_replay_wherever_the_value_flowed(shape):
    assert entries(shape) == ENTRIES[shape]


@pytest.mark.parametrize("text, names, positional", [
    ('p.add_argument("--compile-mode", default="default", choices=["default", "reduce-overhead"])',
     ("compile_mode",), ()),
    ('p.add_argument("-m", "--mode-x", dest="cmode", default="max-autotune")', ("cmode",), ()),
    ('mode = "reduce-overhead"\nother = mode', ("mode", "other"), ()),
    ('mode = "reduce-overhead" if fast else "default"', ("mode",), ()),
    ('class C:\n    compile_mode: str = "reduce-overhead"', ("compile_mode",), ()),
    ('def f(model, cmode="max-autotune"): pass', ("cmode",), ()),
    ('opts = {"mode": "reduce-overhead"}', ("mode",), ()),
    ('build(model, "reduce-overhead")', (), (("build", 1),)),
    ('p.add_argument("--compile-mode", choices=["default", "max-autotune-no-cudagraphs"])', (), ()),
    ('mode = "default"', (), ()),
])
def test_names_that_may_hold_a_cuda_graph_mode(text, names, positional):
    import ast
    assert scan(text, ast.parse(text)) == (names, positional)
