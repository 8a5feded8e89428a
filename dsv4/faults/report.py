"""The seed lab's markdown report: one row per fault, then every seed row and what stands for it.

Verdicts: *both* (the static half flagged the planted line and a runtime probe saw the fault, at
the line or, for replay/soak/empty-graph findings, in its region), *static only*, *dynamic only*,
*missed*; a control (a row the seed calls fine by design) is *clean* or a *false alarm*. What a
half cannot see is not left blank: the fault's own reason is printed beside it, and on a machine
without CUDA the GPU column says so.
"""

from __future__ import annotations

import re

from dsv4.faults import FAULTS
from dsv4.faults.lab import BASELINE, Observation, verdict
from dsv4.faults.seed import CATEGORIES, ROWS

NOT_RUN_GPU = "not run: needs CUDA"


def _rules(rules: list[str] | dict, expected: tuple[str, ...]) -> str:
    seen = list(rules)
    text = ", ".join(f"{r} ({', '.join(rules[r])})" if isinstance(rules, dict) and rules[r] else r for r in seen)
    missing = [r for r in expected if r not in seen]
    if missing:
        text += (" " if text else "") + f"*(expected {', '.join(missing)})*"
    return text or "—"


def _ratio(obs: Observation, baseline: Observation, key: str) -> str:
    a, b = obs.timing.get(key), baseline.timing.get(key)
    return f"{a / b:.2f}x" if a and b else "n/a"


def symptom(obs: Observation, baseline: Observation, cuda: bool) -> str:
    """What the GPU showed: capture error, empty graph, stale replay, memory growth, step time."""
    if not cuda:
        return NOT_RUN_GPU
    parts = []
    for region, cell in obs.capture.items():
        status, _, detail = cell.partition(": ")
        if status == "failed":
            parts.append(f"capture error in {region}: {detail[:140]}")
            break
    if any(cell.startswith("empty") for cell in obs.capture.values()):
        parts.append("empty graph")
    replay = obs.probes.get("replay", "")
    mismatch = re.search(r"first mismatch at step (\d+)", replay)
    if mismatch:
        parts.append(f"stale replay from step {mismatch.group(1)}")
    elif replay.startswith("error"):
        parts.append(f"replay error: {replay.split(': ', 1)[-1][:140]}")
    if any(key.startswith("GL291") for key in obs.region):
        parts.append("memory growth")
    if obs.timing:
        parts.append(f"step time vs clean: graph {_ratio(obs, baseline, 'graph_s')}, eager {_ratio(obs, baseline, 'eager_s')}")
    return "; ".join(parts) or "none"


def fault_verdict(name: str, obs: Observation, cuda: bool) -> str:
    fault = FAULTS[name].fault
    text = verdict(fault, obs)
    if fault.control or text in ("both", "dynamic only"):
        return text
    if not cuda and (fault.gpu or fault.gpu_region):
        return f"{text} (dynamic: needs CUDA)"
    if fault.gpus > 1:
        return f"{text} (dynamic: needs 2 GPUs, issue 13)"
    return text


def _seed(ids: tuple[str, ...]) -> str:
    return ", ".join(ids)


def render(observations: dict[str, Observation], baseline: Observation, *, cuda: bool, header: list[str]) -> str:
    lines = ["# Seed lab: every row of the seed inventory, planted in dsv4 and checked by both halves", ""]
    lines += [*header, ""]
    verdicts = {n: fault_verdict(n, o, cuda) for n, o in observations.items()}
    faults = [n for n in observations if not FAULTS[n].fault.control]
    controls = [n for n in observations if FAULTS[n].fault.control]
    counts: dict[str, int] = {}
    for n in faults:
        key = verdicts[n].split(" (")[0]
        counts[key] = counts.get(key, 0) + 1
    waiting = [verdicts[n].split(" (dynamic: ", 1)[1].rstrip(")") for n in faults if " (dynamic: " in verdicts[n]]
    pending = {w: waiting.count(w) for w in dict.fromkeys(waiting)}
    order = [k for k in ("both", "static only", "dynamic only", "missed") if k in counts]
    clean = sum(verdicts[n] == "clean" for n in controls)
    applicable = sum(bool(r.faults) for r in ROWS)
    lines += ["## Summary", "",
              f"- {len(ROWS)} seed rows: {applicable} stand as a fault or control in the lab, "
              f"{len(ROWS) - applicable} do not apply (each with its reason, below).",
              f"- {len(faults)} faults: " + ", ".join(f"{k} {counts[k]}" for k in order) + "."
              + (" The dynamic half was not run where it sees them: " + "; ".join(
                  f"{w} ({v})" for w, v in pending.items()) + "." if pending else ""),
              f"- {len(controls)} controls (rows the seed calls fine by design): {clean} clean, "
              f"{len(controls) - clean} false alarm(s).",
              f"- Baseline, {BASELINE}: static and runtime findings "
              f"{'none' if not (baseline.dynamic or baseline.region) else ', '.join(baseline.region)}"
              + (f"; step {baseline.timing.get('graph_s', 0) * 1e3:.3f} ms graph, "
                 f"{baseline.timing.get('eager_s', 0) * 1e3:.3f} ms eager" if baseline.timing else "") + ".", ""]
    lines += ["## Faults", "",
              "| seed rows | fault | planted line | static | dynamic (probe) | verdict | GPU symptom |",
              "|---|---|---|---|---|---|---|"]
    for name, obs in observations.items():
        fault = FAULTS[name].fault
        region = {k.split()[0]: [*v, "region-level"] for k, v in obs.region.items()}
        dynamic = _rules({**obs.dynamic, **{r: p for r, p in region.items() if r not in obs.dynamic}},
                         (fault.gpu + fault.gpu_region) if cuda else fault.cpu)
        if not cuda and (fault.gpu or fault.gpu_region):
            dynamic += f"; on a GPU expected {', '.join(fault.gpu + fault.gpu_region)} (not run)"
        if obs.two_gpu:
            dynamic += f"; on 2 GPUs: {_rules(obs.two_gpu, fault.gpu2)}"
        elif fault.gpu2:
            dynamic += f"; on 2 GPUs expected {', '.join(fault.gpu2)} (not run: issue 13)"
        static = obs.static_note or _rules(obs.static, fault.static)
        if obs.static_stray:
            static += f"; also {', '.join(obs.static_stray)} in its code"
        label = f"`{name}`" + (" (control)" if fault.control else "")
        lines.append(f"| {_seed(fault.seed)} | {label} | `{obs.planted[0] if obs.planted else ''}` | {static} | "
                     f"{dynamic} | {verdicts[name]} | {symptom(obs, baseline, cuda)} |")
    lines += ["", "## What a half cannot see, and why", "", "| fault | half | why |", "|---|---|---|"]
    for name in observations:
        for half, why in FAULTS[name].fault.blind.items():
            lines.append(f"| `{name}` | {half} | {why} |")
    lines += ["", "## Every seed row", "", "| row | seed category | the seed's wording (shortened) | lab |", "|---|---|---|---|"]
    for row in ROWS:
        lab = ", ".join(f"`{f}`" for f in row.faults) or f"not applicable: {row.reason}"
        lines.append(f"| {row.id} | {row.category}: {CATEGORIES[row.category]} | {row.wording} | {lab} |")
    return "\n".join(lines) + "\n"
