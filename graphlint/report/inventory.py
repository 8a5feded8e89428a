"""The inventory report: markdown shaped like the seed's hand-written inventory, or JSON.

Summary first (where capture works, eager vs graph s/token), then one table per category
with the evidence (which probe saw it) and a status, the per-GPU x per-region capture
matrix, the soak figures, and what the static half flags that no probe saw. A dynamic-only
finding is a static miss and is marked as such. Torch-free: it renders plain data.
"""

from __future__ import annotations

import json
from collections import defaultdict

from graphlint.crossref import CONFIRMED, DYNAMIC_ONLY, CrossRef
from graphlint.finding import Finding
from graphlint.inventory import CAPTURED, EAGER, EMPTY, FAILED, NOT_RUN, DeviceResult, Inventory, captured_count
from graphlint.report.markdown import md_cell
from graphlint.report.plots import Pictures
from graphlint.rules import CATEGORIES

_CELL = {"captured": "✅ captured", "failed": "❌ failed", "empty": "❌ empty graph", "eager": "— eager",
         "not run": "⏸ not run", "stale": "❌ stale input"}


def status_of(f: Finding) -> str:
    if f.in_graph is False:
        return "eager region (outside the graphs)"
    if f.severity == "error":
        return "breaks capture or replay"
    if f.category == "allocation":
        return "capturable, but costs every step"
    return f"captured here, unsafe elsewhere (`graphlint explain {f.rule}`)"


def speedup(result: DeviceResult) -> tuple[float | None, str]:
    """(eager s/token / graph s/token, a note), or (None, why no figure is given). A figure needs a
    region that replayed as a graph to the end; without one the "graph" instance ran eagerly, and
    its ratio to eager is noise, not a speedup."""
    timing = result.timing
    if not (timing.get("eager_s") and timing.get("graph_s")):
        return None, ""
    captured, stale, graphs = captured_count(result.capture)
    replayed = captured - stale
    if not replayed:
        failed = sum(cell["status"] in (FAILED, EMPTY, NOT_RUN) for cell in result.capture.values())
        why = ", ".join(part for part in (f"{stale} went stale" if stale else "", f"{failed} did not capture"
                                          if failed else "") if part)
        return None, f"no speedup: no region replayed as a graph ({why or 'none captured'}), so both instances ran eagerly"
    note = f" ({replayed} of {graphs} capturable regions replayed as graphs)" if replayed < graphs else ""
    return timing["eager_s"] / timing["graph_s"], note


def tested(inv) -> str:
    """What the run can claim about capture: only probes that finished count as tested."""
    if not inv.cuda:
        return "capture skipped (no CUDA device; tracer only)"
    unfinished = [f"{p.probe} {p.status} on {d.device}" for d in inv.devices for p in d.probes
                  if p.probe in ("capture", "replay", "soak") and p.status != "ran"]
    return "capture tested" if not unfinished else "capture NOT fully tested: " + ", ".join(unfinished)


def written_line(path: str, inv: Inventory, failed: list[str]) -> str:
    """What the terminal says when the report went to a file. ``failed`` is the gate's reasons
    (``gate.capture_failures``): regions that did not capture or went stale, probes that crashed
    (a target that does not build crashes every probe: its error is quoted, so the terminal says
    why without opening the report), and failing findings, each counted apart from the findings."""
    errors = [line for line in failed if ": probe error " in line]
    regions = [line for line in failed if ": capture " in line and line not in errors]
    failing = len(failed) - len(errors) - len(regions)
    parts = [f"{failing} failing finding(s)" if failing else "",
             f"{len(regions)} region(s) not captured or stale" if regions else "",
             f"{len(errors)} probe error(s): {errors[0].split(': probe error ', 1)[1][:200]}" if errors else ""]
    gate = "the gate fails: " + ", ".join(p for p in parts if p) if failed else "the gate passes"
    return f"graphlint: wrote {path}: {len(inv.findings())} finding(s); {gate}; {tested(inv)}"


