"""Missed hazards of fresh24's vox-serve, in look-alikes of our own under ``fixtures/static/rowreads/``.
Each folder is checked as a user would and reports exactly its ``# expect:`` markers, at their
severities (``closure_stop``, ``sampler_stop`` and ``list_upload`` each fail on main 1bd62ec):

- ``closure_stop``: a sampler's coroutine closure testing a stop mask of the enclosing function's
  sampled device ids row by row (a read per row per token); a closure rebinding the name to host
  data is silent. ``closure_host``: the mask copied to the host once before the closure: no read.
- ``sampler_stop``: ids from a sampler annotated ``-> torch.Tensor`` whose strategies disagree (a
  library kernel's result); a stop helper annotated ``List[int]`` calling ``.item()`` on the device
  row every caller passes; its twin indexes the ``.tolist()`` row it is given.
- ``list_upload``: ``torch.tensor([0, 1] * bs, device=...)`` in the host step, a pageable copy each
  step; built once at set-up, or joined and kept on the host, silent.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from static_helpers import assert_marked, check_fixture

from graphlint.static.closurefacts import inherit
from graphlint.static.matchers.call_args import python_sequence
from graphlint.static.tensorfacts import FunctionFacts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "rowreads"


@pytest.mark.parametrize("shape", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(monkeypatch, tmp_path, shape):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, shape), FIXTURES, shape)


def test_a_closure_takes_only_the_free_names_kinds_and_no_presumed_tensor():
    outer = FunctionFacts(tensors={"ids", "mask", "x"}, presumed={"x"}, hosts={"rows"})
    inner_def = cst.parse_statement("def settle(n):\n    mask = [0]\n    return ids, mask, rows, x, n\n")
    inner = FunctionFacts(defn=inner_def)
    inherit(outer, inner)
    assert inner.tensors == {"ids"}  # ``mask`` is rebound inside, ``x`` only presumed a tensor
    assert inner.hosts == {"rows"}


class _Oracle:
    def __init__(self, tensors: set[str]):
        self.tensors = tensors

    def is_tensor(self, node) -> bool:
        return type(node) is cst.Name and node.value in self.tensors


class _Ctx:
    def __init__(self, tensors: set[str]):
        self.oracle = _Oracle(tensors)


@pytest.mark.parametrize("code, listed", [
    ("[0, 1] * bs", True),
    ("bs * [pad]", True),
    ("[0] * bs + [1]", True),
    ("ids + [eos]", False),  # ``ids`` may be a tensor: ``+`` would broadcast
    ("[0.5] * scale", False),  # ``scale`` a tensor: ``list * tensor`` is a tensor
    ("a * b", False),
])
def test_only_a_repeated_or_joined_list_display_is_a_python_list(code, listed):
    node = cst.parse_expression(code)
    assert python_sequence(node, _Ctx({"scale"})) is listed
