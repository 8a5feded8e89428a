"""Host bookkeeping a library wrapper plans on tensors every caller builds on the CPU, and a type
test's conversion no caller takes (branch ``hostbook``).

A planner kept one per batch size in a dict field (``self.planners[bs] = HostPlanner(...)``), whose
``plan`` also calls an attention library's own ``plan`` on a library object, is handed CPU tensors
by every caller: its reads, lengths and index arithmetic are host bookkeeping. The twin with a
caller that hands it device tensors keeps its findings. A helper that converts an int offset with
``if not torch.is_tensor(offset):`` never converts where every caller passes a tensor; the twin
called once with an int keeps the conversion's finding."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from graphlint.static.typetests import type_test
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "hostbook"


def _lines(result, name: str) -> set[tuple[str, int, str]]:
    return {(f.path.rsplit("/", 1)[-1], f.line, f.rule) for f in result.findings if f"/{name}/" in f.path}


def _line(name: str, path: str, marker: str, after: int = 0) -> int:
    text = (FIXTURES / name / path).read_text().splitlines()
    start = next(i for i, line in enumerate(text) if marker in line) if after == 0 else after
    return next(i for i, line in enumerate(text[start:], start + 1) if marker in line)


def test_every_caller_passing_host_tensors_makes_the_planner_host_bookkeeping(monkeypatch, tmp_path):
    found = _lines(check_fixture(monkeypatch, tmp_path, FIXTURES, "planner"), "planner")
    host = _line("planner", "plans.py", "class HostPlanner")
    mixed = _line("planner", "plans.py", "class MixedPlanner")
    assert not {f for f in found if f[0] == "plans.py" and host < f[1] < mixed}
    read = _line("planner", "plans.py", ".item()", mixed)
    assert ("plans.py", read, "GL101") in found  # the twin: one caller hands it device tensors
    assert ("plans.py", read + 1, "GL305") in found and ("plans.py", read + 2, "GL305") in found


def test_the_planner_parameters_learn_host_through_dict_and_library_fields():
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import summarize

    files = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in sorted((FIXTURES / "planner").glob("*.py"))}
    facts = value_facts_of(summarize(files)).get("fixtures/static/hostbook/planner/plans.py", frozenset())
    assert {"param:HostPlanner.plan:starts=host", "param:HostPlanner.plan:pages=host"} <= facts
    assert not any(f.startswith("param:MixedPlanner.plan_rows:starts=") for f in facts)


def test_a_library_field_that_some_store_fills_with_a_project_object_resolves_nothing():
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import summarize

    files = {
        "pkg/__init__.py": "",
        "pkg/plans.py": """
            import torch
            import attnlib

            class Planner:
                def __init__(self, ws, other):
                    self.kernel = attnlib.Wrapper(ws)
                    if other is not None:
                        self.kernel = other  # maybe a project object whose ``plan`` is this one

                def plan(self, starts):
                    self.kernel.plan(starts)
                    return int(starts.sum().item())

            def step(planner: Planner, n: int):
                return planner.plan(torch.arange(n + 1, dtype=torch.int32))
        """,
    }
    facts = value_facts_of(summarize(files)).get("pkg/plans.py", frozenset())
    assert not any(f.startswith("param:Planner.plan:") for f in facts)


def test_a_conversion_no_caller_takes_is_not_reported(monkeypatch, tmp_path):
    found = _lines(check_fixture(monkeypatch, tmp_path, FIXTURES, "typed"), "typed")
    tensor_only = _line("typed", "codec.py", "offset = torch.tensor(")
    either = _line("typed", "codec.py", "offset = torch.tensor(", tensor_only)
    assert ("codec.py", tensor_only, "GL204") not in found
    assert ("codec.py", either, "GL204") in found  # the twin: warm() passes an int


def _test(src: str):
    return type_test(cst.parse_expression(textwrap.dedent(src).strip()), {"torch": "torch"})


def test_type_tests_a_tensor_answers_one_way():
    assert _test("torch.is_tensor(p)") == ("p", True)
    assert _test("not torch.is_tensor(p)") == ("p", False)
    assert _test("isinstance(p, torch.Tensor)") == ("p", True)
    assert _test("not isinstance(p, (int, float))") == ("p", True)
    assert _test("isinstance(p, int)") == ("p", False)
    assert _test("isinstance(p, (int, torch.Tensor))") is None  # either way for a tensor: undecided
    assert _test("isinstance(p.offset, int)") is None  # a field, not a parameter name
    assert _test("torch.is_tensor(p) and q") is None
