"""The graph probe's records turned into probe outcomes, findings, timing and the soak hand-off.

Called once at the end of :meth:`graphlint.dynamic.replay.GraphProbe.run`; it reads the probe's
records and never steps a target. With ``reference="elsewhere"`` the soak is only prepared here:
the graph series and everything the analysis needs go to ``result.records["soak"]``, and
:func:`finish_soak` completes it in the parent once the reference worker's eager series is in.
"""

from __future__ import annotations

import statistics

from graphlint.dynamic import verdicts
from graphlint.dynamic.results import (CAPTURED, EMPTY, NOT_RUN, STALE, DeviceResult, ProbeOutcome, captured_count,
                                       merge_findings)
from graphlint.dynamic.series import StepSeries
from graphlint.dynamic.soak import SoakContext, analyse_soak, context_from_dict, context_to_dict, mismatched


def soak_context(probe, replay_mismatch: bool) -> SoakContext:
    captured = {n for n, c in probe.result.capture.items() if c["status"] in (CAPTURED, EMPTY, STALE)}
    frozen = [f for f in probe.tracer.frozen_values() if f.region in captured]
    return SoakContext(probe.rules, probe.label, probe.replay_steps, probe.soak_steps, replay_mismatch, frozen,
                       list(probe.launches.escapes), dict(probe.result.capture), dict(probe.region_frames),
                       probe.idle_from, probe.cap_note)


def median_timing(graph: StepSeries, eager: StepSeries) -> dict[str, float]:
    """Median s/token of each instance, the capture step excluded."""
    g = [t for s, t in zip(graph.steps, graph.seconds) if s >= 2]
    e = [t for s, t in zip(eager.steps, eager.seconds) if s >= 2]
    return {"graph_s": statistics.median(g), "eager_s": statistics.median(e)} if g and e else {}


def _capture_outcome(probe) -> ProbeOutcome:
    statuses = [c["status"] for c in probe.result.capture.values()]
    capturable = [r for r in probe.graph_regions if r.capturable]
    eager = len(probe.graph_regions) - len(capturable)
    if probe.stopped_at == 0:  # the warm-up step raised: nothing was captured or compared
        return ProbeOutcome("capture", "skipped", probe.poisoned)
    notes = [f"{statuses.count(EMPTY)} empty"] if EMPTY in statuses else []
    notes += [f"{statuses.count(STALE)} replayed stale inputs"] if STALE in statuses else []
    notes += [f"{eager} deliberately eager"] if eager else []
    escaped = sum(e.count for e in probe.launches.escapes)
    watch = ("" if not probe.launches.enabled or not probe.launches.cuda
             else f"; kernels run outside the graphs during capture: {escaped}" if not probe.launches.error
             else f"; kernels outside the graphs not counted ({probe.launches.error})")
    captured, _stale, _graphs = captured_count(probe.result.capture)
    return ProbeOutcome("capture", "ran", f"{captured}/{len(capturable)} capturable regions captured"
                        + (f" ({', '.join(notes)})" if notes else "") + watch)


def replay_outcome(probe) -> ProbeOutcome:
    bad = [d for d in probe.diffs if mismatched(d[1], d[2])]
    return ProbeOutcome("replay", "ran", f"graph vs eager over steps 1-{probe.replay_steps - 1}: "
                        + (f"first mismatch at step {bad[0][0]}" if bad else "identical within tolerance")
                        + (f" ({probe.cap_note})" if probe.cap_note and not probe.soak_steps else ""))


def partial(probe) -> dict:
    """What the probe holds after its replay window, for a parent whose worker dies in the soak."""
    snapshot = DeviceResult(probe.label, findings=merge_findings(list(probe.result.findings)),
                            probes=[_capture_outcome(probe), replay_outcome(probe)],
                            capture=dict(probe.result.capture), regions=list(probe.result.regions),
                            entries=list(probe.result.entries), sources=list(probe.result.sources),
                            seconds=dict(probe.result.seconds))
    return snapshot.to_dict()


def report(probe, reference: str, records_dir: str) -> None:
    result = probe.result
    outcome = result.probes
    outcome.append(_capture_outcome(probe))
    capturable = [r for r in probe.graph_regions if r.capturable]
    if probe.handed_off:
        result.meta["handed_off"] = "1"
        why = f"measured in a fresh process: capturing {', '.join(probe.failed_here())} failed in this one"
        outcome += [ProbeOutcome("replay", "skipped", why)] + ([ProbeOutcome("soak", "skipped", why)] if probe.soak_steps else [])
        return
    # After a failed capture the stop is its consequence (GL590 is the failure); without one, a
    # target that raises is a probe error: the gate must not pass a step it could not run.
    crashed = "error" if probe.stopped_at is not None and not probe.failed_here() else "skipped"
    where = getattr(probe, "stop_where", "")
    if probe.poisoned and not (crashed == "error" and probe.stopped_at >= probe.replay_steps):
        for region in capturable:
            result.capture.setdefault(region.name, {"status": NOT_RUN, "detail": probe.poisoned})
        outcome.append(ProbeOutcome("replay", crashed, probe.poisoned, where))
        if probe.soak_steps:
            outcome.append(ProbeOutcome("soak", "skipped", probe.poisoned))
        return
    bad = [d for d in probe.diffs if mismatched(d[1], d[2])]
    outcome.append(replay_outcome(probe))
    ctx = soak_context(probe, bool(bad))
    if bad:
        result.findings += verdicts.mismatch_findings(
            probe.rules, "GL391", probe.label, "replay", f"step {bad[0][0]}: max|graph-eager| = {bad[0][1]:.3g} "
            f"(max|eager| = {bad[0][2]:.3g})", frozen=ctx.frozen, escapes=ctx.escapes, capture=ctx.capture,
            region_frames=ctx.region_frames)
    probe.graph_series.finish()
    probe.eager_series.finish()
    result.timing = median_timing(probe.graph_series, probe.eager_series)
    if not probe.soak_steps:
        return
    if probe.poisoned:  # the replay window passed; the soak stopped
        probe.graph_series.stopped = probe.poisoned
    if probe.idle_from is not None:
        result.meta["graph_idle_from"] = str(probe.idle_from)
    if reference == "here":
        complete(result, probe.graph_series, probe.eager_series, ctx)
    else:
        result.records["soak"] = {"graph": probe.graph_series.ship(records_dir), "context": context_to_dict(ctx)}


def complete(result: DeviceResult, graph: StepSeries | None, eager: StepSeries | None, ctx: SoakContext) -> None:
    figures, findings, outcome = analyse_soak(graph, eager, ctx)
    result.soak = figures
    result.findings = merge_findings(result.findings + findings)
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
