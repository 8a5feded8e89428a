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


def _bare(path: str, text: str, device: bool = False) -> str:
    if not path.endswith("tree.py"):
        return text
    edited = text.replace("self.kids: Dict[int, Node] = {}", "self.kids = {}")
    if device:
        edited = edited.replace('torch.zeros(0, dtype=torch.long, device="cpu")', 'torch.zeros(0, dtype=torch.long, device="cuda")')
    assert edited.count("device=") == text.count("device=") and edited != text
    return edited


def test_without_the_annotation_the_element_is_known_by_the_name_alone():
    """No class for ``child``: its ``key`` is what every store of ``key`` anywhere is (a host tensor
    here; branch ``prefillsplit``: a staging slot read through an untyped receiver)."""
    assert "field:Trie._add:child.key=host" in _facts("radixtree", _bare)


def test_without_the_annotation_one_device_store_of_the_name_leaves_the_element_unknown():
    facts = _facts("radixtree", lambda path, text: _bare(path, text, device=True))
    assert not any(f.startswith("field:Trie._add:child.") for f in facts)


def test_the_trie_reports_only_what_it_is_handed_from_the_device(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "radixtree")
    assert_marked(result.findings, load(FIXTURES / "radixtree"))


def test_a_request_s_clean_up_in_a_loop_that_retires_it_is_no_step_cost(monkeypatch, tmp_path):
    """``for rid in finished: req = self.live.pop(rid); self._free(req)`` (and ``self.order.remove(rid)``):
    ``_free``'s ``.cpu()`` runs once per finished request (:mod:`graphlint.static.retiring`); the audit
    of every live request, every step, keeps its read."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "retire")
    assert_marked(result.findings, load(FIXTURES / "retire"))


def test_the_clean_up_called_every_step_too_keeps_its_read(monkeypatch, tmp_path):
    """The audit loop (which retires nothing) calls ``_free`` too: its ``.cpu()`` is a step cost again."""
    copy = tmp_path / "fixtures" / "static" / "heldout2" / "retire"
    copy.mkdir(parents=True)
    for source in (FIXTURES / "retire").glob("*.py"):
        text = source.read_text()
        if source.name == "pool.py":
            edited = text.replace("self._check(self.live[rid])", "self._free(self.live[rid])")
            assert edited != text
            text = edited
        (copy / source.name).write_text(text)
    result = check_fixture(monkeypatch, tmp_path, copy.parent, "retire")
    assert ("fixtures/static/heldout2/retire/pool.py", 33, "GL103") in {(f.path, f.line, f.rule) for f in result.findings}


def test_which_loops_retire_their_element():
    import libcst as cst

    from graphlint.static.retiring import retires_element

    def loop(body: str) -> cst.For:
        return cst.parse_statement("for rid in done:\n" + "".join(f"    {line}\n" for line in body.splitlines()))

    assert retires_element(loop("req = self.live.pop(rid)\nself.free(req)"))
    assert retires_element(loop("del self.live[rid]"))
    assert retires_element(loop("self.order.discard(rid)"))
    assert not retires_element(loop("if rid in self.live:\n    self.live.pop(rid)"))  # not every iteration
    assert not retires_element(loop("req = self.live.pop(other)"))  # another element
    assert not retires_element(loop("req = live.pop(rid)"))  # a local container: nothing long-lived
