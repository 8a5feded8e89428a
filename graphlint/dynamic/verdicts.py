"""From what the graph probe observed to findings: pure functions over its records.

The probe (:mod:`graphlint.dynamic.graph_probe`) records captures, per-step output differences,
inputs rebound after capture (:class:`~graphlint.dynamic.addresses.Moved`) and kernels that ran
during a capture (:class:`~graphlint.dynamic.launches.Escape`); these functions decide what each
means and where to point. A replay mismatch is pinned, in order of evidence, on the launch lines
of kernels that escaped a capture, on the lines whose Python arguments change from step to step
(frozen into the graph), and only then on the region as a whole.
"""

from __future__ import annotations

from graphlint.dynamic.frames import UserFrame
from graphlint.finding import Finding
from graphlint.inventory import CAPTURED, EMPTY, STALE, DeviceResult, ProbeOutcome
from graphlint.rules import Rule, observation_codes

MISMATCHES = ("GL391", "GL392")
GROWING = "GL394"  # the tracer's growing-state-tensor
REGION_ONLY = "no escaped kernel, rebound buffer or step-varying Python value found (located at the region, not the line)"


def make_finding(rule: Rule, where, *, device: str, region: str, evidence: str, detail: str = "",
                 count: int = 1) -> Finding:
    """A dynamic Finding for ``rule`` at a :class:`~graphlint.dynamic.frames.UserFrame`."""
    return Finding.from_rule(
        rule, where.path if where else "<unknown>", where.line if where else 0,
        message=rule.message + (f": {detail}" if detail else ""), chain=where.chain if where else (),
        evidence=(evidence,), source="dynamic", function=where.function if where else "",
        line_text=_line_text(where), device=device, region=region, count=count,
    )


def _line_text(where) -> str:
    if where is None or where.line <= 0:
        return ""
    try:
        with open(where.path, encoding="utf-8") as fh:
            for number, text in enumerate(fh, 1):
                if number == where.line:
                    return text.strip()
    except OSError:
        pass
    return ""


def finding(rules, observation: str, where: UserFrame | None, label: str, region: str, evidence: str, detail: str,
            kernel: str = ""):
    """A finding of the graph probe (always about captured code), by the rule that reports ``observation``."""
    rule = rules[observation_codes(rules.values())[observation]]
    f = make_finding(rule, where, device=label, region=region, evidence=evidence, detail=detail)
    return f.with_(in_graph=True, kernel=kernel)


def escape_findings(rules, label: str, escapes) -> list:
    """GL593 at the launch line of every kernel that ran during a capture."""
    out = []
    for e in escapes:
        where = UserFrame(e.path, e.line, e.function) if e.line else None
        times = f" ({e.count}x)" if e.count > 1 else ""
        out.append(finding(rules, "kernel-outside-capture", where, label, e.region, "capture:profiler",
                           f"`{short_kernel(e.kernel)}`{times} ran on the device while `{e.region}` was being "
                           "captured, so it is not in the graph and no replay runs it", kernel=e.kernel))
    return out


def moved_findings(rules, label: str, moved) -> list:
    """GL292 at the line that rebound a buffer a graph reads."""
    return [finding(rules, "rebound-input", m.where, label, m.region, "replay:data_ptr",
                    f"`{m.name}` is read by the graph of `{m.region}` ({m.before}), but {m.rebound_by} rebound it at "
                    f"step {m.step} ({m.after}): the graph keeps reading the old tensor; `{m.region}` ran eagerly "
                    "from then on") for m in moved]


def short_kernel(name: str, limit: int = 80) -> str:
    name = name.split("(")[0]
    return name if len(name) <= limit else name[: limit - 3] + "..."


