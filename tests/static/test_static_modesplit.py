"""Branches a capture or a compile never takes (``fixtures/static/modesplit``, :mod:`graphlint.static.guards`).

``if q.is_cuda and torch.cuda.is_current_stream_capturing(): return fast(...)``: a capture records
CUDA work only, so the rest of the function runs eagerly, never in the graph. ``if not
torch.compiler.is_compiling():`` is skipped by a compiled function's trace: its body is no finding
where only compiled code reaches it, and keeps its finding where an uncompiled run reaches it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from static_helpers import assert_marked, check_fixture

from graphlint.static.guards import COMPILING, compile_condition, guarded_branch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "modesplit"
IMPORTS = {"torch": "torch"}


@pytest.mark.parametrize("name", ["capture_arm.py", "compiled_checks.py"])
def test_fixture_findings_are_its_markers(monkeypatch, tmp_path, name):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


@pytest.mark.parametrize("test, branch", [
    ("q.is_cuda and torch.cuda.is_current_stream_capturing()", "orelse"),
    ("torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()", "orelse"),
    ("x.device.type == 'cuda' and torch.cuda.is_current_stream_capturing()", "orelse"),
    ("q.is_contiguous() and torch.cuda.is_current_stream_capturing()", None),
    ("not (q.is_cuda and torch.cuda.is_current_stream_capturing())", "body"),
    ("q.is_cuda or torch.cuda.is_current_stream_capturing()", "orelse"),
    ("q.is_cuda", None),
])
def test_a_cuda_test_beside_the_capturing_test(test, branch):
    assert guarded_branch(cst.parse_expression(test), IMPORTS, ()) == branch


def test_compile_tests_are_conditions_not_guards():
    assert compile_condition(cst.parse_expression("torch.compiler.is_compiling()"), IMPORTS) == COMPILING
    assert compile_condition(cst.parse_expression("not torch._dynamo.is_compiling()"), IMPORTS) == ("not", COMPILING)
    assert compile_condition(cst.parse_expression("is_compiling()"), {}) is None
    assert guarded_branch(cst.parse_expression("not torch.compiler.is_compiling()"), IMPORTS, ()) is None


def test_a_placement_keyword_is_no_callback():
    """``torch.zeros(n, device=self.device)``: a field handed over as a device is data, never called back --
    where the points-to cannot tell the field from a model (vllm-i64's paged cache), every model's forward
    became a callback of the cache and the eager values of its parameters opened."""
    from static_helpers import summarize

    src = (
        "import threading\nimport torch\n\n"
        "class Cache:\n"
        "    def read(self, n):\n"
        "        threading.Thread(target=self.flush).start()\n"
        "        return torch.zeros(n, device=self.device, dtype=self.dtype)\n\n"
        "    def flush(self):\n"
        "        pass\n"
    )
    [summary] = summarize({"cache.py": src})
    refs = {site.expr for site in summary.data.functions["Cache.read"].calls if site.reference}
    assert refs == {("a", ("n", "self"), "flush")}
