"""The soak probe: the seed's open Phase 1 checks over many steps (``--steps N``).

It continues the replay protocol past the short replay window and reads three things off the
per-step records of the two instances (:class:`~graphlint.dynamic.series.StepSeries`): live device
memory that grows step after step (a leak), allocations per step while the graph instance replays
(a captured region allocates nothing on replay; what remains comes from eager regions and
staging), and the graph-vs-eager difference over time (drift that a short replay check cannot
see). :func:`analyse_soak` is a pure function of those records, so it does not care whether the
eager series came from the graph worker's own eager instance or from a reference worker that ran
in parallel (what the inventory does: the eager step is the slow half).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass, field

from graphlint.dynamic.verdicts import finding, mismatch_findings
from graphlint.inventory import ProbeOutcome


#: What the soak observes (the runtime pack's ``observes:`` names the rule for each).
OBSERVATIONS = ("memory-growth", "soak-drift")


def mismatched(diff: float, scale: float) -> bool:
    return diff > 1e-3 * scale + 1e-5


@dataclass
class SoakContext:
    """What the analysis needs from the graph probe besides the two series."""

    rules: dict
    label: str
    replay_steps: int
    soak_steps: int
    replay_mismatch: bool = False
    frozen: list = field(default_factory=list)  # step-varying Python values (tracer findings)
    escapes: list = field(default_factory=list)
    capture: dict = field(default_factory=dict)
    region_frames: dict = field(default_factory=dict)  # name -> UserFrame, in step order
    idle_from: int | None = None  # the step from which no region replayed as a graph
    cap_note: str = ""  # "capped at the target's max_steps = 64"


def context_to_dict(ctx: SoakContext) -> dict:
    """JSON-able (the rules are not shipped: the receiving process loads its own)."""
    data = {k: v for k, v in dataclasses.asdict(ctx).items() if k not in ("rules", "frozen", "escapes", "region_frames")}
    data["frozen"] = [f.to_dict() for f in ctx.frozen]
    data["escapes"] = [dataclasses.asdict(e) for e in ctx.escapes]
    data["region_frames"] = {n: dataclasses.asdict(w) if w else None for n, w in ctx.region_frames.items()}
    return data


def context_from_dict(data: dict, rules: dict) -> SoakContext:
    from graphlint.dynamic.frames import UserFrame
    from graphlint.dynamic.launches import Escape
    from graphlint.finding import Finding

    data = dict(data)
    data["frozen"] = [Finding.from_dict(f) for f in data.get("frozen", [])]
    data["escapes"] = [Escape(**e) for e in data.get("escapes", [])]
    data["region_frames"] = {n: UserFrame(w["path"], w["line"], w["function"], tuple(w.get("chain", ())))
                             if w else None for n, w in data.get("region_frames", {}).items()}
    return SoakContext(rules=rules, **data)


def _growth(steps: list[int], deltas: list[int], first_step: int) -> tuple[float, float]:
    """(median live-bytes delta per step, share of steps that grew) over the soak window."""
    window = [d for s, d in zip(steps, deltas) if s >= first_step]
    if not window:
        return 0.0, 0.0
    return float(statistics.median(window)), sum(d > 0 for d in window) / len(window)


def diffs(graph, eager, first_step: int) -> list[tuple[int, float, float]]:
    """(step, max|graph - eager|, max|eager|) for every step both series recorded from ``first_step``."""
    out = []
    for step in sorted(set(graph.steps) & set(eager.steps)):
        g, e = graph.output_at(step), eager.output_at(step)
        if step < first_step or g is None or e is None:
            continue
        if g.shape != e.shape:
            out.append((step, float("inf"), 1.0))
            continue
        d = float((g - e).abs().nan_to_num(float("inf")).max()) if g.numel() else 0.0
        out.append((step, d, float(e.abs().max()) if e.numel() else 0.0))
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def analyse_soak(graph, eager, ctx: SoakContext) -> tuple[dict, list, ProbeOutcome]:
    """(soak figures, findings, probe outcome) from the graph and eager series."""
    start = ctx.replay_steps
    figures: dict = {"steps": ctx.soak_steps}
    findings: list = []
    stopped = [f"{s.kind}: {s.stopped}" for s in (graph, eager) if s is not None and s.stopped]
    if eager is None or not [s for s in eager.steps if s >= start]:
        why = ("; ".join(stopped) or (f"no region replays as a graph from step {ctx.idle_from}, so there is nothing to "
                                      "soak" if ctx.idle_from is not None else
                                      f"--steps {ctx.soak_steps} is not beyond the {start}-step replay window"))
        return {}, [], ProbeOutcome("soak", "error" if stopped else "skipped", why)
    eager_growth, eager_share = _growth(eager.steps, eager.live_delta, start)
    window = diffs(graph, eager, start) if graph is not None else []
    graph_growth, graph_share = _growth(graph.steps, graph.live_delta, start) if graph else (0.0, 0.0)
    allocs = [n for s, n in zip(graph.steps, graph.allocations) if s >= start] if graph else []
    figures.update({"graph_bytes_per_step": graph_growth, "eager_bytes_per_step": eager_growth,
                    "graph_allocations_per_step": _median(allocs), "first_mismatch_step": None,
                    "graph_s_per_step": _median([t for s, t in zip(graph.steps, graph.seconds) if s >= start]) if graph else 0.0,
                    "eager_s_per_step": _median([t for s, t in zip(eager.steps, eager.seconds) if s >= start])})
    first_frame = next(iter(ctx.region_frames.items()), (None, None))
    for kind, growth, share, n in (("graph", graph_growth, graph_share, len(window)),
                                   ("eager", eager_growth, eager_share, len([s for s in eager.steps if s >= start]))):
        if growth > 0 and share > 0.5:
            findings.append(finding(ctx.rules, "memory-growth", first_frame[1], ctx.label, first_frame[0] or "",
                                    "soak:memory", f"the {kind} instance's live memory grows by {growth:.0f} B per step "
                                    f"on {share:.0%} of {n} steps (located at the first region, not the line)"))
    if window:
        quarter = max(1, len(window) // 4)
        early, late = max(d for _s, d, _ in window[:quarter]), max(d for _s, d, _ in window[-quarter:])
        bad = [w for w in window if mismatched(w[1], w[2])]
        figures.update({"max_diff_first_quarter": early, "max_diff_last_quarter": late,
                        "first_mismatch_step": bad[0][0] if bad else None})
        drift = late > 10 * early and mismatched(late, max(w[2] for w in window))
        if (bad or drift) and not ctx.replay_mismatch:
            where = f"first mismatch at step {bad[0][0]}" if bad else f"max|diff| {early:.3g} -> {late:.3g}"
            findings += mismatch_findings(ctx.rules, "soak-drift", ctx.label, "soak",
                                          f"{where} over {ctx.soak_steps} steps", frozen=ctx.frozen, escapes=ctx.escapes,
                                          capture=ctx.capture, region_frames=ctx.region_frames)
    else:
        figures.update({"max_diff_first_quarter": 0.0, "max_diff_last_quarter": 0.0})
    figures["series"] = per_step(graph, eager, window, start)
    figures["regions"] = region_seconds(graph, eager, start)
    compared = (f"{len(window)} steps after the replay window, graph vs eager" if window else
                f"no region replays as a graph from step {ctx.idle_from}, so nothing was compared; the eager "
                f"instance ran {len([s for s in eager.steps if s >= start])} steps (memory growth checked)")
    detail = compared + (f" ({ctx.cap_note})" if ctx.cap_note else "") + (f"; stopped early: {'; '.join(stopped)}" if stopped else "")
    return figures, findings, ProbeOutcome("soak", "error" if stopped else "ran", detail)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def per_step(graph, eager, window: list[tuple[int, float, float]], start: int) -> dict:
    """What the report draws, step by step over the soak: each instance's live device bytes and
    max|graph - eager| (None where a step was not recorded, or its outputs changed shape)."""
    def live(series) -> dict[int, int]:
        return {s: b for s, b in zip(series.steps, getattr(series, "live", [])) if s >= start} if series else {}

    graph_live, eager_live = live(graph), live(eager)
    diff = {step: d for step, d, _scale in window}
    steps = sorted(set(graph_live) | set(eager_live) | set(diff))
    return {"steps": steps, "graph_live_bytes": [graph_live.get(s) for s in steps],
            "eager_live_bytes": [eager_live.get(s) for s in steps],
            "max_abs_diff": [_finite(diff.get(s)) for s in steps]}


def region_seconds(graph, eager, start: int) -> dict[str, dict[str, float]]:
    """Median seconds per region over the soak window, graph and eager instance: where a step's
    time goes, and which regions the graphs speed up."""
    out: dict[str, dict[str, float]] = {}
    for series in (graph, eager):
        if series is None:
            continue
        per_region: dict[str, list[float]] = {}
        for step, timed in zip(series.steps, getattr(series, "region_seconds", []) or []):
            for name, seconds in (timed.items() if step >= start else ()):
                per_region.setdefault(name, []).append(seconds)
        for name, values in per_region.items():
            out.setdefault(name, {})[f"{series.kind}_s"] = statistics.median(values)
    return out
