"""A decode loop over a model it is handed, whose package's modules all share the model's calling
convention (branch ``boundmodel``, :mod:`graphlint.static.modelroots`).

The loop's call binds the attention, the layer, the stack and the model alike -- too many classes
for a call on an open receiver to mean -- but only the model is a root of the package's module
tree (no other module builds it): the user hands the loop the root. Four roots resolve nothing."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.arity import fills_twice
from graphlint.static.decode_path import DecodePath
from graphlint.static.decode_record import decode_path_record
from graphlint.static.link import link
from test_static_fixture import assert_marked, load
from static_helpers import analyze, builtin_rules, check_fixture, options, summarize

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "apimodel"


def test_a_handed_model_resolves_to_the_root_of_the_module_tree(monkeypatch, tmp_path):
    """The loop is an eager per-token loop at full severity, and the root's layers are reached: the
    KV cache regrown from a cast of the state handed in, the layer's read-back."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "handedtree")
    assert_marked(result.findings, load(FIXTURES / "handedtree"))


def test_the_call_resolved_to_the_root_is_listed_by_class(monkeypatch):
    monkeypatch.chdir(ROOT)
    out: list[DecodePath] = []
    link(summarize(load(FIXTURES / "handedtree")), builtin_rules(), options(), decode_out=out)
    [row] = decode_path_record(out[0], lines="all")["by_class"]
    assert (row["function"], row["targets"]) == ("stream_tokens", ["CodeModel.forward"])


def test_four_roots_resolve_nothing_and_the_loop_stays_a_warning(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "handedforest")
    assert_marked(result.findings, load(FIXTURES / "handedforest"))


def test_a_keyword_for_a_filled_position_binds_nothing():
    class Flow:
        params = ("self", "hidden", "mask", "past")
        fkind = "m"

        def call_params(self):
            return self.params[1:]

    three = ((("a",), ("b",), ("c",)), (("past", ("p",)),), False, False)
    two = ((("a",), ("b",)), (("past", ("p",)),), False, False)
    splat = ((("a",), ("b",), ("c",)), (("past", ("p",)),), ("xs",), False)
    assert fills_twice(Flow(), three)
    assert not fills_twice(Flow(), two)
    assert not fills_twice(Flow(), splat)


CAST_STATE = """
import torch

def attend(q, k, past):
    past_k = past[0]
    k = torch.cat([past_k.to(k.dtype), k], dim=1)
    present = (k,)
    return q @ k.transpose(1, 2), present

def decode_step(q, k, past):
    return attend(q, k, past)
"""

CAST_CONSUMED = """
import torch

def attend(q, k, past):
    past_k = past[0]
    k = torch.cat([past_k.to(k.dtype), k], dim=1)
    return q @ k.transpose(1, 2)

def decode_step(q, k, past):
    return attend(q, k, past)
"""


def test_a_cast_of_the_state_handed_in_grows_when_handed_back():
    assert [f.line for f in analyze({"attn.py": CAST_STATE}) if f.rule == "GL207"] == [6]
    assert [f.line for f in analyze({"attn.py": CAST_CONSUMED}) if f.rule == "GL207"] == []
