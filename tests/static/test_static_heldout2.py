"""Host keys behind a dict field's elements and through ``torch.nonzero`` (branch ``heldout2``).

A trie's children sit in a field annotated ``Dict[int, Node]``: ``child = node.kids[first]`` is a
``Node`` (:mod:`graphlint.static.receivers`, as an annotated parameter is), so ``child.key`` is the
host tensor every store of ``key`` makes it, and ``shared(key, child.key)`` is handed host keys at
every call. There the difference of two host keys, its ``torch.nonzero`` and the element read from
that stay on the host (:mod:`graphlint.static.cputensors`); the same op handed device rows is still
a read-back (:mod:`graphlint.static.matchers.op_call`)."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.valueflow import value_facts_of
from static_helpers import check_fixture, summarize
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "heldout2"


def _facts(name: str, edit=lambda path, text: text) -> set[str]:
    files = {p: edit(p, s.decode()) for p, s in load(FIXTURES / name).items()}
    return {f for facts in value_facts_of(summarize(files)).values() for f in facts}


def test_an_element_of_a_dict_field_annotated_with_a_class_is_one():
    assert "field:Trie._add:child.key=host" in _facts("radixtree")


def test_without_the_annotation_the_element_is_unknown():
    def bare(path: str, text: str) -> str:
        if not path.endswith("tree.py"):
            return text
        edited = text.replace("self.kids: Dict[int, Node] = {}", "self.kids = {}")
        assert edited != text
        return edited

    assert not any(f.startswith("field:Trie._add:child.") for f in _facts("radixtree", bare))


def test_the_trie_reports_only_what_it_is_handed_from_the_device(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "radixtree")
    assert_marked(result.findings, load(FIXTURES / "radixtree"))
