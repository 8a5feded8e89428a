"""Set-up that runs once and prompt-only calls (branch ``deadloops``):
``fixtures/static/deadloops/growtable`` (a table rebuilt only when a request outgrows it, tested
against the table's own size, or moved once to the input's device) and
``fixtures/static/deadloops/prefillcall`` (a call the step makes only when its ids hold more than
one position). Each test fails before the change; each control shows the finding comes back when
the code really runs every step."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "deadloops"


def _files(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / name).glob("*.py"))}


def _found(files: dict[str, str], path: str) -> list[tuple[int, str, str]]:
    return sorted((f.line, f.rule, f.severity) for f in analyze(files) if f.path == path)


def test_a_table_grown_on_demand_is_set_up():
    """``Grown.grow`` returns while its table covers the request and rebuilds it only past that;
    ``Sized.lookup`` tests the table's own size; ``Moved`` moves its table once. Only ``Leaky``,
    which rebuilds into another attribute, is reported."""
    assert _found(_files("growtable"), "tables.py") == [(60, "GL201", "warning"), (61, "GL420", "error")]


def test_a_rest_that_stores_no_table_stays_per_step():
    files = _files("growtable")
    files["tables.py"] = files["tables.py"].replace(
        "        self.table = table.unsqueeze(0).to(device=x.device, dtype=x.dtype)\n",
        "        self.other = table.unsqueeze(0).to(device=x.device, dtype=x.dtype)\n")
    assert [line for line, rule, _ in _found(files, "tables.py") if rule == "GL201"] == [27, 28, 60]


def test_a_size_test_against_another_table_stays_per_step():
    files = _files("growtable")
    files["tables.py"] = files["tables.py"].replace("if x.size(1) > self.table.shape[1]:",
                                                    "if x.size(1) > self.other.shape[1]:")
    assert [line for line, rule, _ in _found(files, "tables.py") if rule == "GL201"] == [40, 60]


def test_a_call_made_only_for_a_multi_token_step_is_prompt_only():
    """``Runner.step`` embeds through ``Mixed.forward`` only when ``input_ids.shape[1]`` is not one."""
    assert _found(_files("prefillcall"), "runner.py") == []


def test_a_batch_of_one_test_picks_no_prompt_branch():
    files = _files("prefillcall")
    files["runner.py"] = files["runner.py"].replace("if input_ids.shape[1] == 1:", "if input_ids.shape[0] == 1:")
    assert [(line, rule) for line, rule, _ in _found(files, "runner.py")] == [
        (17, "GL201"), (18, "GL303"), (18, "GL303"), (19, "GL303"), (19, "GL303")]


def test_a_tensor_of_no_elements_is_no_pageable_upload():
    """``fixtures/static/deadloops/emptycopy``: ``torch.Tensor().reshape(b, 0, v)`` and
    ``torch.zeros(b, 0)`` moved to the device every step copy nothing."""
    assert _found(_files("emptycopy"), "step.py") == []


def test_a_sized_host_tensor_is_still_an_upload():
    files = _files("emptycopy")
    files["step.py"] = files["step.py"].replace("torch.Tensor().reshape(ids.shape[0], 0, 100)",
                                                "torch.Tensor(ids.shape[0], 1, 100)")
    files["step.py"] = files["step.py"].replace("torch.zeros(ids.shape[0], 0)", "torch.zeros(ids.shape[0], 2)")
    assert [(line, rule) for line, rule, _ in _found(files, "step.py")] == [(23, "GL420"), (24, "GL201"), (24, "GL420")]


def test_an_early_return_at_a_cap_keeps_what_follows_per_step():
    """``capped.py``: ``History.push`` appends to its table until it reaches a cap (the rest sizes
    nothing by the request), ``History.step`` counts up to a limit (the rest stores the counter,
    not the request): both rests run every step."""
    assert _found(_files("growtable"), "capped.py") == [(21, "GL207", "error"), (27, "GL201", "warning")]
