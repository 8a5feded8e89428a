"""The capture, replay and soak probes: one graph instance against one eager instance.

Protocol (two instances built by the same factory, so the same weights and inputs):
step 0 runs both eagerly (warm-up: lazy init, kernel compilation, allocator pools); step 1
captures each capturable region of the graph instance in order and replays it at once; steps
2.. replay. After every step both ``output()`` are compared. Replaying a graph does nothing
but what it recorded, so a Python value frozen at capture time, a buffer replaced after
capture or a kernel that ran eagerly during capture (an empty graph) all show up as a
mismatch once the inputs have changed (step 2 at the latest). The eager instance's steps 1
and 2 run under the dispatch tracer so that a mismatch can be pinned on the lines whose
Python arguments change from step to step.
"""

from __future__ import annotations

import contextlib
import statistics
import time

import torch

from graphlint.dynamic.capture import capture_region, context_healthy, replay, watch_self_captures
from graphlint.dynamic.frames import error_line, function_frame, region_entries, region_sources
from graphlint.dynamic.results import (CAPTURED, EAGER, EMPTY, FAILED, NOT_RUN, DeviceResult,
                                       ProbeOutcome, make_finding, merge_findings)
from graphlint.dynamic.target import regions_of
from graphlint.dynamic.tracer import StepTracer

REPLAY_STEPS = 8  # steps 0..7: warm-up, capture, six replays with changed inputs


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def output_diff(graph_out, eager_out) -> tuple[float, float]:
    """(max |graph - eager|, max |eager|) over every tensor of the outputs."""
    if not _tensors(eager_out):  # nothing to compare is no evidence that replay matches eager
        raise TypeError(f"output() returned {type(eager_out).__name__}, not a tensor: replay has nothing to compare")
    diff, scale = 0.0, 0.0
    for g, e in zip(_tensors(graph_out), _tensors(eager_out), strict=True):
        g, e = g.detach().float(), e.detach().float()
        if g.shape != e.shape:
            return float("inf"), 1.0
        diff = max(diff, float((g - e).abs().nan_to_num(float("inf")).max()) if g.numel() else 0.0)
        scale = max(scale, float(e.abs().max()) if e.numel() else 0.0)
    return diff, scale


def mismatched(diff: float, scale: float) -> bool:
    return diff > 1e-3 * scale + 1e-5


def _sync(devices) -> None:
    for dev in {torch.device(d) for d in devices if torch.device(d).type == "cuda"}:
        torch.cuda.synchronize(dev)


