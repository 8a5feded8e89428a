"""Finding merging, transition classification, capture_failures(), the report and the cross-reference."""

from __future__ import annotations

import sys

import pytest
import torch

from dynamic_helpers import ROOT
from graphlint.crossref import DYNAMIC_ONLY, CrossRef, cross_reference
from graphlint.dynamic.combine import merge_findings
from graphlint.dynamic.tracer import classify_transition
from graphlint.finding import Finding
from graphlint.gate import capture_failures
from graphlint.inventory import DeviceResult, Inventory, ProbeOutcome
from graphlint.report.inventory import render_json, render_markdown
from graphlint.rules import runtime_rules
from graphlint.rules import observation_codes


def _f(rule, line, evidence, category="host-sync", severity="error", device="cuda:0", in_graph=True):
    return Finding(rule=rule, name=rule.lower(), category=category, severity=severity, path="m.py", line=line,
                   col=0, message=f"{rule} message", evidence=(evidence,), source="dynamic", device=device,
                   region="layer0", in_graph=in_graph)


def test_sync_debug_folds_into_the_precise_finding_at_its_line():
    merged = merge_findings([_f("GL192", 3, "tracer:aten._to_copy"), _f("GL190", 3, "sync-debug"),
                             _f("GL190", 9, "sync-debug"), _f("GL190", 9, "tracer:aten._local_scalar_dense")])
    assert [(f.rule, f.line, f.evidence) for f in merged] == [
        ("GL192", 3, ("tracer:aten._to_copy", "sync-debug")),
        ("GL190", 9, ("sync-debug", "tracer:aten._local_scalar_dense")),
    ]


def test_transitions_relative_to_the_region_device():
    cpu, c0, c1, meta = (torch.device(d) for d in ("cpu", "cuda:0", "cuda:1", "meta"))
    codes = observation_codes(runtime_rules().values())  # the runtime pack says which rule reports each
    assert codes[classify_transition(cpu, c0, c0, pinned=False)] == "GL491"
    assert classify_transition(cpu, c0, c0, pinned=True) is None
    assert codes[classify_transition(c0, cpu, c0, pinned=False)] == "GL192"
    assert codes[classify_transition(c0, c1, c0, pinned=False)] == "GL490"
    assert codes[classify_transition(cpu, meta, cpu, pinned=False)] == "GL490"
    assert classify_transition(c0, c0, c0, pinned=False) is None


def _inventory():
    dev = DeviceResult("cuda:0", findings=[_f("GL190", 3, "tracer:x"), _f("GL290", 4, "tracer:y", "allocation", "warning"),
                                           _f("GL190", 7, "tracer:z", in_graph=False)],
                       probes=[ProbeOutcome("capture", "ran", "1/2"), ProbeOutcome("replay", "ran", "identical")],
                       capture={"embed": {"status": "captured", "detail": ""},
                                "layer0": {"status": "failed", "detail": "RuntimeError: boom"},
                                "attn": {"status": "eager", "detail": "deliberately eager"}},
                       timing={"eager_s": 0.02, "graph_s": 0.01}, regions=["embed", "layer0", "attn"],
                       soak={"steps": 64, "graph_bytes_per_step": 0, "eager_bytes_per_step": 0,
                             "graph_allocations_per_step": 0, "max_diff_first_quarter": 0.0,
                             "max_diff_last_quarter": 0.0, "first_mismatch_step": None,
                             "graph_s_per_step": 0.01, "eager_s_per_step": 0.02})
    return Inventory(target="t.py:f", command="graphlint inventory", date="today", torch="2.11", cuda=True,
                     devices=[dev])


def _stale_inventory() -> Inventory:
    """The shape of the H200's eager dsv4 inventory: two regions captured and then went stale, the
    others failed to capture, so the "graph" instance ran eagerly throughout."""
    cells = {"embed": "stale", "layer0": "failed", "layer1": "failed", "head": "stale"}
    dev = DeviceResult("cuda:0", probes=[ProbeOutcome("capture", "ran", "2/4 capturable regions captured"),
                                         ProbeOutcome("replay", "ran", "graph vs eager over steps 1-7: identical")],
                       capture={name: {"status": status, "detail": ""} for name, status in cells.items()},
                       timing={"eager_s": 0.05811, "graph_s": 0.06537}, regions=list(cells))
    return Inventory(target="t.py:f", command="graphlint inventory", date="today", torch="2.11", cuda=True,
                     devices=[dev])


def test_regions_that_went_stale_were_captured_and_give_no_speedup():
    from graphlint.report.capture_test import render_capture_test

    text = render_markdown(_stale_inventory(), CrossRef(False, "not run"))
    assert "capture does NOT work: 2/4 capturable regions captured (2 went stale" in text
    assert "speedup" not in text.replace("no speedup", "")
    assert ("decode: eager 0.05811 s/token; no speedup: no region replayed as a graph (2 went stale, 2 did not "
            "capture), so both instances ran eagerly") in text
    terminal = render_capture_test(_stale_inventory(), [], cuda=True)
    assert "0.89x" not in terminal and "no speedup: no region replayed as a graph" in terminal


def test_failures_ignore_warnings_and_eager_regions():
    assert capture_failures(_inventory()) == ["cuda:0 layer0: capture failed RuntimeError: boom",
                                              "m.py:3 GL190 GL190 message [cuda:0]"]