def _rows(inv: Inventory) -> list[tuple[Finding, list[str]]]:
    """One row per (rule, path, line) with the devices that saw it."""
    rows: dict[tuple, tuple[Finding, list[str]]] = {}
    for f in inv.findings():
        key = (f.rule, f.path, f.line)
        if key in rows:
            rows[key][1].append(f.device)
        else:
            rows[key] = (f, [f.device])
    return list(rows.values())


def _summary(inv: Inventory, xref: CrossRef) -> list[str]:
    out = ["## Summary", ""]
    if not inv.cuda:
        out.append("**Capture skipped: no CUDA device.** Only the tracer ran, on the CPU; capture, replay and "
                   "soak did not run, so nothing here says the step captures.")
    for dev in inv.devices:
        cells = dev.capture
        captured, stale, graphs = captured_count(cells)
        replay = dev.outcome("replay")
        if graphs:
            clean = sum(c["status"] == CAPTURED for c in cells.values())
            verdict = ("works" if clean == graphs and replay and replay.status == "ran" and "identical" in replay.detail
                       else "does NOT work")
            line = f"- **{dev.device}**: capture {verdict}: {captured}/{graphs} capturable regions captured"
            line += (f" ({stale} went stale: Python rebound a buffer the graph reads, so they ran eagerly from then "
                     "on)" if stale else "")
            line += f"; replay: {replay.detail}" if replay else ""
        else:
            probe = dev.outcome("capture")
            line = f"- **{dev.device}**: capture not run" + (f" ({probe.detail})" if probe else "")
        out.append(line)
        t, (ratio, note) = dev.timing, speedup(dev)
        if ratio is not None:
            out.append(f"  - decode: eager {t['eager_s']:.4g} s/token, graph {t['graph_s']:.4g} s/token "
                       f"(speedup {ratio:.2f}x){note}")
        elif note:
            out.append(f"  - decode: eager {t['eager_s']:.4g} s/token; {note}")
    counts = defaultdict(int)
    for f, _devs in _rows(inv):
        counts[f.category] += 1
    misses = sum(1 for f, _ in _rows(inv) if xref.of(f) == DYNAMIC_ONLY)
    out += ["", f"Findings: {sum(counts.values())} ("
            + ", ".join(f"{c} {counts[c]}" for c in CATEGORIES if counts[c]) + ")" if counts else "Findings: none.", ""]
    out.append(f"Static cross-reference: {xref.detail}." + (f" **{misses} dynamic-only finding(s): static misses.**"
                                                           if xref.ran and misses else ""))
    out += ["", "### Probes", "", "| Device | Probe | Status | Detail |", "|---|---|---|---|"]
    for dev in inv.devices:
        for p in dev.probes:
            where = f" (`{p.where}`)" if p.where and p.where not in p.detail else ""
            out.append(f"| {dev.device} | {p.probe} | {p.status} | {md_cell(p.detail)}{where} |")
    return out + [""] + _timing(inv)


def _timing(inv: Inventory) -> list[str]:
    """One line per probe and worker phase: where the run's time went (workers run in parallel)."""
    timed = [d for d in inv.devices if d.seconds]
    if not timed:
        return []
    out = ["### Timing (seconds; the tracer, graph and eager-reference workers of a device run in parallel)", "",
           "| Device | Phase | Seconds |", "|---|---|---|"]
    for dev in timed:
        out += [f"| {dev.device} | {phase} | {seconds:.2f} |" for phase, seconds in dev.seconds.items()]
    return out + [""]


