"""Value kinds through object fields (branch ``fieldfacts``; :mod:`graphlint.static.fieldkinds`,
:mod:`graphlint.static.receivers`): a record built with a device flag and yielded per token, read
by the consumer (``if row.done:``, ``all(r.done for r in rows)``); a ``@property`` returning a
device tensor; a plain class storing its constructor's argument; a per-step position handed to the
model inside its input record. Every store must agree: one
store of a Python bool and the field is unknown (the look-alikes report nothing). ``# expect:``
markers are the findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.static.valueflow import value_facts_of
from static_helpers import check_fixture, summarize
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "fieldfacts"


@pytest.mark.parametrize("name", ["records", "property", "plainclass", "stepfield", "numberfield"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def _facts(name: str, extra: dict[str, str] | None = None) -> set[str]:
    files = {p: s.decode() for p, s in load(FIXTURES / name).items()} | (extra or {})
    return {f for facts in value_facts_of(summarize(files)).values() for f in facts if f.startswith("field:")}


def test_record_fields_reach_the_readers_through_generators_and_comprehensions():
    facts = _facts("records")
    assert "field:main:row.done=tensor" in facts  # rows[0] of what complete() yields of generate()
    # a BaseModel record: ``done[0]`` of ``torch.zeros(1, device="cuda")``, an element of a 1-D device tensor (0-dim)
    assert "field:main:step.done=scalar" in facts
    assert "field:Engine.complete:rows[].done=tensor" in facts  # all(r.done for r in rows)
    assert not any("item.done" in f for f in facts)  # Mixed: one store is a Python bool
    assert not any("token" in f for f in facts)  # ints everywhere: no fact


def test_a_property_gives_what_its_getter_returns():
    facts = _facts("property")
    assert "field:Engine.generate:self.stop.finished=tensor" in facts
    # ``count`` returns ``_count``, which ``update`` advances every step: a per-step int (branch growcat)
    assert {f for f in facts if "count" in f} == {"field:Engine.generate:self.stop.count=step"}


def test_a_plain_class_field_is_what_every_constructor_call_passes():
    facts = _facts("plainclass")
    assert "field:generate:state.done=tensor" in facts
    assert not any("twin.done" in f for f in facts)  # host_flags passes a Python bool


def test_a_per_step_position_reaches_the_model_through_its_input_record():
    facts = _facts("stepfield")
    assert "field:Decoder.forward:batch.start=step" in facts
    assert not any("prompt.start" in f for f in facts)  # a literal 0 at every call


def test_a_field_every_store_of_which_is_a_number_is_a_python_number():
    """sfllm's ``forward_batch.max_kv_splits`` (``self.max_kv_splits = 16``) handed to a kernel
    wrapper whose parameters are presumed tensors: no GL105 error (branch ``fieldkind``)."""
    facts = _facts("numberfield")
    assert "field:Attention.forward:batch.splits=number" in facts
    assert not any("batch.limit" in f for f in facts)  # the runner stores a device tensor into it too
    # ``setattr(weight, key, v)`` on a parameter typed a tensor (weights.py) stores into no project
    # object; one on an untyped parameter may store anything into any field: no fact
    untyped = "def tag(obj, attrs):\n    for key, value in attrs.items():\n        setattr(obj, key, value)\n"
    assert not any("number" in f for f in _facts("numberfield", {"fixtures/static/fieldfacts/numberfield/tagging.py": untyped}))


PACKAGE = "fixtures/static/fieldfacts/numberfield/"


def _gl105_lines(monkeypatch, tmp_path, edits: dict[str, list[tuple[str, str]]]) -> set[int]:
    """The kernel's GL105 lines with ``edits`` (file -> [(old, new)]) made to the fixture."""
    files = {p: s.decode() for p, s in load(FIXTURES / "numberfield").items()}
    for name, pairs in edits.items():
        text = files.get(PACKAGE + name, "")
        for old, new in pairs:
            assert not old or old in text
            text = text.replace(old, new, 1) if old else text + new
        files[PACKAGE + name] = text
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    result = check_fixture(monkeypatch, tmp_path, tmp_path / "fixtures" / "static" / "fieldfacts", "numberfield")
    return {f.line for f in result.findings if f.rule == "GL105" and f.path.endswith("kernels.py")}


#: the model calls the kernel it keeps on the instance (``self.run_kernel = decode_split_fwd``)
KEPT = [("return decode_split_fwd(q,", "return self.run_kernel(q,")]


def test_a_number_field_reaches_a_kernel_kept_on_an_instance(monkeypatch, tmp_path):
    """sfllm's ``self.decode_attention_fwd(...)`` (fresh17 ``decode_attention.py:1002``): the value
    rounds follow the call into the module function every store of the field keeps."""
    assert _gl105_lines(monkeypatch, tmp_path, {"model.py": KEPT}) == {8}


def test_a_kernel_a_subclass_keeps_something_else_in_the_field_stays_unknown(monkeypatch, tmp_path):
    """A subclass storing its constructor's argument into the field: ``self.run_kernel(...)`` may run
    anything, and the kernel's other caller (the check script) no longer decides its parameters."""
    sub = ("\n\nclass FastAttention(Attention):\n    def __init__(self, dim: int, fwd):\n"
           "        super().__init__(dim)\n        self.run_kernel = fwd\n")
    assert _gl105_lines(monkeypatch, tmp_path, {"model.py": [*KEPT, ("", sub)]}) == {7, 8}
    other = "\n\ndef swap(attn, fwd):\n    attn.run_kernel = fwd\n"  # a store on any object: the same
    assert _gl105_lines(monkeypatch, tmp_path, {"model.py": [*KEPT, ("", other)]}) == {7, 8}


def test_a_local_bound_once_to_a_literal_is_a_number_and_one_advanced_is_not(monkeypatch, tmp_path):
    """The check script's ``splits = 8`` agrees with the batch field's 16 (both Python ints); bound
    again or advanced, the literal is no longer what every read of the name holds."""
    assert _gl105_lines(monkeypatch, tmp_path, {}) == {8}
    for edit in ("    splits += 8\n", "    splits = logits.shape[2]\n", "    for splits in plan(batch):\n        pass\n"):
        again = [("    indptr = torch.zeros(", edit + "    indptr = torch.zeros(")]
        assert _gl105_lines(monkeypatch, tmp_path / str(len(edit)), {"check_kernel.py": again}) == {7, 8}, edit


def test_the_previous_position_a_range_loop_carries_is_advanced():
    import libcst as cst

    from graphlint.static.iterations import advanced_names

    loop = cst.parse_statement("for cur in range(a, b):\n    f(prev)\n    prev = cur\n")
    assert advanced_names(loop) == {"prev"}
    other = cst.parse_statement("for cur in items:\n    f(prev)\n    prev = cur\n")
    assert advanced_names(other) == set()  # a loop over items: ``prev`` is the last item, not a position