def test_the_written_line_counts_findings_regions_and_probe_errors_apart():
    from graphlint.report.inventory import written_line

    inv = _stale_inventory()
    said = written_line("inv.md", inv, capture_failures(inv))
    assert said.startswith("graphlint: wrote inv.md: 0 finding(s); the gate fails: 4 region(s) not captured or stale;")
    inv.devices[0].capture = {}
    inv.devices[0].probes = [ProbeOutcome(p, "error", "AttributeError: no rope_theta (at cfg.py:3)")
                             for p in ("tracer", "capture")]  # a target that does not build
    said = written_line("inv.md", inv, capture_failures(inv))
    assert "the gate fails: 1 probe error(s): AttributeError: no rope_theta (at cfg.py:3);" in said
    inv.devices[0].probes = []
    assert "; the gate passes; " in written_line("inv.md", inv, capture_failures(inv))


def test_markdown_report_sections_and_static_miss_highlight():
    xref = CrossRef(True, "checked", status={("m.py", 3, "host-sync"): DYNAMIC_ONLY})
    text = render_markdown(_inventory(), xref)
    assert "speedup 2.00x) (1 of 2 capturable regions replayed as graphs)" in text
    assert "| layer0 | ❌ failed |" in text and "| attn | — eager |" in text
    assert "**⚠ dynamic only (static miss)**" in text
    assert "eager region (outside the graphs)" in text
    assert "| cuda:0 | 64 |" in text
    assert '"static": "dynamic only (static miss)"' in render_json(_inventory(), xref)


def test_cross_reference_says_why_it_was_skipped_without_libcst(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setitem(sys.modules, "libcst", None)
    xref = cross_reference([_f("GL190", 3, "tracer:x").with_(path="fixtures/targets/hazards.py")], [])
    assert not xref.ran and "libcst is not importable" in xref.detail
    assert "Static cross-reference: skipped: libcst" in render_markdown(_inventory(), xref)


def test_status_says_what_a_finding_means_for_the_graph():
    from graphlint.report.inventory import status_of

    def finding(rule, category, severity, in_graph=True):
        return Finding(rule, "x", category, severity, "a.py", 1, 0, "m", in_graph=in_graph)

    assert status_of(finding("GL590", "capture-hygiene", "error")) == "breaks capture or replay"
    assert status_of(finding("GL290", "allocation", "warning")) == "capturable, but costs every step"
    # a bare torch.cuda.graph(g) captures on cuda:0 and replays stale on the other GPUs (seed category 9)
    assert "unsafe elsewhere" in status_of(finding("GL592", "capture-hygiene", "warning"))
    assert status_of(finding("GL190", "host-sync", "error", in_graph=False)).startswith("eager region")


def test_cross_reference_matches_by_line_across_categories(tmp_path, monkeypatch):
    """Static calls `torch.arange(pos, ...)` data-dependent (sized by the Python position), the tracer
    calls it an allocation: one hazard seen from two sides, confirmed, with the static rule shown."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "step.py").write_text(
        "import torch\n\n\n"
        "def decode_step(x: torch.Tensor, pos: int = 0):\n"
        "    idx = torch.arange(pos, pos + 1)\n"
        "    return x + idx\n"
    )
    seen = Finding("GL290", "runtime-allocation", "allocation", "warning", "pkg/step.py", 5, 0, "arange allocates",
                   evidence=("tracer:aten.arange.start",), source="dynamic", device="cpu", region="step",
                   in_graph=True)
    missed = seen.with_(line=6, rule="GL393", category="data-dependent")
    xref = cross_reference([seen, missed], [])
    assert xref.ran, xref.detail
    static_at_5 = xref.rules_at(seen)
    assert static_at_5 and all(code.startswith("GL3") for code in static_at_5)  # a data-dependent static rule
    assert xref.of(seen) == "confirmed by both" and xref.of(missed) == DYNAMIC_ONLY
    inventory = Inventory("t", "cmd", "date", "torch", False, devices=[DeviceResult("cpu", findings=[seen, missed])])
    assert f"confirmed by both ({', '.join(static_at_5)})" in render_markdown(inventory, xref)


def test_a_soak_left_out_on_request_says_how_it_was_left_out():
    inv = _inventory()
    inv.devices[0].soak = {}
    assert "Not run (--no-soak; capture-test soaks only with --soak)." in render_markdown(inv, CrossRef(False, "x"))


@pytest.mark.slow
def test_closure_regions_widen_the_cross_check_to_their_package(tmp_path, monkeypatch):
    """A closure region cannot be a static entry, but its file places the step in a package: the
    static half must check that package, not only the directory of the files findings sit in."""
    from graphlint.dynamic.frames import region_sources
    from graphlint.dynamic.target import Region

    monkeypatch.chdir(ROOT)
    finding = _f("GL290", 30, "tracer:x").with_(path="dsv4/kernels/rmsnorm_kernel.py")
    # a finding in a subpackage widens to the outermost package (the engine reached through it)
    narrow = cross_reference([finding], [])
    assert narrow.ran and "on dsv4 with" in narrow.detail
    from dsv4.full_graph import FullGraphDecoder

    step = FullGraphDecoder._device_step_fn  # defined in dsv4/full_graph.py, like its closure
    sources = region_sources([Region("step", step), Region("lam", lambda: None)])
    assert sources == ["dsv4/full_graph.py", "tests/dynamic/test_results_report.py"]
    wide = cross_reference([finding], [], sources[:1])
    assert wide.ran and "on dsv4 with" in wide.detail
