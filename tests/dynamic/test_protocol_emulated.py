"""The capture/replay/soak protocol on the CPU, against the graph emulator (see graph_emulator.py).

What this proves is graphlint's bookkeeping (capture matrix, which step mismatches, which line is
blamed, replay vs soak); what CUDA does is proven by test_dynamic_gpu.py on a GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import graph_emulator
from dynamic_helpers import TARGETS, plant_lines, snippet_factory
from graphlint.dynamic.graph_probe import run_graph_phase
from graphlint.dynamic.target import load_factory
from graphlint.rules import runtime_rules
from graphlint.rules import marked_positions

RULES = runtime_rules()
CPU = [torch.device("cpu")]


@pytest.fixture(autouse=True)
def _emulated(monkeypatch):
    graph_emulator.install(monkeypatch)


@pytest.mark.parametrize("code", ["GL292", "GL391", "GL392", "GL590"])
@pytest.mark.parametrize("kind", ["bad", "good"])
def test_rule_examples_under_the_emulated_protocol(code, kind, tmp_path):
    example = getattr(RULES[code], kind)[0]
    factory, snippet = snippet_factory(example, tmp_path, f"{code}_{kind}")
    result = run_graph_phase(factory, CPU, {}, RULES, "cpu", soak_steps=64 if code == "GL392" else 0)
    assert {f.rule for f in result.findings} == ({code} if kind == "bad" else set())
    lines = {f.line - 1 for f in result.findings if Path(f.path).resolve() == snippet.resolve()}
    marked = {line for line, _ in marked_positions(example)}
    if marked:  # GL392 is blamed on the region, not on a line: unmarked
        assert lines == marked


@pytest.mark.slow
def test_hazards_mismatch_is_blamed_on_the_frozen_lines():
    path = TARGETS / "hazards.py"
    result = run_graph_phase(load_factory(f"{path}:make_target"), CPU, {}, RULES, "cpu")
    statuses = {r: c["status"] for r, c in result.capture.items()}
    assert statuses["sync_item"] == statuses["bincount"] == statuses["nonzero"] == "failed"
    assert statuses["synchronize"] == "empty"  # no device work on the CPU
    assert statuses["frozen_step"] == statuses["pos_index"] == "captured"
    blamed = {f.line for f in result.findings if f.rule == "GL391"}
    # buf[0] = step is frozen too here: on the CPU it is no host->device copy, so it captures.
    assert blamed == set(plant_lines(path, "GL391")) | set(plant_lines(path, "GL491")[1:])
    failed = {f.line for f in result.findings if f.rule == "GL590"}
    assert failed == set(plant_lines(path, "GL190")) | set(plant_lines(path, "GL390"))
    assert "first mismatch at step 2" in result.outcome("replay").detail
    # the probe line counts like the report's summary: an empty graph is not a capture
    captured = sum(status == "captured" for status in statuses.values())
    assert result.outcome("capture").detail.startswith(f"{captured}/{len(statuses)} capturable regions captured (1 empty")


def test_clean_module_replays_identically_and_is_timed():
    result = run_graph_phase(load_factory(f"{TARGETS / 'plain_module.py'}:make_target"), CPU, {}, RULES, "cpu",
                             soak_steps=32)
    assert result.findings == []
    assert result.capture == {"forward": {"status": "captured", "detail": ""}}
    assert "identical" in result.outcome("replay").detail
    assert result.timing["graph_s"] > 0 and result.soak["first_mismatch_step"] is None


class _StatefulAfterFailedCapture:
    """`first` advances a Python cursor (like a KV-cache length) and then syncs, so its capture
    fails after the cursor moved; re-run eagerly in the same step it overruns, as the dsv4 eager
    decoder did on the H200 (a device-side assert)."""

    def __init__(self, devices, **options):
        from graphlint.dynamic.target import Region

        self.devices, self.buf, self.out = devices, torch.zeros(4), torch.zeros(4)
        self.staged = self.cursor = 0
        self._regions = [Region("first", self._first), Region("second", self._second)]

    def stage(self, step):
        self.staged = self.cursor = step

    def regions(self):
        return self._regions

    def output(self):
        return self.out

    def _first(self):
        self.cursor += 1
        if self.cursor > self.staged + 1:
            raise RuntimeError("CUDA error: device-side assert triggered")
        if int(self.buf.sum()) >= 0:  # a host sync: the capture of this region fails here
            self.buf.add_(0)

    def _second(self):
        self.out.copy_(self.buf + 1)


def test_a_region_raising_after_a_failed_capture_keeps_the_capture_results():
    result = run_graph_phase(_StatefulAfterFailedCapture, CPU, {}, RULES, "cpu")
    statuses = {r: c["status"] for r, c in result.capture.items()}
    assert statuses == {"first": "failed", "second": "not run"}
    detail = result.capture["second"]["detail"]
    assert "stopped at step 1 in first" in detail and "device-side assert" in detail
    assert "after capturing first failed" in detail
    assert result.outcome("replay").status == "skipped"
    assert {f.rule for f in result.findings} == {"GL590"}


class _RaisesLater:
    """Captures fine, then a region (or the staging) raises at a given step."""

    def __init__(self, devices, raise_at=3, where="region"):
        from graphlint.dynamic.target import Region

        self.devices, self.raise_at, self.where = devices, raise_at, where
        self.x, self.out, self.step = torch.zeros(4), torch.zeros(4), 0
        self._regions = [Region("body", self._body)]

    def stage(self, step):
        self.step = step
        if self.where == "stage" and step == self.raise_at:
            raise IndexError("stage past the end")
        self.x.fill_(float(step))

    def regions(self):
        return self._regions

    def output(self):
        return self.out

    def _body(self):
        if self.where == "region" and self.step == self.raise_at:
            raise KeyError("boom")
        torch.add(self.x, 1, out=self.out)


@pytest.mark.parametrize("where", ["region", "stage"])
def test_a_target_raising_after_capture_fails_the_gate(where):
    from graphlint.gate import capture_failures
    from graphlint.inventory import Inventory

    result = run_graph_phase(_RaisesLater, CPU, {"where": where}, RULES, "cpu")
    assert result.capture["body"]["status"] == "captured"
    assert result.outcome("replay").status == "error"
    assert f"stopped at step 3 in {'body' if where == 'region' else 'stage(3)'}" in result.outcome("replay").detail
    assert capture_failures(Inventory("t", "", "", "", False, devices=[result]))


def test_a_target_raising_during_the_soak_keeps_the_replay_verdict():
    result = run_graph_phase(_RaisesLater, CPU, {"raise_at": 12}, RULES, "cpu", soak_steps=20)
    assert result.outcome("replay").status == "ran" and "identical" in result.outcome("replay").detail
    assert result.outcome("soak").status == "error" and "stopped at step 12 in body" in result.outcome("soak").detail


class _NoTensorOutput(_RaisesLater):
    def output(self):
        return None


def test_an_output_without_tensors_is_a_replay_error_not_identical():
    result = run_graph_phase(_NoTensorOutput, CPU, {"raise_at": -1}, RULES, "cpu")
    replay = result.outcome("replay")
    assert replay.status == "error" and "output() returned NoneType, not a tensor" in replay.detail


class _RandomWeights(_RaisesLater):
    def __init__(self, devices, **options):
        super().__init__(devices, **options)
        self.w = torch.randn(4)  # unseeded: each instance differs

    def _body(self):
        torch.add(self.x, self.w, out=self.out)


def test_a_nondeterministic_factory_is_a_replay_error_not_a_blamed_mismatch():
    result = run_graph_phase(_RandomWeights, CPU, {"raise_at": -1}, RULES, "cpu")
    assert result.outcome("replay").status == "error"
    assert "two instances differ before any step in `w`: seed the weights" in result.outcome("replay").detail
    assert result.meta["target_error"].startswith("the factory is not deterministic")  # exit 2
    assert result.outcome("capture").status == "skipped"
    assert not [f for f in result.findings if f.rule == "GL391"]


@pytest.mark.parametrize("decoder", ["ab-graph", "full-graph"])
@pytest.mark.slow
def test_dsv4_graph_decoders_replay_like_eager_through_a_soak_past_max_seq_len(decoder):
    # sort/topk return tuples: the emulator must replay every output, or the indexer's top-k goes stale
    options = {"decoder": decoder, "n_layers": 2, "compress_ratios": (4, 16), "max_seq_len": 16}
    result = run_graph_phase(load_factory("dsv4.target:make_target"), CPU, options, RULES, "cpu", soak_steps=20)
    assert "identical" in result.outcome("replay").detail
    assert result.outcome("soak").status == "ran" and result.soak["first_mismatch_step"] is None
    assert result.findings == []


def test_capture_errors_lose_terminal_colour_codes():
    from graphlint.dynamic.frames import error_line

    class DSLCudaRuntimeError(RuntimeError):
        pass

    exc = DSLCudaRuntimeError("\x1b[91m\x1b[1merror:\x1b[0m cudaErrorStreamCaptureInvalidated (error code: 901)\nmore")
    assert error_line(exc) == "DSLCudaRuntimeError: error: cudaErrorStreamCaptureInvalidated (error code: 901)"


def test_an_error_inside_an_installed_library_belongs_to_the_project_line(tmp_path, monkeypatch):
    """The eager inventory on the H200 blamed a failed capture on CuTeDSL's jit_executor.py (in a
    ``pip --target`` dir on PYTHONPATH) instead of the dsv4 line that launched the kernel."""
    from graphlint.dynamic.frames import _from_pairs

    project, target_dir, venv = tmp_path / "proj", tmp_path / "wheels", tmp_path / "venv" / "site-packages"
    for d in (project / "pkg", target_dir / "cutlass", venv / "other"):
        d.mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", [str(target_dir), str(venv), ""])
    launch = (str(project / "pkg" / "kernel.py"), 20, "launch")
    for library in (str(target_dir / "cutlass" / "jit_executor.py"), str(venv / "other" / "lib.py")):
        frame = _from_pairs([(library, 1245, "run"), launch, (str(project / "pkg" / "step.py"), 7, "step")])
        assert (frame.path, frame.line) == ("pkg/kernel.py", 20)
        assert frame.chain[-1].endswith("jit_executor.py:1245 run") or frame.chain[-1].endswith("lib.py:1245 run")
    only_library = _from_pairs([(str(target_dir / "cutlass" / "jit_executor.py"), 1245, "run")])
    assert only_library.line == 1245  # nothing better to point at: still a location, not None


def test_a_second_process_never_captures_the_regions_that_failed():
    """What run.py's re-run gets: failed regions stay failed (with the first process's reason)
    and run eagerly; the stateful target that tripped an assert after its failed capture now
    replays cleanly, so the replay verdict is evidence again."""
    first = run_graph_phase(_StatefulAfterFailedCapture, CPU, {}, RULES, "cpu")
    known = {n: c["detail"] for n, c in first.capture.items() if c["status"] == "failed"}
    second = run_graph_phase(_StatefulAfterFailedCapture, CPU, {}, RULES, "cpu", known_failed=known)
    assert second.capture["first"] == first.capture["first"]
    assert second.capture["second"]["status"] == "captured"
    assert second.findings == []  # GL590 belongs to the first process; run.py carries it over
    assert second.outcome("replay").status == "ran" and "identical" in second.outcome("replay").detail