def mismatch_findings(rules, observation: str, label: str, evidence: str, detail: str, *, frozen, escapes,
                      capture: dict, region_frames: dict[str, UserFrame | None]) -> list:
    """Point a step-level mismatch at the lines that explain it (see the module doc).
    ``region_frames``: each region's function, in step order (the fallback location)."""
    replayed = {name for name, cell in capture.items() if cell["status"] in (CAPTURED, EMPTY, STALE)}
    out = []
    for e in (e for e in escapes if e.region in replayed and e.line):
        out.append(finding(rules, observation, UserFrame(e.path, e.line, e.function), label, e.region,
                           f"{evidence}:kernel-outside-capture",
                           f"{detail}; `{short_kernel(e.kernel)}` ran at capture time instead of in the graph"))
    for f in (f for f in frozen if f.region in replayed):
        out.append(finding(rules, observation, UserFrame(f.path, f.line, f.function, f.chain), label, f.region,
                           f"{evidence}:frozen-python-value", f"{detail}; {f.message.split(': ', 1)[-1]}"))
    if out:
        return out
    suspects = ([n for n in region_frames if capture.get(n, {}).get("status") == EMPTY]
                or [n for n in region_frames if n in replayed][:1])
    return [finding(rules, observation, region_frames[n], label, n, evidence,
                    f"{detail}; {REGION_ONLY}") for n in suspects]


def pin_mismatch_on_growth(findings: list[Finding]) -> list[Finding]:
    """A replay mismatch the graph probe could locate only at its region, pinned on the line whose kept
    state grows every step (the tracer's GL394 in that region), when there is one.

    A graph replays the tensors of the step it was captured at: a cache that replaces its tensors by
    longer ones every step (``self.keys = torch.cat([self.keys, k])``) replays stale, and that line,
    in the model's own cache, is what to fix, not the target's step function the region fell back on
    (MiniMax's ``MiniMaxCache`` in the transformers zoo). The tracer runs in a process of its own, so
    only the combined result sees both; idempotent (a pinned mismatch no longer says REGION_ONLY). The
    message leads with "not capturable as is": a zoo row keeps the first 300 characters."""
    growing = [f for f in findings if f.rule == GROWING and f.line > 0]
    if not growing:
        return findings
    out = []
    for f in findings:
        g = next((g for g in growing if g.device == f.device and (not f.region or f.region in (g.region, *g.regions))),
                 None) if f.rule in MISMATCHES and REGION_ONLY in f.message else None
        if g is not None:
            grows = g.message.split(": ", 1)[-1]
            f = f.with_(path=g.path, line=g.line, function=g.function, line_text=g.line_text, chain=g.chain,
                        message=f.message.replace(REGION_ONLY, "not capturable as is: its own state grows every "
                                                  f"step ({grows})"))
        out.append(f)
    return out


def settle_graph_allocations(result: DeviceResult) -> DeviceResult:
    """Drop GL290 (a factory allocation every step) in regions whose capture succeeded and whose
    replay matches eager on this device: the graph allocated once, at capture, from its private pool,
    and a replay allocates nothing, so there is no per-step cost to report (the static half keeps
    GL201-GL203 silent inside captured graphs too). In a region that runs eagerly -- deliberately,
    after a failed capture, or once its graph went stale -- the allocation stays GL290. The tracer
    runs in a process of its own and cannot know this; the merged result can."""
    replay = result.outcome("replay")
    if replay is None or replay.status != "ran" or any(f.rule in MISMATCHES for f in result.findings):
        return result
    graphs = {name for name, cell in result.capture.items() if cell["status"] == CAPTURED}
    dropped = [f for f in result.findings if f.rule == "GL290"
               and set(f.regions or (f.region,)) <= graphs]  # each region it ran in
    if not dropped:
        return result
    result.findings = [f for f in result.findings if f not in dropped]
    note = (f"; {len(dropped)} factory allocation(s) inside graphs that replay correctly not reported "
            "(allocated once at capture, from the graph's pool)")
    result.probes = [ProbeOutcome(p.probe, p.status, p.detail + note, p.where) if p.probe == "tracer" else p
                     for p in result.probes]
    return result
