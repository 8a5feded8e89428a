"""Reads graphlint could not see (branch ``readbacks``): a device tensor copied into pinned or
``device="cpu"`` host memory without ``non_blocking`` (GL112: the copy waits for the stream), and a
library method that copies its device arguments to the host (GL113: FlashInfer's ``plan``, from the
rule's ``apis`` table). The look-alikes stay quiet: the asynchronous copy, a host-to-host copy, a
buffer made with no device (a default device may put it on the GPU), host metadata handed to
``plan``, a project class's own ``plan``. And a parameter's ``None`` default filled in by the function
(``if plan is None: plan = make_plan(...)``): the caller's fallback, not the step, unless a hot caller
is seen to leave it out -- then the plan is made every step. A vocoder whose convs stay weight-normed
rebuilds their weights on every call (GL212, reported where the weight-normed module is entered; quiet
where the file folds the normalisation away). ``# expect:`` markers are the findings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from graphlint.rules import RuleError
from graphlint.static.matchers import build_matchers
from static_helpers import analyze, builtin_rules, check_fixture
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "readbacks"


@pytest.mark.parametrize("name", ["offload", "fillplan", "wnvocoder", "wnloaders"])
def test_each_package_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def _codes(src: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.rule) for f in analyze({"example.py": src}) if f.rule in ("GL112", "GL113"))


def test_a_field_stored_a_device_tensor_elsewhere_is_no_host_buffer():
    """``self.buf`` made on the CPU, then moved (``self.buf = self.buf.cuda()``): not host memory."""
    src = '''
import torch

class Step:
    def __init__(self, n: int):
        self.buf = torch.zeros(n, device="cpu")

    def to_gpu(self):
        self.buf = self.buf.cuda()

    def decode_step(self, x: torch.Tensor):
        self.buf.copy_(x * 2)
        return self.buf
'''
    assert _codes(src) == []


def test_the_second_positional_argument_is_non_blocking():
    src = '''
import torch

class Step:
    def __init__(self, n: int):
        self.host = torch.zeros(n).pin_memory()

    def decode_step(self, x: torch.Tensor):
        self.host.copy_(x * 2, True)
        self.host.copy_(x * 3, False)
        return self.host
'''
    assert _codes(src) == [(10, "GL112")]


def test_a_library_class_by_package_and_name_whatever_the_module_path():
    src = '''
import torch
from flashinfer.prefill import BatchPrefillWithPagedKVCacheWrapper
from otherlib import BatchDecodeWithPagedKVCacheWrapper as Other

def decode_step(buf: torch.Tensor, x: torch.Tensor):
    w = BatchPrefillWithPagedKVCacheWrapper(buf, "NHD")
    w.plan(x * 2, x, x)
    o = Other(buf)
    o.plan(x * 2, x, x)
    w = Other(buf)
    w.plan(x * 2, x, x)
'''
    assert _codes(src) == [(8, "GL113")]


def test_the_apis_table_is_validated():
    rule = builtin_rules()["GL113"]
    bad = replace(rule, params={**rule.params, "apis": {"plan": ["plan"]}})
    with pytest.raises(RuleError):
        build_matchers({"GL113": bad})


@pytest.mark.parametrize("pick", ["    if isinstance(m, nn.Linear):\n        remove_weight_norm(m)",
                                  "    if not isinstance(m, nn.Linear):\n        return\n    remove_weight_norm(m)",
                                  "    if type(m) is nn.Linear:\n        remove_weight_norm(m)"])
def test_an_apply_callback_kept_to_some_layer_types_folds_no_tree(pick):
    """``codec.apply(strip)`` where ``strip`` removes the normalisation from linear layers only (in its
    ``if``, after an early return, by ``type(m)``): the weight-normed convs stay, and so does GL212."""
    codec = (FIXTURES / "wnloaders" / "applied.py").read_text()
    loader = f'''
from torch import nn
from torch.nn.utils import remove_weight_norm
from applied import AppliedCodec

def strip(m):
{pick}

def load(dim):
    codec = AppliedCodec(dim)
    codec.apply(strip)
    return codec
'''
    found = [(f.path, f.line) for f in analyze({"applied.py": codec, "loader.py": loader}) if f.rule == "GL212"]
    assert found == [("applied.py", 28)]
