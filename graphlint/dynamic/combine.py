"""One device's result from its phases, and the one merge of findings.

The tracer, the graph worker (capture, replay, soak) and the compile probe each observe one
device in a process of their own; :func:`combine` makes their results one
:class:`~graphlint.inventory.DeviceResult` (where a replay mismatch located only at its region meets
the tracer's growing state: :func:`~graphlint.dynamic.verdicts.pin_mismatch_on_growth`), and :func:`merge_findings` is the only place where
findings of several probes become one finding per line.
"""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.dynamic.verdicts import pin_mismatch_on_growth
from graphlint.inventory import FAILED, DeviceResult, ProbeOutcome


def combine(parts: list[DeviceResult]) -> DeviceResult:
    """The results of several phases on one device as one; the first part is updated and returned."""
    first = parts[0]
    for other in parts[1:]:
        first.findings = [*first.findings, *other.findings]
        first.probes += other.probes
        first.capture.update(other.capture)
        first.timing.update(other.timing)
        first.soak.update(other.soak)
        first.regions = first.regions or other.regions
        first.entries = first.entries or other.entries
        first.sources = first.sources or other.sources
        first.modules = sorted(set(first.modules) | set(other.modules))
        first.ran = list(dict.fromkeys([*first.ran, *other.ran]))
        first.records.update(other.records)
        first.seconds.update(other.seconds)
        first.meta.update(other.meta)
    first.findings = merge_findings(pin_mismatch_on_growth(first.findings))
    return first


def note_replay_and_soak(result: DeviceResult, suffix: str) -> None:
    """Append ``suffix`` to the replay and soak lines: how the figures were measured."""
    result.probes = [ProbeOutcome(p.probe, p.status, p.detail + suffix) if p.probe in ("replay", "soak") else p
                     for p in result.probes]


def caveat_failed_captures(result: DeviceResult) -> DeviceResult:
    """Where replay and soak cannot be re-measured in a fresh process (a torchrun rank, whose step
    talks to the other ranks; a factory callable run in the test process), say that they ran in
    the process that held the failed captures (see :mod:`graphlint.dynamic.run`)."""
    failed = sum(cell["status"] == FAILED for cell in result.capture.values())
    if failed:
        note_replay_and_soak(result, f"; measured in the process that held {failed} failed capture(s), which can "
                             "leave state behind; fix those first, then re-run")
    return result


_GENERIC = {"GL190"}  # sync-debug's generic "a sync happened": folds into a precise finding


def merge_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per (rule, path, line, device), with the evidence of every probe that saw it.

    A generic host sync (GL190 seen by sync-debug alone) at a line where another probe names
    the sync precisely (a D2H copy, a pageable H2D copy) folds into that precise finding.
    """
    merged: dict[tuple, Finding] = {}
    for f in findings:
        key = (f.rule, f.path, f.line, f.device)
        old = merged.get(key)
        merged[key] = f if old is None else old.with_(
            evidence=tuple(dict.fromkeys(old.evidence + f.evidence)), region=old.region or f.region
        )
    precise = {(f.path, f.line, f.device): key for key, f in merged.items() if f.rule not in _GENERIC}
    for key, f in list(merged.items()):
        target = precise.get((f.path, f.line, f.device))
        if f.rule in _GENERIC and target and all(e.startswith("sync-debug") for e in f.evidence):
            host = merged[target]
            merged[target] = host.with_(evidence=tuple(dict.fromkeys(host.evidence + f.evidence)))
            del merged[key]
    return sorted(merged.values(), key=Finding.sort_key)
