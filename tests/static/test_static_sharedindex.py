"""The name index's memos (relative names, star imports) and the value rounds' field-store table
answer what the unmemoized questions answered: they are infrastructure, never a change of facts."""

from __future__ import annotations

from pathlib import Path

from test_static_fixture import load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fixtures" / "static" / "sharedindex"


def _infos():
    from graphlint.static.facts import ModuleInfo
    from static_helpers import summarize

    return [s.data for s in summarize(load(PACKAGE)) if isinstance(s.data, ModuleInfo)]


def test_relative_names_and_star_imports_are_memoized_with_the_same_answers():
    from graphlint.static.index import Index

    infos = _infos()
    model = next(i for i in infos if i.path.endswith("model.py"))
    index = Index(infos)
    first = index.absolute(model, ".helpers")
    assert first == index._relative(model, ".helpers") and first.endswith("pkg.helpers")
    assert index.absolute(model, ".helpers") is first  # asked again: the memo
    assert index.absolute(model, "torch.nn") == "torch.nn"  # absolute names are never stored
    assert index.star_imports(model) == (first,)
    assert index.star_imports(model) is index.star_imports(model)
    helpers = next(i for i in infos if i.path.endswith("helpers.py"))
    assert index.star_imports(helpers) == ()


def test_field_stores_are_read_once_per_module_and_found_along_the_bases():
    from graphlint.static.fieldclasses import FieldClasses
    from graphlint.static.index import Index

    infos = _infos()
    model = next(i for i in infos if i.path.endswith("model.py"))
    fields = FieldClasses(Index(infos))
    found = {field: sorted((ref[1], cone) for ref, cone in fields.of(model, "Model", field))
             for field in ("head", "other", "tail", "count", "norm", "missing")}
    assert found == {"head": [("Head", False)], "other": [("Head", True)], "tail": [("Head", False)],
                     "count": [], "norm": [], "missing": []}
    assert set(fields._stores) == {model.path, next(i for i in infos if i.path.endswith("helpers.py")).path}


def test_the_first_round_shares_one_index_and_plans_as_before():
    from graphlint.static.crossfile import imported_tensor_functions
    from graphlint.static.index import Index
    from graphlint.static.inherited import inherited_class_facts
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import summarize

    summaries = summarize(load(PACKAGE))
    shared = Index([s.data for s in summaries if s.data is not None])
    assert imported_tensor_functions(summaries, shared) == imported_tensor_functions(summaries)
    assert inherited_class_facts(summaries, shared) == inherited_class_facts(summaries)
    assert value_facts_of(summaries, shared) == value_facts_of(summaries)