class GraphProbe:
    def __init__(self, factory, devices, options, rules, device_label: str,
                 known_failed: dict[str, str] | None = None) -> None:
        self.rules, self.label, self.devices = rules, device_label, devices
        self.known_failed = known_failed or {}  # region -> why its capture failed in an earlier process
        self.result = DeviceResult(device_label)
        self.self_captures: list = []
        with watch_self_captures(self.self_captures.append):
            self.graph_target = factory(devices, **options)
            self.eager_target = factory(devices, **options)
        self.graph_regions = regions_of(self.graph_target)
        self.eager_regions = regions_of(self.eager_target)
        self.result.regions = [r.name for r in self.graph_regions]
        self.result.entries = region_entries(self.graph_regions)
        self.result.sources = region_sources(self.graph_regions)
        self.captures: dict[str, object] = {}
        self.poisoned = ""  # why this instance stopped early: a poisoned context or a region that raised
        self.running = ""  # what either instance is running (a region, a stage), for _stop
        self.stopped_at: int | None = None  # the step at which the target raised or proved unusable
        self.tracer = StepTracer(rules, device_label)
        self.diffs: list[tuple[int, float, float]] = []
        self.times = {"graph": [], "eager": []}
        self.memory = {"graph": [], "eager": []}  # (step, live-bytes delta, allocations) per step

    # -- one step of each instance --------------------------------------------------------
    def _eager_step(self, step: int) -> None:
        self.running = f"stage({step}) of the eager instance"
        self.eager_target.stage(step)
        traced = step in (1, 2)
        if traced:
            self.tracer.begin_step(step)
        before, start = self._memory(), time.perf_counter()
        with self.tracer if traced else contextlib.nullcontext():
            for region in self.eager_regions:
                self.running = f"{region.name} of the eager instance"
                self.tracer.region = region
                region.fn()
        _sync(self.devices)
        self._record("eager", step, start, before)

    def _graph_step(self, step: int) -> None:
        self.running = f"stage({step})"
        self.graph_target.stage(step)
        before, start = self._memory(), time.perf_counter()
        for region in self.graph_regions:
            self.running = region.name
            if step == 1 and region.capturable:
                self._capture(region)
                if self.poisoned:
                    return  # nothing more can run on this context
            cap = self.captures.get(region.name)
            if cap is not None and cap.status in (CAPTURED, EMPTY):
                replay(cap, region.device)
            else:
                region.fn()
        _sync(self.devices)
        self._record("graph", step, start, before)

    def _memory(self) -> tuple[int, int]:
        """(live bytes, cumulative allocation count) over the target's CUDA devices."""
        live = count = 0
        for dev in {torch.device(d) for d in self.devices if torch.device(d).type == "cuda"}:
            live += torch.cuda.memory_allocated(dev)
            count += torch.cuda.memory_stats(dev).get("allocation.all.allocated", 0)
        return live, count

    def _record(self, kind: str, step: int, start: float, before: tuple[int, int]) -> None:
        elapsed = time.perf_counter() - start
        after = self._memory()
        self.times[kind].append(elapsed)
        self.memory[kind].append((step, after[0] - before[0], after[1] - before[1]))

    def _capture(self, region) -> None:
        if self.poisoned:
            self.result.capture[region.name] = {"status": NOT_RUN, "detail": self.poisoned}
            return
        if region.name in self.known_failed:  # failed in the first process: runs eagerly here
            self.result.capture[region.name] = {"status": FAILED, "detail": self.known_failed[region.name]}
            return
        cap = capture_region(region)
        self.captures[region.name] = cap
        self.result.capture[region.name] = {"status": cap.status, "detail": cap.detail}
        if cap.status == FAILED:
            self.result.findings.append(self._finding("GL590", cap.where, region, "capture", cap.detail))
            healthy, why = context_healthy(region.device)
            if not healthy:
                self.poisoned = f"CUDA context did not recover after capturing {region.name} failed: {why}"
        elif cap.status == EMPTY:
            self.result.findings.append(self._finding("GL591", cap.where, region, "capture:empty-graph", cap.detail))

    def _failed_here(self) -> list[str]:
        """Regions whose capture failed in this process (not the ones known from an earlier one)."""
        return [n for n, c in self.result.capture.items() if c["status"] == FAILED and n not in self.known_failed]

    def _finding(self, code, where, region, evidence, detail):
        f = make_finding(self.rules[code], where, device=self.label, region=region.name if region else "",
                         evidence=evidence, detail=detail)
        return f.with_(extra=f.extra + (("in_graph", True),))

    # -- the protocol ------------------------------------------------------------------------
    def run(self, replay_steps: int = REPLAY_STEPS, soak_steps: int = 0) -> DeviceResult:
        for region in self.graph_regions:
            if not region.capturable:
                self.result.capture[region.name] = {"status": EAGER, "detail": "deliberately eager"}
        with watch_self_captures(self.self_captures.append):
            self._steps(max(replay_steps, soak_steps))
        for where in self.self_captures:
            self.result.findings.append(self._finding("GL592", where, None, "capture:torch.cuda.graph(stream=None)",
                                                      "the target's own capture"))
        self._report(replay_steps, soak_steps)
        self.result.findings = merge_findings(self.result.findings)
        return self.result

    def _steps(self, total: int) -> None:
        for step in range(total):
            try:
                if step == 0:
                    self._warm_up()
                    continue
                self._graph_step(step)
                if not self.poisoned:
                    self._eager_step(step)
                    self.running = "output()"
                    self.diffs.append((step, *output_diff(self.graph_target.output(), self.eager_target.output())))
            except Exception as exc:  # noqa: BLE001 - the report must keep what was observed
                self._stop(step, exc)
            if self.poisoned:
                break

    def _warm_up(self) -> None:
        """Step 0, both instances eager; they must agree, or every later mismatch would be blamed
        on the graphs."""
        for target, regions in ((self.eager_target, self.eager_regions), (self.graph_target, self.graph_regions)):
            self.running = "stage(0)"
            target.stage(0)
            for region in regions:
                self.running = f"{region.name} (warm-up)"
                region.fn()
        _sync(self.devices)
        self.running = "output()"
        diff, scale = output_diff(self.graph_target.output(), self.eager_target.output())
        if mismatched(diff, scale):
            raise ValueError(f"two instances from the factory differ at step 0, both eager (max|diff| = {diff:.3g}): "
                             "the factory must build the engine deterministically (seed its weights)")

    def _stop(self, step: int, exc: Exception) -> None:
        """A region or a stage raised: keep the capture results, stop both instances.

        Typical cause: a region whose capture failed is re-run eagerly, but the failed capture
        already ran its Python side effects (cache lengths, counters) without its kernels, so the
        re-run indexes out of bounds and trips a device-side assert that poisons the context.
        """
        failed = self._failed_here()
        self.stopped_at = step
        self.poisoned = (f"stopped at step {step} in {self.running}: {error_line(exc)}"
                         + (f" (after capturing {', '.join(failed)} failed, which leaves the target's state "
                            "undefined: its Python side effects ran, its kernels did not)" if failed else ""))

    def _report(self, replay_steps: int, soak_steps: int) -> None:
        outcome = self.result.probes
        statuses = [c["status"] for c in self.result.capture.values()]
        capturable = [r for r in self.graph_regions if r.capturable]
        eager = len(self.graph_regions) - len(capturable)
        if self.stopped_at == 0:  # the warm-up step raised: nothing was captured or compared
            outcome.append(ProbeOutcome("capture", "skipped", self.poisoned))
        else:  # an empty graph is not a capture: it records nothing (same count as the summary)
            notes = [f"{statuses.count(EMPTY)} empty"] if EMPTY in statuses else []
            notes += [f"{eager} deliberately eager"] if eager else []
            outcome.append(ProbeOutcome("capture", "ran", f"{statuses.count(CAPTURED)}/{len(capturable)} capturable "
                                        "regions captured" + (f" ({', '.join(notes)})" if notes else "")))
        # After a failed capture the stop is its consequence (GL590 is the failure); without one, a
        # target that raises is a probe error: the gate must not pass a step it could not run.
        crashed = "error" if self.stopped_at is not None and not self._failed_here() else "skipped"
        if self.poisoned and not (crashed == "error" and self.stopped_at >= replay_steps):
            for region in capturable:
                self.result.capture.setdefault(region.name, {"status": NOT_RUN, "detail": self.poisoned})
            outcome.append(ProbeOutcome("replay", crashed, self.poisoned))
            if soak_steps:
                outcome.append(ProbeOutcome("soak", "skipped", self.poisoned))
            return
        window = [d for d in self.diffs if d[0] < replay_steps]
        bad = [d for d in window if mismatched(d[1], d[2])]
        outcome.append(ProbeOutcome("replay", "ran", f"graph vs eager over steps 1-{replay_steps - 1}: "
                                    + (f"first mismatch at step {bad[0][0]}" if bad else "identical within tolerance")))
        if bad:
            self._blame("GL391", "replay", f"step {bad[0][0]}: max|graph-eager| = {bad[0][1]:.3g} "
                        f"(max|eager| = {bad[0][2]:.3g})")
        graph_t, eager_t = self.times["graph"][1:], self.times["eager"][1:]
        if graph_t and eager_t:
            self.result.timing = {"graph_s": statistics.median(graph_t), "eager_s": statistics.median(eager_t)}
        if soak_steps and self.poisoned:  # the replay window passed; the soak stopped
            outcome.append(ProbeOutcome("soak", "error", self.poisoned))
        elif soak_steps:
            from graphlint.dynamic.soak import soak_report

            soak_report(self, replay_steps, soak_steps, first_mismatch=bool(bad))

    def _blame(self, code: str, evidence: str, detail: str) -> None:
        """Point a step-level mismatch at the lines whose Python arguments change per step."""
        captured = {n for n, c in self.result.capture.items() if c["status"] in (CAPTURED, EMPTY)}
        lines = [f for f in self.tracer.frozen_values() if f.region in captured]
        if lines:
            for f in lines:
                self.result.findings.append(self._finding(
                    code, _where_of(f), _region(self.graph_regions, f.region), f"{evidence}:frozen-python-value",
                    f"{detail}; {f.message.split(': ', 1)[-1]}"))
            return
        suspects = [r for r in self.graph_regions if self.result.capture.get(r.name, {}).get("status") == EMPTY]
        suspects = suspects or [r for r in self.graph_regions if r.name in captured][:1]
        for region in suspects:
            self.result.findings.append(self._finding(
                code, function_frame(region.fn), region, evidence,
                f"{detail}; no step-varying Python value found: a kernel outside the capture stream "
                "or a stale buffer address (located at the region, not the line)"))

    def _blame_region(self, code: str, evidence: str, detail: str) -> None:
        """Soak figures belong to the whole step: attribute them to the first region."""
        region = self.graph_regions[0]
        self.result.findings.append(self._finding(code, function_frame(region.fn), region, evidence,
                                                  detail + " (located at the first region, not the line)"))


def _region(regions, name):
    return next((r for r in regions if r.name == name), None)


def _where_of(finding):
    from graphlint.dynamic.frames import UserFrame

    return UserFrame(finding.path, finding.line, finding.function, finding.chain)


def run_graph_phase(factory, devices, options, rules, device_label: str, *, replay_steps: int = REPLAY_STEPS,
                    soak_steps: int = 0, known_failed: dict[str, str] | None = None) -> DeviceResult:
    """``known_failed``: regions whose capture failed in an earlier process; they are not
    captured again (they run eagerly), so this process never holds a failed capture."""
    probe = GraphProbe(factory, devices, options, rules, device_label, known_failed)
    return probe.run(replay_steps, soak_steps)
