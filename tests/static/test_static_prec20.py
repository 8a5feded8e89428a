"""False errors of fresh20's dInfer, in look-alikes of our own under ``fixtures/static/prec20/``. Each
folder is linked on its own and reports exactly its ``# expect:`` markers, at their severities.

- ``dynamic_compile``: a block forward compiled ``mode="reduce-overhead", dynamic=True`` (and a
  decorated function compiled so) slices a table by a Python start offset: the int is symbolic
  there, a graph recorded per distinct value, nothing frozen -- GL308 is an info (it was an error).
- ``frozen_ints``: the same without ``dynamic=True``: dynamo specialises the int, the error stays.
- ``captured_too``: a ``torch.cuda.graph`` capture reaches the same rotary layer beside the dynamic
  compile (the same function compiles and captures): the capture freezes it, the error stays.
- ``block_loops``: block diffusion -- a loop over blocks around a ``while True`` that unmasks one
  block until no mask is left: the nested loop, which can stop itself, is the step; the block's
  set-up (a schedule helper, a cache-update forward, a ``zeros_like`` mask) and its end-of-text
  test run once per block (they were a GL202 warning and a GL105 error). Beside it, a draft loop
  that may stop early nested in a token loop that verifies with another model after it: the
  token loop stays the step (its read of the accepted count is reported).
- ``keyed_tables``: tables kept in a dict of buffers (``if (t := cache.get("k")) is not None and
  t.shape[-2] >= n: return ...``, then built by ``n`` and stored back into ``cache["k"]``) are
  refreshed only when a request outgrows them, as the field tables of :mod:`.growtables`: their
  builds were GL201 per step. A buffer tested so but never stored back is built every call.
- ``python_tests``: an unannotated ``backend`` parameter compared with a string literal
  (``if backend == "vllm":``, ``(0, 0) if backend == "sglang" else None``) is a Python test, not a
  tensor read (they were GL105); a count of the block's masks compared with a number still is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from static_helpers import analyze, builtin_rules
from test_static_fixture import assert_marked, load


ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "prec20"


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    assert_marked(analyze(files), files)


def test_only_the_literal_true_makes_a_compile_dynamic():
    """``dynamic=None`` (the default: automatic dynamic after a recompile) keeps the error."""
    files = load(SHAPES / "dynamic_compile")
    serve = next(p for p in files if p.endswith("serve.py"))
    files[serve] = files[serve].replace(b"dynamic=True", b"dynamic=None")
    severities = {f.line: f.severity for f in analyze(files) if f.rule == "GL308" and f.path.endswith("model.py")}
    assert severities == {14: "error", 29: "info"}


def test_the_rule_examples_compiled_dynamic_is_an_info():
    """GL308's second bad example (a compile without ``dynamic=True``) is an error; the same code
    compiled ``dynamic=True`` is the info its ``why`` describes."""
    example = builtin_rules()["GL308"].bad[1]
    assert [f.severity for f in analyze({"m.py": example})] == ["error"]
    dynamic = example.replace('mode="reduce-overhead")', 'mode="reduce-overhead", dynamic=True)')
    assert [f.severity for f in analyze({"m.py": dynamic})] == ["info"]
