"""``--probe compile``: torch.compile's graph breaks and recompiles, at their lines, beside graphlint's.

CPU, with dynamo's eager backend (the same breaks and guards as inductor's, without compiling);
"skipping cudagraphs" reasons come from inductor on a GPU and are only listed as torch gives them.
"""

from __future__ import annotations

import pytest
import torch

from dynamic_helpers import TARGETS, plant_lines
from graphlint.crossref import CrossRef
from graphlint.dynamic.compile_probe import compile_events
from graphlint.dynamic.target import load_factory
from graphlint.inventory import DeviceResult, Inventory
from graphlint.report.inventory import render_markdown

pytestmark = pytest.mark.slow  # torch.compile warms up dynamo and inductor (tests/conftest.py)


def _events(name: str):
    target = load_factory(f"{TARGETS / name}:make_target")([torch.device("cpu")])
    regions = target.regions()
    target.stage(0)
    for region in regions:
        region.fn()
    return compile_events(target, regions, backend="eager")


def test_graph_breaks_and_recompiles_are_found_at_their_lines():
    events = _events("hazards.py")
    path = "fixtures/targets/hazards.py"
    breaks = {(e.region, e.line) for e in events if e.kind == "graph break" and e.path == path}
    assert ("sync_item", plant_lines(TARGETS / "hazards.py", "GL190")[0]) in breaks  # .item()
    assert {r for r, _ in breaks} >= {"sync_item", "bincount", "nonzero"}
    recompiles = {(e.region, e.line) for e in events if e.kind == "recompile"}
    # the step-varying Python values graphlint calls GL393 are what torch.compile guards on
    assert {("frozen_step", plant_lines(TARGETS / "hazards.py", "GL391")[0])} <= recompiles
    assert all("== " in e.reason for e in events if e.kind == "recompile")


def test_a_clean_module_compiles_without_a_break_or_recompile():
    assert [e for e in _events("plain_module.py") if e.kind != "cudagraphs skipped"] == []


def test_the_report_puts_each_event_beside_graphlints_findings():
    from graphlint.finding import Finding

    ours = Finding("GL393", "x", "data-dependent", "error", "eng.py", 7, 0, "m", source="dynamic", device="cuda:0")
    dev = DeviceResult("cuda:0", findings=[ours], records={"compile": [
        {"region": "step", "kind": "recompile", "reason": "self.pos == 2", "path": "eng.py", "line": 7},
        {"region": "step", "kind": "graph break", "reason": "Dynamic shape operator", "path": "eng.py", "line": 9}]})
    text = render_markdown(Inventory("t", "c", "d", "torch", True, devices=[dev]), CrossRef(True, "checked"))
    assert "| cuda:0 | step | recompile | self.pos == 2 | `eng.py:7` | GL393 |" in text
    assert "| cuda:0 | step | graph break | Dynamic shape operator | `eng.py:9` | nothing (a line graphlint does not flag) |" in text


def _line_of(fn, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_an_error_torch_compile_raises_is_placed_at_the_user_line_dynamo_was_tracing():
    from graphlint.dynamic.compile_probe import _error_event

    def step(x):
        y = x * 2
        torch._dynamo.graph_break()  # an error under fullgraph=True
        return y + 1

    torch._dynamo.reset()
    try:
        torch.compile(step, backend="eager", fullgraph=True)(torch.ones(3))
    except Exception as exc:  # noqa: BLE001 - whatever dynamo raises, it must be located
        event = _error_event("step", exc)
    else:
        raise AssertionError("fullgraph=True compiled a graph break")
    finally:
        torch._dynamo.reset()
    assert (event.kind, event.path, event.line) == ("error", "tests/dynamic/test_compile_probe.py", _line_of(step, "graph_break()"))


def test_an_error_naming_where_an_output_was_made_is_placed_there_and_a_cause_is_followed():
    from graphlint.dynamic.compile_probe import _error_event

    made = TARGETS / "hazards.py"
    overwritten = RuntimeError("Error: accessing tensor output of CUDAGraphs that has been overwritten by a "
                               f'subsequent run. Stack trace: File "{made}", line 12, in embed')
    assert (_error_event("r", overwritten).path, _error_event("r", overwritten).line) == ("fixtures/targets/hazards.py", 12)
    try:
        try:
            raise overwritten
        except RuntimeError as inner:
            raise ValueError("wrapped") from inner
    except ValueError as outer:
        event = _error_event("r", outer)
    assert (event.reason, event.path, event.line) == ("ValueError: wrapped", "fixtures/targets/hazards.py", 12)


def test_an_error_without_a_named_line_falls_back_to_the_traceback():
    from graphlint.dynamic.compile_probe import _error_event

    def region():
        raise AssertionError()

    try:
        region()
    except AssertionError as exc:
        event = _error_event("embed", exc)
    assert (event.path, event.line) == ("tests/dynamic/test_compile_probe.py", _line_of(region, "raise AssertionError"))


def test_the_probe_line_counts_errors_first_and_only_when_there_are_some():
    from graphlint.dynamic.compile_probe import CompileEvent, event_counts

    clean = [CompileEvent("a", "graph break", "x")]
    assert event_counts(clean) == "1 graph break, 0 recompiles, 0 cudagraphs skipped"
    failing = clean + [CompileEvent("a", "error", "AttributeError: x"), CompileEvent("b", "error", "y")]
    assert event_counts(failing) == "2 errors, 1 graph break, 0 recompiles, 0 cudagraphs skipped"


def test_each_compiled_step_begins_a_new_cuda_graph_tree_step(monkeypatch):
    marks = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    _events("plain_module.py")
    assert len(marks) == 3  # COMPILE_STEPS


def test_a_recompile_reads_its_guard_with_or_without_a_source_comment():
    from graphlint.dynamic.compile_probe import _recompile_events

    hazards = TARGETS / "hazards.py"
    commented = (f"Recompiling function step in {hazards}:10\n    triggered by the following guard failure(s):\n"
                 f'    - 0/0: self.pos == 2  # x = self.buf[self.pos]  # File "{hazards}", line 14, in step')
    bare = (f"Recompiling function _opaque in {hazards}:37\n    triggered by the following guard failure(s):\n"
            "    - 3/0: len(args) == 3\n    - 3/1: ___check_obj_id(kernel, 1403)")
    first, second = _recompile_events("layer0", [commented, bare])
    assert (first.reason, first.path, first.line) == ("self.pos == 2", "fixtures/targets/hazards.py", 14)
    # torch names no line for this guard: the function recompiled, at its def, and the first guard
    assert (second.reason, second.path, second.line) == ("len(args) == 3", "fixtures/targets/hazards.py", 37)


def test_a_cudagraph_skip_is_placed_at_its_found_from_frame_and_named_without_it():
    from graphlint.dynamic.compile_probe import _skip_event

    made = TARGETS / "hazards.py"
    message = (f"skipping cudagraphs due to mutated inputs (2 instances). Found from : \n"
               f'   File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1775, in _call\n'
               f'   File "{made}", line 21, in commit\n    self.cache[pos].copy_(kv)\n')
    event = _skip_event("layer1", message)
    assert event == type(event)("layer1", "cudagraphs skipped", "skipping cudagraphs due to mutated inputs (2 instances)",
                                "fixtures/targets/hazards.py", 21)
    assert _skip_event("head", "skipping cudagraphs due to cpu device (arg0)").path == ""
