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


def test_a_stream_consumed_through_a_name_and_a_row_retired_once(monkeypatch, tmp_path):
    """``stream = token_stream(...)`` then ``for i, ids in enumerate(stream):`` is a per-token loop
    over the generator's tokens (:mod:`graphlint.static.genloops`); in it, the branch that sets a
    row's flag, which the row loop skips on, runs once per row (:mod:`graphlint.static.retiredrows`)."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "streamrows")
    assert_marked(result.findings, load(FIXTURES / "streamrows"))


STREAM = """
import torch

class Tiny(torch.nn.Module):
    def forward(self, ids):
        return ids.float()

def steps(model, ids, n):
    for _ in range(n):
        nxt = torch.argmax(model(ids), dim=-1)
        ids = nxt
        yield ids

def complete(ids, n, eos):
    model = Tiny()
    done = [False] * 4
    stream = steps(model, ids, n)
    {rebind}
    for i, out in enumerate(stream):
        for j in range(4):
            {skip}
            if out[j].cpu()[-1] == eos:
                done[j] = True
                print(out[j].cpu().tolist())
"""


def _reads(**parts) -> list[int]:
    src = STREAM.format(**{"rebind": "pass", "skip": "pass", **parts})
    return sorted(f.line for f in analyze({"gen.py": src}) if f.rule == "GL103")


def test_a_name_bound_twice_is_no_stream_and_a_row_loop_without_its_skip_retires_nothing():
    assert _reads(skip="if done[j]: continue") == [22]
    assert _reads(skip="if done[j]: continue", rebind="stream = list(stream)") == []
    assert _reads() == [22, 24]  # no skip on the flag: the branch may run every token