def _category_tables(inv: Inventory, xref: CrossRef) -> list[str]:
    out = []
    rows = _rows(inv)
    for number, category in enumerate(CATEGORIES, 1):
        mine = [(f, d) for f, d in rows if f.category == category]
        out += [f"## CATEGORY {number}: {category} ({len(mine)})", ""]
        if not mine:
            out += ["None observed.", ""]
            continue
        out += ["| File | Line | Issue | Evidence (probe) | Devices | Region | Status | Static |",
                "|---|---|---|---|---|---|---|---|"]
        for f, devices in mine:
            static = xref.of(f) if xref.ran else "not checked"
            if static == DYNAMIC_ONLY:
                static = f"**⚠ {static}**"
            elif static == CONFIRMED:
                static = f"✅ {static} ({', '.join(xref.rules_at(f))})"
            out.append(f"| `{f.path}` | {f.line} | {f.rule} {md_cell(f.message)} | {md_cell(', '.join(f.evidence))} | "
                       f"{', '.join(dict.fromkeys(devices))} | {f.region} | {status_of(f)} | {static} |")
        out.append("")
    return out


def _matrix(inv: Inventory) -> list[str]:
    regions = list(dict.fromkeys(r for d in inv.devices for r in (d.regions or d.capture)))
    out = ["## Capture matrix (device x region)", ""]
    if not any(d.capture for d in inv.devices):
        return out + ["Not run: " + ("no CUDA device." if not inv.cuda else "the capture probe did not run."), ""]
    out += ["| Region | " + " | ".join(d.device for d in inv.devices) + " |",
            "|---|" + "---|" * len(inv.devices)]
    for region in regions:
        cells = [_CELL.get(d.capture.get(region, {}).get("status", "not run"), "?") for d in inv.devices]
        out.append(f"| {region} | " + " | ".join(cells) + " |")
    details = [(d.device, r, c["detail"]) for d in inv.devices for r, c in d.capture.items()
               if c.get("detail") and c["status"] != EAGER]
    if details:
        out += ["", "Capture details:", ""] + [f"- {dev} `{r}`: {md_cell(text)}" for dev, r, text in details]
    return out + [""]


def _soak(inv: Inventory, pictures: Pictures | None = None) -> list[str]:
    out = ["## Soak (graph vs eager over many steps)", ""]
    soaked = [d for d in inv.devices if d.soak]
    if not soaked:
        why = [f"{d.device}: {p.detail}" for d in inv.devices if (p := d.outcome("soak")) and p.status != "ran"]
        return out + ["Not run" + (": " + "; ".join(why) if why else " (--no-soak; capture-test soaks only with --soak).") + "", ""]
    return out + _soak_table(soaked) + _pictures(pictures, "memory", "diff") + _regions(soaked) \
        + _pictures(pictures, "regions") + ([f"_{pictures.note}_", ""] if pictures and pictures.note else [])


def _pictures(pictures: Pictures | None, *keys: str) -> list[str]:
    out = []
    for key in keys:
        picture = pictures.get(key) if pictures else None
        if picture is not None:
            out += [f"![{picture.caption}]({picture.file})", "", f"_{picture.caption}_", ""]
    return out


def _regions(soaked: list[DeviceResult]) -> list[str]:
    """Median s/token per region, eager instance against graph instance (the soak's region clock)."""
    rows = [(d.device, name, t) for d in soaked for name, t in (d.soak.get("regions") or {}).items()]
    if not rows:
        return []
    out = ["### Time per region (median s/token over the soak)", "",
           "| Device | Region | Eager s/token | Graph s/token | Speedup |", "|---|---|---|---|---|"]
    for device, name, t in rows:
        eager, graph = t.get("eager_s"), t.get("graph_s")
        ratio = f"{eager / graph:.2f}x" if eager and graph else "—"
        out.append(f"| {device} | {name} | {_per_step(eager or 0.0)} | {_per_step(graph or 0.0)} | {ratio} |")
    return out + [""]


