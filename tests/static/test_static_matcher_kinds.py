"""Matcher kinds register themselves: a module in graphlint/static/matchers/ is all a new kind needs."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import graphlint.static.matchers as matchers
from graphlint.rules import load_rules
from graphlint.static.matchers import matcher_kinds
from graphlint.static.matchers.base import REGISTRY, Matcher


def test_every_matcher_class_in_the_package_is_a_kind_and_every_rule_finds_its_kind():
    defined = {}
    for module in pkgutil.iter_modules(matchers.__path__):
        mod = importlib.import_module(f"{matchers.__name__}.{module.name}")
        for value in vars(mod).values():
            if isinstance(value, type) and issubclass(value, Matcher) and value.__dict__.get("kind"):
                defined[value.kind] = value
    kinds = matcher_kinds()
    assert kinds == dict(sorted(defined.items())) and len(kinds) >= 11
    static = {rule.matcher for rule in load_rules().values() if rule.matcher and not rule.dynamic}
    assert static <= set(kinds)


def test_defining_a_kind_registers_it_and_a_second_definition_is_refused():
    try:
        class Probe(Matcher):
            kind = "house-probe"

        assert matcher_kinds()["house-probe"] is Probe

        class Refinement(Probe):  # inherits the kind, adds nothing: no second registration
            pass

        assert matcher_kinds()["house-probe"] is Probe
        with pytest.raises(TypeError, match="defined twice"):
            class Again(Matcher):
                kind = "house-probe"
    finally:
        REGISTRY.pop("house-probe", None)
    assert "house-probe" not in matcher_kinds()


def test_the_rule_pack_guide_names_every_kind():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "rule-packs.md").read_text()
    assert [kind for kind in matcher_kinds() if f"`{kind}`" not in guide] == []
