"""Facts a class inherits from its bases, in the same file and across files (issue 11: the seed
lab's variant subclasses cast and branch on what their base classes define)."""

from __future__ import annotations

from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

from test_static_fixture import expected, load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fixtures" / "static" / "inherited"


def _findings(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    settings = resolve(load_config(cwd=tmp_path), paths=[str(PACKAGE.relative_to(ROOT))], jobs=1, use_cache=False)
    return {(f.path, f.line, f.rule) for f in run(settings).findings if f.category != "meta"}


def test_subclasses_know_their_bases_parameters_buffers_and_tensor_methods(monkeypatch, tmp_path):
    assert _findings(monkeypatch, tmp_path) == expected(load(PACKAGE))


def test_only_the_facts_a_subclass_uses_send_its_file_round_again():
    from graphlint.static.inherited import inherited_class_facts
    from static_helpers import summarize

    files = load(PACKAGE)
    plan = inherited_class_facts(summarize(files))
    assert plan == {
        "fixtures/static/inherited/gates.py": frozenset({"ScaledGate.weight:proj", "ScaledGate.method:logits"}),
        "fixtures/static/inherited/variants.py": frozenset({"WideGate.method:logits", "WideGate.weight:offsets"}),
    }  # OwnLogits defines logits itself, and calls no method on an inherited attribute
