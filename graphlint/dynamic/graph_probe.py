"""The capture, replay and soak probes: one graph instance against one eager instance.

Protocol (two instances built by the same factory, so the same weights and inputs):
step 0 runs both eagerly (warm-up: lazy init, kernel compilation, allocator pools; their outputs
must agree, else :mod:`graphlint.dynamic.determinism` says which buffer differs: a target error);
step 1 captures each capturable region of the graph instance in order and replays it at once;
steps 2.. replay. After every step of the replay window both ``output()`` are compared. Replaying
a graph does nothing but what it recorded, so a Python value frozen at capture time, a buffer
replaced after capture or a kernel that ran outside the capture show up as a mismatch once the
inputs have changed (step 2 at the latest). Three records say which line: the eager instance's
steps 1 and 2 run under the dispatch tracer (step-varying Python values), every capture runs under
:class:`~graphlint.dynamic.launches.CaptureWatch` (kernels that escaped it) and
:class:`~graphlint.dynamic.addresses.AddressWatch` (buffers rebound after it; such a graph is not
replayed again, it would read freed memory).

The probe only steps and records: :meth:`GraphProbe.run` returns a
:class:`~graphlint.dynamic.graph_report.GraphRecord`, and :func:`~graphlint.dynamic.graph_report.graph_result`
decides what it means (findings, outcomes, timing).

Soak steps run the graph instance and record its outputs; the eager series comes from this
process's eager instance (``reference="here"``) or from a reference worker running in parallel
(``reference="elsewhere"``: the inventory), and :func:`graphlint.dynamic.soak.analyse_soak` compares
them. A target's ``max_steps`` caps both windows.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable

from graphlint.dynamic import declared
from graphlint.dynamic.addresses import AddressWatch
from graphlint.dynamic.capture import (capture_region, context_healthy, release_failed_capture, replay,
                                       watch_self_captures)
from graphlint.dynamic.combine import combine
from graphlint.dynamic.crash import Progress
from graphlint.dynamic.frames import (error_line, function_frame, ran_during, region_entries, region_sources, staged,
                                      with_staged)
from graphlint.dynamic.graph_report import GraphRecord, graph_result
from graphlint.dynamic.launches import CaptureWatch
from graphlint.dynamic.series import RegionClock, StepSeries, memory, step_limit, synchronize, tensors_of
from graphlint.dynamic.soak import mismatched
from graphlint.dynamic.target import Region, regions_of
from graphlint.dynamic.tracer import StepTracer
from graphlint.inventory import CAPTURED, EAGER, EMPTY, FAILED, NOT_RUN, STALE, DeviceResult

REPLAY_STEPS = 8  # steps 0..7: warm-up, capture, six replays with changed inputs


def output_diff(graph_out, eager_out) -> tuple[float, float]:
    """(max |graph - eager|, max |eager|) over every tensor of the outputs."""
    if not tensors_of(eager_out):  # nothing to compare is no evidence that replay matches eager
        raise TypeError(f"output() returned {type(eager_out).__name__}, not a tensor: replay has nothing to compare")
    diff, scale = 0.0, 0.0
    for g, e in zip(tensors_of(graph_out), tensors_of(eager_out), strict=True):
        g, e = g.detach().float(), e.detach().float()
        if g.shape != e.shape:
            return float("inf"), 1.0
        diff = max(diff, float((g - e).abs().nan_to_num(float("inf")).max()) if g.numel() else 0.0)
        scale = max(scale, float(e.abs().max()) if e.numel() else 0.0)
    return diff, scale


class GraphProbe:
    def __init__(self, factory, devices, options, rules, device_label: str, known_failed: dict[str, str] | None = None,
                 *, watch_launches: bool = True, progress: Progress | None = None,
                 on_window: Callable[[GraphRecord], None] | None = None) -> None:
        """``on_window``: hears the record at the end of the replay window (a worker ships it, in
        case the soak kills the process)."""
        self.factory, self.options = factory, options
        self.on_window = on_window
        self.rules, self.label, self.devices = rules, device_label, devices
        self.known_failed = known_failed or {}  # region -> why its capture failed in an earlier process
        self.progress = progress or Progress(None)
        self.result = DeviceResult(device_label)
        self.self_captures: list = []
        started = time.perf_counter()
        with watch_self_captures(self.self_captures.append):
            self.graph_target = factory(devices, **options)
            self.eager_target = factory(devices, **options)
        self.result.seconds["build (two instances)"] = time.perf_counter() - started
        self.graph_regions = regions_of(self.graph_target)
        self.eager_regions = regions_of(self.eager_target)
        self.result.regions = [r.name for r in self.graph_regions]
        self.result.entries = region_entries(self.graph_regions)
        self.result.sources = region_sources(self.graph_regions)
        self.region_frames = {r.name: function_frame(r.fn) for r in self.graph_regions}
        self.captures: dict[str, object] = {}
        self.demoted: set[str] = set()  # captured, but their inputs moved: they run eagerly now
        self.addresses = AddressWatch(self.graph_target, self.graph_regions)
        cuda = any(str(d).startswith("cuda") for d in devices)
        self.launches = CaptureWatch(watch_launches and cuda, cuda)  # no kernels to escape on the CPU
        self.poisoned = ""  # why this instance stopped early: a poisoned context or a region that raised
        self.running = ""  # what either instance is running (a region, a stage), for _stop
        self.probe_now, self.step_now = "replay", 0  # for the progress file a dead worker leaves behind
        self.stopped_at: int | None = None
        self.idle_from: int | None = None  # the soak step from which nothing replayed as a graph
        self.handed_off = False  # stopped after failed captures: a fresh process measures replay
        self.tracer = StepTracer(rules, device_label)
        self.diffs: list[tuple[int, float, float]] = []
        self.capture_problems: list[tuple] = []  # (region, status, where, detail) of failed or empty captures
        self.moved: list = []  # addresses.Moved, as found
        self.capture_step_done = False
        self.stop_where = ""
        self.graph_series, self.eager_series = StepSeries("graph"), StepSeries("eager")
        self.clock = RegionClock()  # seconds per region, for the report's per-region s/token

    # -- one step of each instance --------------------------------------------------------
    def _eager_step(self, step: int) -> None:
        self.running = f"stage({step}) of the eager instance"
        self.eager_target.stage(step)
        traced = step in (1, 2)
        if traced:
            self.tracer.begin_step(step)
        before, start = memory(self.devices), time.perf_counter()
        if traced:
            with self.tracer:
                self._run_eager_regions()
        else:
            self._run_eager_regions()
        synchronize(self.devices)
        self.eager_series.record(step, start, before, memory(self.devices), self.eager_target.output(),
                                 self.clock.collect())

    def _run_eager_regions(self) -> None:
        for region in self.eager_regions:
            self.running = f"{region.name} of the eager instance"
            self.progress(self.probe_now, self.step_now, self.running)
            self.tracer.region = region
            with self.clock.region(region.name, region.device):
                region.fn()

    def _graph_step(self, step: int) -> None:
        self.running = f"stage({step})"
        with declared.role("host"):
            self.graph_target.stage(step)
        if step >= 2:
            self.addresses.ran("stage()", step)
        before, start = memory(self.devices), time.perf_counter()
        with self.launches.watching() if step == 1 else contextlib.nullcontext():
            for region in self.graph_regions:
                self.running = region.name
                self.progress(self.probe_now, step, region.name)
                if step == 1 and region.capturable:
                    with declared.role("captured"):
                        self._capture(region)
                    if self.poisoned:
                        return  # nothing more can run on this context
                cap = self.captures.get(region.name)
                with self.clock.region(region.name, region.device, on=step >= 2):  # not the capture step
                    if cap is not None and cap.status in (CAPTURED, EMPTY) and region.name not in self.demoted:
                        if step >= 2 and self._moved(region, step):
                            region.fn()  # a demoted graph, eagerly from now on: recorded at its capture
                            self.addresses.ran(region.name, step)
                        else:
                            replay(cap, region.device)
                    else:
                        with declared.role(declared.region_role(region)):
                            region.fn()
                        if step >= 2:
                            self.addresses.ran(region.name, step)
        if step == 1:
            self.addresses.captured_step_done()
            self.capture_step_done = True
        synchronize(self.devices)
        self.graph_series.record(step, start, before, memory(self.devices), self.graph_target.output(),
                                 self.clock.collect())

    def _moved(self, region: Region, step: int) -> bool:
        moved = self.addresses.moved(region, step)
        if moved:
            self.demoted.add(region.name)
            self.result.capture[region.name] = {"status": STALE, "detail": f"`{moved[0].name}` rebound by "
                                                f"{moved[0].rebound_by} at step {step}; ran eagerly from then on"}
            self.moved += moved
        return bool(moved)

    def _capture(self, region) -> None:
        if self.poisoned:
            self.result.capture[region.name] = {"status": NOT_RUN, "detail": self.poisoned}
            return
        if region.name in self.known_failed:  # failed in the first process: runs eagerly here
            self.result.capture[region.name] = {"status": FAILED, "detail": self.known_failed[region.name]}
            return
        synchronize([region.device])  # nothing still running when the capture window opens
        watched = Region(region.name, self.launches.traced(region.name, region.fn), region.device, region.capturable,
                         region.source, region.extra)
        with self.addresses.recording(region):
            cap = capture_region(watched)
        self.captures[region.name] = cap
        self.result.capture[region.name] = {"status": cap.status, "detail": cap.detail}
        if cap.status in (FAILED, EMPTY):
            self.capture_problems.append((region.name, cap.status, cap.where, cap.detail))
        if cap.status == FAILED:
            started = time.perf_counter()
            release_failed_capture(region.device)
            healthy, why = context_healthy(region.device)
            recovery = "recovery after failed captures (in the capture step)"
            self.result.seconds[recovery] = self.result.seconds.get(recovery, 0.0) + time.perf_counter() - started
            if not healthy:
                self.poisoned = f"CUDA context did not recover after capturing {region.name} failed: {why}"

    def failed_here(self) -> list[str]:
        """Regions whose capture failed in this process (not the ones known from an earlier one)."""
        return [n for n, c in self.result.capture.items() if c["status"] == FAILED and n not in self.known_failed]

    def _replaying(self) -> bool:
        return any(c.status in (CAPTURED, EMPTY) and n not in self.demoted for n, c in self.captures.items())

    # -- the protocol ------------------------------------------------------------------------
    def run(self, replay_steps: int = REPLAY_STEPS, soak_steps: int = 0, *, reference: str = "here",
            hand_off_failed: bool = False, stop_file: str = "") -> GraphRecord:
        """``reference``: "here" (the eager instance runs the soak too) or "elsewhere" (a reference
        worker does). ``hand_off_failed``: stop after the capture step when a capture failed here (a
        fresh process measures replay). ``stop_file``: created once no region replays as a graph any
        more, which stops the reference worker. What it means: :func:`~.graph_report.graph_result`."""
        self.stop_file = stop_file
        for region in self.graph_regions:
            if not region.capturable:
                self.result.capture[region.name] = {"status": EAGER, "detail": "deliberately eager"}
        limit = step_limit(self.graph_target)
        total = max(replay_steps, soak_steps)
        self.cap_note = ""
        if limit is not None and limit < total:
            self.cap_note = f"capped at the target's max_steps = {limit}, asked {total}"
            total, replay_steps = limit, min(replay_steps, limit)
        self.replay_steps, self.soak_steps = replay_steps, min(soak_steps, total) if soak_steps else 0
        with watch_self_captures(self.self_captures.append):
            self._steps(replay_steps, total, reference, hand_off_failed)
        return self.record()

    def record(self) -> GraphRecord:
        """What was observed so far; the analysis reads nothing else."""
        launches = self.launches
        return GraphRecord(
            self.rules, self.label, self.result, [r.name for r in self.graph_regions if r.capturable],
            len(self.graph_regions), replay_steps=self.replay_steps, soak_steps=self.soak_steps,
            cap_note=self.cap_note, captures=list(self.capture_problems), escapes=list(launches.escapes),
            capture_step_done=self.capture_step_done, watch=(launches.enabled and launches.cuda, launches.error),
            moved=list(self.moved), self_captures=list(self.self_captures), frozen=self.tracer.frozen_values(),
            diffs=list(self.diffs), region_frames=dict(self.region_frames), stopped_at=self.stopped_at,
            stop_where=self.stop_where, poisoned=self.poisoned, handed_off=self.handed_off,
            failed_here=self.failed_here(), idle_from=self.idle_from, graph_series=self.graph_series,
            eager_series=self.eager_series)

    def _steps(self, replay_steps: int, total: int, reference: str, hand_off_failed: bool) -> None:
        for step in range(total):
            started = time.perf_counter()
            self._step(step, replay_steps, reference, hand_off_failed)
            phase = ("warm-up (step 0)" if step == 0 else "capture (step 1)" if step == 1
                     else f"replay (steps 2-{replay_steps - 1})" if step < replay_steps else "soak (graph steps)")
            self.result.seconds[phase] = self.result.seconds.get(phase, 0.0) + time.perf_counter() - started
            if self.poisoned or self.handed_off or (self.idle_from is not None and reference == "elsewhere"):
                break

    def _step(self, step: int, replay_steps: int, reference: str, hand_off_failed: bool) -> None:
        in_window = step < replay_steps
        if step == replay_steps and not self.poisoned and self.on_window is not None:
            self.on_window(self.record())
        self.probe_now, self.step_now = ("capture" if step == 1 else "replay" if in_window else "soak"), step
        self.progress(self.probe_now, step, "")
        try:
            if step == 0:
                self._warm_up()
                return
            idle = not in_window and not self._replaying()
            if idle and self.idle_from is None:
                self.idle_from = step
            if idle and reference == "elsewhere":
                if self.stop_file:  # tell the reference worker now, not when this process has finished
                    open(self.stop_file, "w").close()
                return  # nothing replays as a graph: the reference worker's eager series is the soak
            if not idle:
                with declared.step(step):  # inventory --record: this step's roles
                    self._graph_step(step)
            if hand_off_failed and step == 1 and self.failed_here():
                self.handed_off = True
                return
            if not self.poisoned and (in_window or reference == "here"):
                self._eager_step(step)
                if in_window:
                    self.running = "output()"
                    self.diffs.append((step, *output_diff(self.graph_target.output(), self.eager_target.output())))
        except Exception as exc:  # noqa: BLE001 - the report must keep what was observed
            graph_side = not self.running.endswith("of the eager instance") and step > 0
            self._stop(step, exc)
            if graph_side and reference == "here":
                self._eager_too(step)

    def _eager_too(self, step: int) -> None:
        """The graph instance raised at ``step``: does the eager one, at the same step? Then it is a
        limit of the target (a cache that runs out), not of its graphs, and its error names the line.
        Not after a CUDA error: the context is gone, the parent re-runs the step eagerly in a fresh
        worker with CUDA_LAUNCH_BLOCKING=1 instead."""
        if "CUDA" in self.poisoned or "AcceleratorError" in self.poisoned:
            return
        try:
            self._eager_step(step)
        except Exception as exc:  # noqa: BLE001
            from graphlint.dynamic.frames import traceback_user_frame

            where = traceback_user_frame(exc.__traceback__)
            self.stop_where = f"{where.path}:{where.line}" if where else self.stop_where
            self.poisoned += (f"; the eager instance fails at the same step: {error_line(exc)}"
                              + (f" (at {self.stop_where})" if where else "")
                              + ": a limit of the target, not of its graphs (declare it as target.max_steps)")

    def _warm_up(self) -> None:
        """Step 0, both instances eager; they must agree, or every later mismatch would be blamed
        on the graphs."""
        for target, regions in ((self.eager_target, self.eager_regions), (self.graph_target, self.graph_regions)):
            self.running = "stage(0)"
            if target is self.graph_target:
                self.result.entries = with_staged(self.result.entries, staged(target.stage, 0, self.result.ran))
            else:
                target.stage(0)
            for region in regions:
                self.running = f"{region.name} (warm-up)"
                if target is self.graph_target:
                    self.result.ran += ran_during(region.fn)
                else:
                    region.fn()
        synchronize(self.devices)
        self.running = "output()"
        diff, scale = output_diff(self.graph_target.output(), self.eager_target.output())
        if mismatched(diff, scale):
            from graphlint.dynamic.determinism import nondeterministic

            del self.graph_target, self.eager_target  # room for the two instances the diagnosis builds
            raise nondeterministic(self.factory, self.devices, self.options, diff)

    def _stop(self, step: int, exc: Exception) -> None:
        """A region or a stage raised: keep the capture results, stop both instances.

        Typical cause: a region whose capture failed is re-run eagerly, but the failed capture
        already ran its Python side effects (cache lengths, counters) without its kernels, so the
        re-run indexes out of bounds and trips a device-side assert that poisons the context.
        """
        from graphlint.dynamic.frames import traceback_user_frame
        from graphlint.dynamic.target import TargetError

        if isinstance(exc, TargetError):
            self.result.meta["target_error"] = str(exc)
        failed = self.failed_here()
        self.stopped_at = step
        where = traceback_user_frame(exc.__traceback__)
        self.stop_where = f"{where.path}:{where.line}" if where else ""
        self.poisoned = (f"stopped at step {step} in {self.running}: {error_line(exc)}"
                         + (f" (at {self.stop_where})" if self.stop_where else "")
                         + (f" (after capturing {', '.join(failed)} failed, which leaves the target's state "
                            "undefined: its Python side effects ran, its kernels did not)" if failed else ""))


def run_graph_phase(factory, devices, options, rules, device_label: str, *, replay_steps: int = REPLAY_STEPS,
                    soak_steps: int = 0, known_failed: dict[str, str] | None = None) -> DeviceResult:
    """Capture, replay and soak in this process (the eager instance runs the soak here too).
    ``known_failed``: regions whose capture failed in an earlier process; they are not captured
    again (they run eagerly), so this process never holds a failed capture."""
    probe = GraphProbe(factory, devices, options, rules, device_label, known_failed)
    return combine([graph_result(probe.run(replay_steps, soak_steps, reference="here"), "here", "")])
