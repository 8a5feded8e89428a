"""The soak probe: the seed's open Phase 1 checks over many steps (``--steps N``).

It continues the replay protocol past the short replay window and reads three things off the
per-step records: live device memory that grows step after step (a leak), allocations per
step while the graph instance replays (a captured region allocates nothing on replay; what
remains comes from eager regions and staging), and the graph-vs-eager difference over time
(drift that a short replay check cannot see).
"""

from __future__ import annotations

import statistics

from graphlint.dynamic.results import ProbeOutcome
from graphlint.dynamic.replay import mismatched


def _growth(records, first_step: int) -> tuple[float, float]:
    """(median live-bytes delta per step, share of steps that grew) over the soak window."""
    deltas = [d for step, d, _n in records if step >= first_step]
    if not deltas:
        return 0.0, 0.0
    return float(statistics.median(deltas)), sum(d > 0 for d in deltas) / len(deltas)


def soak_report(probe, replay_steps: int, soak_steps: int, *, first_mismatch: bool) -> None:
    result = probe.result
    window = [d for d in probe.diffs if d[0] >= replay_steps]
    if not window:
        result.probes.append(ProbeOutcome("soak", "skipped", f"--steps {soak_steps} is not beyond the "
                                          f"{replay_steps}-step replay window"))
        return
    quarter = max(1, len(window) // 4)
    early = max(d for _s, d, _sc in window[:quarter])
    late = max(d for _s, d, _sc in window[-quarter:])
    bad = [d for d in window if mismatched(d[1], d[2])]
    graph_growth, graph_share = _growth(probe.memory["graph"], replay_steps)
    eager_growth, eager_share = _growth(probe.memory["eager"], replay_steps)
    allocs = [n for step, _d, n in probe.memory["graph"] if step >= replay_steps]
    result.soak = {
        "steps": soak_steps,
        "graph_bytes_per_step": graph_growth, "eager_bytes_per_step": eager_growth,
        "graph_allocations_per_step": statistics.median(allocs) if allocs else 0,
        "max_diff_first_quarter": early, "max_diff_last_quarter": late,
        "first_mismatch_step": bad[0][0] if bad else None,
        "graph_s_per_step": statistics.median(probe.times["graph"][replay_steps - 1:]),
        "eager_s_per_step": statistics.median(probe.times["eager"][replay_steps - 1:]),
    }
    for kind, growth, share in (("graph", graph_growth, graph_share), ("eager", eager_growth, eager_share)):
        if growth > 0 and share > 0.5:
            probe._blame_region("GL291", "soak:memory", f"the {kind} instance's live memory grows by "
                                f"{growth:.0f} B per step on {share:.0%} of {len(window)} steps")
    drift = late > 10 * early and mismatched(late, max(d[2] for d in window))
    if (bad or drift) and not first_mismatch:
        where = f"first mismatch at step {bad[0][0]}" if bad else f"max|diff| {early:.3g} -> {late:.3g}"
        probe._blame("GL392", "soak", f"{where} over {soak_steps} steps")
    result.probes.append(ProbeOutcome("soak", "ran", f"{len(window)} steps after the replay window"))