def _soak_table(soaked: list[DeviceResult]) -> list[str]:
    out = []
    out += ["| Device | Steps | Graph live bytes/step | Eager live bytes/step | Allocations/step (graph) | "
            "max diff, first quarter | max diff, last quarter | First mismatch | Graph s/token | Eager s/token |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for d in soaked:
        s = d.soak
        out.append(f"| {d.device} | {s['steps']} | {s['graph_bytes_per_step']:.0f} | {s['eager_bytes_per_step']:.0f} | "
                   f"{s['graph_allocations_per_step']:.0f} | {s['max_diff_first_quarter']:.3g} | "
                   f"{s['max_diff_last_quarter']:.3g} | {s['first_mismatch_step'] or 'none'} | "
                   f"{_per_step(s['graph_s_per_step'])} | {_per_step(s['eager_s_per_step'])} |")
    return out + [""]


def _per_step(seconds: float) -> str:
    return f"{seconds:.4g}" if seconds else "— (no step)"


def _static_only(xref: CrossRef) -> list[str]:
    if not xref.ran:
        return []
    out = [f"## Static only: flagged by `graphlint check`, not seen at runtime ({len(xref.static_only)})", ""]
    if not xref.static_only:
        return out + ["None.", ""]
    out += ["| File | Line | Issue |", "|---|---|---|"]
    out += [f"| `{f.path}` | {f.line} | {f.rule} {md_cell(f.message)} |" for f in xref.static_only]
    return out + [""]


def _compile(inv: Inventory, xref: CrossRef) -> list[str]:
    """torch.compile's answer beside graphlint's, line by line (``--probe compile``)."""
    events = [(d, e) for d in inv.devices for e in d.records.get("compile", [])]
    if not any("compile" in d.records for d in inv.devices):
        return []
    out = ["## torch.compile (mode=\"reduce-overhead\"), side by side", ""]
    if not events:
        return out + ["No graph break, recompile or cudagraph skip.", ""]
    ours: dict[tuple[str, int], list[str]] = {}
    for f in inv.findings():
        ours.setdefault((f.path, f.line), []).append(f.rule)
    out += ["| Device | Region | torch.compile | Reason | Where | graphlint at that line |", "|---|---|---|---|---|---|"]
    for dev, e in events:
        at = (e["path"], e["line"])
        rules = list(dict.fromkeys(ours.get(at, []) + xref.static_rules.get(at, [])))
        where = f"`{e['path']}:{e['line']}`" if e["line"] else ""
        mine = ", ".join(rules) if rules else ("nothing (a line graphlint does not flag)" if e["line"] else "")
        out.append(f"| {dev.device} | {e['region']} | {e['kind']} | {md_cell(e['reason'])} | {where} | {mine} |")
    return out + [""]


def render_markdown(inv: Inventory, xref: CrossRef, pictures: Pictures | None = None) -> str:
    """``pictures``: drawn next to the report file (:mod:`graphlint.report.plots`), embedded in the soak."""
    gpus = sorted({d.meta.get("gpu", "") for d in inv.devices} - {""})
    head = ["# CUDA Graph Readiness — Inventory", "",
            f"Date: {inv.date}  ", f"Target: `{inv.target}`  ", f"Command: `{inv.command}`  ",
            f"torch {inv.torch}; devices: {', '.join(d.device for d in inv.devices)}"
            + (f" ({', '.join(gpus)})" if gpus else ""), ""]
    notes = [f"> {n}" for n in inv.notes] + ([""] if inv.notes else [])
    body = (_summary(inv, xref) + _category_tables(inv, xref) + _matrix(inv) + _soak(inv, pictures)
            + _compile(inv, xref) + _static_only(xref))
    return "\n".join(head + notes + body).rstrip() + "\n"


def render_json(inv: Inventory, xref: CrossRef) -> str:
    data = inv.to_dict()
    for dev in data["devices"]:
        for f in dev["findings"]:
            f["static"] = xref.status.get((f["path"], f["line"], f["category"]), "")
            f["static_rules"] = xref.static_rules.get((f["path"], f["line"]), [])
    data["cross_reference"] = {"ran": xref.ran, "detail": xref.detail,
                               "static_only": [f.to_dict() for f in xref.static_only]}
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
