"""Host weights copied per step (branch ``hostweights``): a class's fields are pinned or pageable
where its load method binds them, and a copy of another object's field into a device slot every
step is a pageable upload when the load left it pageable (:mod:`graphlint.static.loadedfields`)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from graphlint.static.loadedfields import DEVICE, HOST, LOADED, MOVED, PINNED, LoadedFields, binding
from graphlint.static.tensorfacts import ClassFacts, FunctionFacts
from static_helpers import analyze, check_fixture
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "hostweights"


@pytest.mark.parametrize("name", ["offload"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


class _Oracle:
    def __init__(self):
        self.fn, self.cls, self.default_device = FunctionFacts(), ClassFacts(), 0

    def is_self_attr(self, node):
        return node.attr.value if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
            and node.value.value == "self" else None


@pytest.mark.parametrize(("source", "expected"), [
    ("block.attn.weight.detach()", (LOADED, "block")),
    ("block.attn.weight.detach().pin_memory()", (PINNED, "block")),
    ("torch.cat([block.q.weight.detach(), block.k.weight.detach()], dim=0)", (LOADED, "block")),
    ("self.w.to(device, non_blocking=True)", (MOVED, None)),
    ("torch.empty_like(block.w).to(device)", (DEVICE, None)),
    ("torch.empty_like(block.w, device=device)", (DEVICE, None)),
    ("torch.zeros(4, 8)", (HOST, None)),
    ("self.w.to(torch.float16)", None),
    ("torch.empty_like(block.w)", None),
    ("other_fn(block)", None),
])
def test_what_a_binding_says_of_its_field(source, expected):
    value = cst.parse_expression(source)
    assert binding("w", value, {"block", "device"}, _Oracle(), {"torch": "torch"}) == expected


def test_a_loaded_field_is_pageable_only_with_evidence_from_its_class():
    fields = LoadedFields()
    for cls in ("Moved", "Sibling", "Silent", "PinnedLater"):
        fields.note(cls, "load", "w", (LOADED, "block"))
        fields.note(cls, "reserve", "w", (DEVICE, None))
    fields.note("Moved", "place", "w", (MOVED, None))
    fields.note("Sibling", "load", "q", (PINNED, "block"))
    fields.note("PinnedLater", "place", "w", (MOVED, None))
    for cls in ("Moved", "Sibling", "Silent"):
        fields.finish(cls, set(), set())
    fields.finish("PinnedLater", {"w"}, set())
    assert fields.pageable_copy("Moved", "w", "Moved", "w")
    assert fields.pageable_copy("Sibling", "w", "Sibling", "w")
    assert not fields.pageable_copy("Silent", "w", "Silent", "w")  # may be a device object
    assert not fields.pageable_copy("PinnedLater", "w", "PinnedLater", "w")  # a method pins it
    assert not fields.pageable_copy("Moved", "w", "Sibling", "q")  # into a field never put on a device
    assert fields.pageable_copy("Moved", "w", "Unread", "w") is None


def test_a_sibling_pinned_from_another_parameter_is_no_evidence():
    fields = LoadedFields()
    fields.note("C", "load", "w", (LOADED, "block"))
    fields.note("C", "load", "q", (PINNED, "other"))
    fields.note("C", "reserve", "w", (DEVICE, None))
    fields.finish("C", set(), set())
    assert not fields.pageable_copy("C", "w", "C", "w")


def test_an_unannotated_source_is_not_followed():
    findings = analyze({"w.py": """
        import torch

        class Slot:
            def load(self, block):
                self.w = block.weight.detach()

            def place(self, device):
                self.w = self.w.to(device)

            def fill(self, other):
                self.w.copy_(other.w, non_blocking=True)

        def generate(slot: Slot, src: Slot, h, steps: int):
            for _ in range(steps):
                slot.fill(src)
                h = torch.argmax(h @ slot.w, dim=-1)
            return h
    """})
    assert [f for f in findings if f.rule == "GL420"] == []
