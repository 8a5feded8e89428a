"""The graph probe's record turned into probe outcomes, findings, timing and the soak hand-off.

:class:`~graphlint.dynamic.graph_probe.GraphProbe` steps the two instances and returns a
:class:`GraphRecord`; :func:`graph_result` reads it and never steps a target. With
``reference="elsewhere"`` the soak is only prepared here: the graph series and everything the
analysis needs go to ``result.records["soak"]``, and :func:`finish_soak` completes it in the parent
once the reference worker's eager series is in.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from graphlint.dynamic import verdicts
from graphlint.dynamic.series import StepSeries
from graphlint.dynamic.soak import SoakContext, analyse_soak, context_from_dict, context_to_dict, mismatched
from graphlint.inventory import (CAPTURED, EMPTY, FAILED, NOT_RUN, STALE, DeviceResult, ProbeOutcome,
                                 captured_count)


#: What the capture and replay probes observe (the runtime pack's ``observes:`` names the rule for each).
OBSERVATIONS = ("capture-failed", "empty-graph", "own-capture-without-stream", "kernel-outside-capture",
                "rebound-input", "replay-mismatch")


@dataclass
class GraphRecord:
    """What the graph probe observed, in the order it happened; everything its analysis reads."""

    rules: dict
    label: str
    observed: DeviceResult  # the capture matrix, the regions and the seconds, filled while stepping
    capturable: list[str]  # the regions to capture, in step order
    regions: int  # every region, capturable or not
    replay_steps: int = 0
    soak_steps: int = 0
    cap_note: str = ""  # "capped at the target's max_steps = 64, asked 512"
    captures: list = field(default_factory=list)  # (region, status, where, detail) of each failed or empty capture
    escapes: list = field(default_factory=list)  # launches.Escape: kernels that ran during a capture
    capture_step_done: bool = False  # the capture step ran to its end: its escaped kernels are reported
    watch: tuple[bool, str] = (False, "")  # (kernels outside the graphs were watched, why they could not be counted)
    moved: list = field(default_factory=list)  # addresses.Moved: inputs rebound after a capture
    self_captures: list = field(default_factory=list)  # UserFrame of each capture the target opens itself
    frozen: list = field(default_factory=list)  # the tracer's step-varying Python values (eager steps 1, 2)
    diffs: list = field(default_factory=list)  # (step, max|graph - eager|, max|eager|) in the replay window
    region_frames: dict = field(default_factory=dict)  # region -> UserFrame of its function, in step order
    stopped_at: int | None = None
    stop_where: str = ""  # "path:line" of the target's line that raised
    poisoned: str = ""  # why the instances stopped early
    handed_off: bool = False  # stopped after failed captures: a fresh process measures replay
    failed_here: list[str] = field(default_factory=list)  # regions whose capture failed in this process
    idle_from: int | None = None  # the soak step from which no region replayed as a graph
    graph_series: StepSeries | None = None
    eager_series: StepSeries | None = None


def found_while_probing(record: GraphRecord, *, own_captures: bool = True) -> list:
    """A finding per failed or empty capture, per kernel that escaped a capture, per input rebound
    after one and (``own_captures``) per capture the target opens without a stream."""
    rules, label = record.rules, record.label
    out = [verdicts.finding(rules, "capture-failed" if status == FAILED else "empty-graph", where, label, region,
                            "capture" if status == FAILED else "capture:empty-graph", detail)
           for region, status, where, detail in record.captures]
    out += verdicts.escape_findings(rules, label, record.escapes) if record.capture_step_done else []
    out += verdicts.moved_findings(rules, label, record.moved)
    if own_captures:
        out += [verdicts.finding(rules, "own-capture-without-stream", where, label, "",
                                 "capture:torch.cuda.graph(stream=None)",
                                 "the target's own capture") for where in record.self_captures]
    return out


def soak_context(record: GraphRecord, replay_mismatch: bool) -> SoakContext:
    capture = record.observed.capture
    captured = {n for n, c in capture.items() if c["status"] in (CAPTURED, EMPTY, STALE)}
    frozen = [f for f in record.frozen if f.region in captured]
    return SoakContext(record.rules, record.label, record.replay_steps, record.soak_steps, replay_mismatch, frozen,
                       list(record.escapes), dict(capture), dict(record.region_frames), record.idle_from,
                       record.cap_note)


def median_timing(graph: StepSeries, eager: StepSeries) -> dict[str, float]:
    """Median s/token of each instance, the capture step excluded."""
    g = [t for s, t in zip(graph.steps, graph.seconds) if s >= 2]
    e = [t for s, t in zip(eager.steps, eager.seconds) if s >= 2]
    return {"graph_s": statistics.median(g), "eager_s": statistics.median(e)} if g and e else {}


def _capture_outcome(record: GraphRecord) -> ProbeOutcome:
    capture = record.observed.capture
    statuses = [c["status"] for c in capture.values()]
    eager = record.regions - len(record.capturable)
    if record.stopped_at == 0:  # the warm-up step raised: nothing was captured or compared
        return ProbeOutcome("capture", "skipped", record.poisoned)
    notes = [f"{statuses.count(EMPTY)} empty"] if EMPTY in statuses else []
    notes += [f"{statuses.count(STALE)} replayed stale inputs"] if STALE in statuses else []
    notes += [f"{eager} deliberately eager"] if eager else []
    escaped = sum(e.count for e in record.escapes)
    watched, why_not = record.watch
    watch = ("" if not watched
             else f"; kernels run outside the graphs during capture: {escaped}" if not why_not
             else f"; kernels outside the graphs not counted ({why_not})")
    captured, _stale, _graphs = captured_count(capture)
    return ProbeOutcome("capture", "ran", f"{captured}/{len(record.capturable)} capturable regions captured"
                        + (f" ({', '.join(notes)})" if notes else "") + watch)


def replay_outcome(record: GraphRecord) -> ProbeOutcome:
    bad = [d for d in record.diffs if mismatched(d[1], d[2])]
    return ProbeOutcome("replay", "ran", f"graph vs eager over steps 1-{record.replay_steps - 1}: "
                        + (f"first mismatch at step {bad[0][0]}" if bad else "identical within tolerance")
                        + (f" ({record.cap_note})" if record.cap_note and not record.soak_steps else ""))


def partial(record: GraphRecord) -> dict:
    """What the probe holds after its replay window, for a parent whose worker dies in the soak
    (the target's own captures are counted at the end of the run)."""
    seen = record.observed
    snapshot = DeviceResult(record.label, findings=found_while_probing(record, own_captures=False),
                            probes=[_capture_outcome(record), replay_outcome(record)],
                            capture=dict(seen.capture), regions=list(seen.regions), entries=list(seen.entries),
                            sources=list(seen.sources), seconds=dict(seen.seconds))
    return snapshot.to_dict()


def graph_result(record: GraphRecord, reference: str, records_dir: str) -> DeviceResult:
    """The probe's :class:`DeviceResult`: findings, the capture, replay and soak outcomes, timing."""
    result = record.observed
    result.findings = found_while_probing(record)
    outcome = result.probes
    outcome.append(_capture_outcome(record))
    if record.handed_off:
        result.meta["handed_off"] = "1"
        why = f"measured in a fresh process: capturing {', '.join(record.failed_here)} failed in this one"
        outcome += [ProbeOutcome("replay", "skipped", why)] + ([ProbeOutcome("soak", "skipped", why)]
                                                               if record.soak_steps else [])
        return result
    # After a failed capture the stop is its consequence (GL590 is the failure); without one, a
    # target that raises is a probe error: the gate must not pass a step it could not run.
    crashed = "error" if record.stopped_at is not None and not record.failed_here else "skipped"
    if record.poisoned and not (crashed == "error" and record.stopped_at >= record.replay_steps):
        for region in record.capturable:
            result.capture.setdefault(region, {"status": NOT_RUN, "detail": record.poisoned})
        outcome.append(ProbeOutcome("replay", crashed, record.poisoned, record.stop_where))
        if record.soak_steps:
            outcome.append(ProbeOutcome("soak", "skipped", record.poisoned))
        return result
    bad = [d for d in record.diffs if mismatched(d[1], d[2])]
    outcome.append(replay_outcome(record))
    ctx = soak_context(record, bool(bad))
    if bad:
        result.findings += verdicts.mismatch_findings(
            record.rules, "replay-mismatch", record.label, "replay",
            f"step {bad[0][0]}: max|graph-eager| = {bad[0][1]:.3g} (max|eager| = {bad[0][2]:.3g})",
            frozen=ctx.frozen, escapes=ctx.escapes, capture=ctx.capture,
            region_frames=ctx.region_frames)
    graph, eager = record.graph_series, record.eager_series
    graph.finish()
    eager.finish()
    result.timing = median_timing(graph, eager)
    if not record.soak_steps:
        return result
    if record.poisoned:  # the replay window passed; the soak stopped
        graph.stopped = record.poisoned
    if record.idle_from is not None:
        result.meta["graph_idle_from"] = str(record.idle_from)
    if reference == "here":
        complete(result, graph, eager, ctx)
    else:
        result.records["soak"] = {"graph": graph.ship(records_dir), "context": context_to_dict(ctx)}
    return result


def complete(result: DeviceResult, graph: StepSeries | None, eager: StepSeries | None, ctx: SoakContext) -> None:
    figures, findings, outcome = analyse_soak(graph, eager, ctx)
    result.soak = figures
    result.findings = result.findings + findings
    result.probes = [p for p in result.probes if p.probe != "soak"] + [outcome]
    if graph is not None and eager is not None and figures:
        timing = median_timing(graph, eager)
        result.timing = timing or result.timing


def finish_soak(result: DeviceResult, reference: DeviceResult | None, rules) -> DeviceResult:
    """The soak of a graph worker's result, with the eager series of a reference worker."""
    shipped = result.records.pop("soak", None)
    if shipped is None:
        return result
    ctx = context_from_dict(shipped["context"], rules)
    graph = StepSeries.load(shipped["graph"])
    eager = None
    if reference is not None and "eager" in reference.records:
        eager = StepSeries.load(reference.records.pop("eager"))
    else:
        why = next((p.detail for p in (reference.probes if reference else []) if p.status == "error"), "it did not run")
        eager = StepSeries("eager", stopped=f"the eager reference worker failed: {why}")
    complete(result, graph, eager, ctx)
    return result
