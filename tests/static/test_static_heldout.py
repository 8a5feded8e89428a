"""Calls through receivers the value rounds did not follow (branch ``heldout``;
:mod:`graphlint.static.receivers`): a prefix tree reached through a field of a field
(``self.backend.tree.match(key)``, the field set from ``Tree() if c else None``), a local alias of
it (``tree = self.backend.tree; tree.insert(key)``) and a module global registered at start-up
(``g_ctx.tree.match(key)``, ``g_ctx`` imported from another file). Every call of the tree's
methods then counts, so what they all pass (keys built with ``device="cpu"``) reaches the tree's
recursion; the method handed device rows through the same receivers keeps its read. A node's
field every store of which, anywhere, is a host tensor (or ``None``, a slice of the same field, a
parameter given host keys) is a host tensor in its class's methods (:mod:`graphlint.static.fieldkinds`)."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.valueflow import value_facts_of
from static_helpers import check_fixture, summarize
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "heldout"


def _facts(name: str, edit=lambda path, text: text) -> set[str]:
    files = {p: edit(p, s.decode()) for p, s in load(FIXTURES / name).items()}
    return {f for facts in value_facts_of(summarize(files)).values() for f in facts}


def test_calls_through_fields_of_fields_aliases_and_globals_are_followed():
    facts = _facts("hostcache")
    assert "param:PrefixTree.match:key=host" in facts  # admit's field chain and the global agree
    assert "param:PrefixTree.insert:key=host" in facts  # retire's local alias
    assert not any(f.startswith("param:PrefixTree.count:") and f.endswith("=host") for f in facts)


def test_a_field_every_store_of_which_is_a_host_tensor_is_one():
    """``Node.key``: ``None`` in ``__init__``, slices of a node's key (``split``), a parameter every
    call passes host keys (``adopt``), and a CPU tensor stored from another class (the tree's root)."""
    assert "field:Node.first:self.key=host" in _facts("hostcache")


def test_one_device_store_of_the_field_anywhere_makes_it_unknown():
    def to_device(path: str, text: str) -> str:
        if not path.endswith("tree.py"):
            return text
        edited = text.replace('self.root.key = torch.zeros(0, dtype=torch.long, device="cpu")',
                              'self.root.key = torch.zeros(0, dtype=torch.long, device="cuda")')
        assert edited != text
        return edited

    facts = _facts("hostcache", to_device)
    assert not any(f.startswith("field:Node.") for f in facts)
    assert "param:PrefixTree.insert:key=host" in facts  # the calls are followed all the same


def test_the_host_cache_reports_only_its_device_read(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "hostcache")
    assert_marked(result.findings, load(FIXTURES / "hostcache"))
