"""What the probes hand to the report: plain, JSON-able, torch-free data.

A :class:`DeviceResult` is everything observed on one device; per-GPU worker processes and
torchrun ranks ship it as JSON, and the inventory report reads nothing else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from graphlint.finding import Finding
from graphlint.rules import BUILTIN_PACK_DIR, Rule, load_pack

PROBES: tuple[str, ...] = ("tracer", "sync-debug", "capture", "replay", "soak")

# Capture matrix cell values.
CAPTURED, FAILED, EMPTY, EAGER, NOT_RUN = "captured", "failed", "empty", "eager", "not run"
STALE = "stale"  # captured, but Python rebound a buffer it reads: not replayed after that (GL292)


@dataclass
class ProbeOutcome:
    """Did a probe run, and did it observe what it claims? ``status`` is ``ran`` (it
    observed the step; its findings are complete for that step), ``skipped`` (it could not
    run here; ``detail`` says why) or ``error`` (it crashed; ``detail`` has the error)."""

    probe: str
    status: str
    detail: str = ""
    where: str = ""  # a crash: the innermost project frame, "path:line"


@dataclass
class DeviceResult:
    device: str
    findings: list[Finding] = field(default_factory=list)
    probes: list[ProbeOutcome] = field(default_factory=list)
    capture: dict[str, dict[str, str]] = field(default_factory=dict)  # region -> {status, detail}
    timing: dict[str, float] = field(default_factory=dict)  # eager_s, graph_s per step
    soak: dict[str, Any] = field(default_factory=dict)
    regions: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # "path:Qual.name" per region, for the static cross-check
    sources: list[str] = field(default_factory=list)  # files defining the regions (closures too)
    meta: dict[str, str] = field(default_factory=dict)  # torch version, GPU name, rank
    modules: list[str] = field(default_factory=list)  # the target's own source files, for the static cross-check
    records: dict[str, Any] = field(default_factory=dict)  # raw observations a later step analyses (soak series)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per phase/probe, for the timing lines

    def outcome(self, probe: str) -> ProbeOutcome | None:
        return next((p for p in self.probes if p.probe == probe), None)

    def merge(self, other: "DeviceResult") -> "DeviceResult":
        """Combine the results of two phases (tracer process, graph process) on one device."""
        self.findings = merge_findings([*self.findings, *other.findings])
        self.probes += other.probes
        self.capture.update(other.capture)
        self.timing.update(other.timing)
        self.soak.update(other.soak)
        self.regions = self.regions or other.regions
        self.entries = self.entries or other.entries
        self.sources = self.sources or other.sources
        self.modules = sorted(set(self.modules) | set(other.modules))
        self.records.update(other.records)
        self.seconds.update(other.seconds)
        self.meta.update(other.meta)
        return self

    def note_replay_and_soak(self, suffix: str) -> None:
        """Append ``suffix`` to the replay and soak lines: how the figures were measured."""
        self.probes = [ProbeOutcome(p.probe, p.status, p.detail + suffix) if p.probe in ("replay", "soak") else p
                       for p in self.probes]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [f.to_dict() for f in self.findings]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DeviceResult":
        data = dict(data)
        data["findings"] = [Finding.from_dict(f) for f in data.get("findings", [])]
        data["probes"] = [ProbeOutcome(**p) for p in data.get("probes", [])]
        return cls(**data)


def caveat_failed_captures(result: DeviceResult) -> DeviceResult:
    """Where replay and soak cannot be re-measured in a fresh process (a torchrun rank, whose step
    talks to the other ranks; a factory callable run in the test process), say that they ran in
    the process that held the failed captures (see :mod:`graphlint.dynamic.run`)."""
    failed = sum(cell["status"] == FAILED for cell in result.capture.values())
    if failed:
        result.note_replay_and_soak(f"; measured in the process that held {failed} failed capture(s), which can "
                                    "leave state behind; fix those first, then re-run")
    return result


def captured_count(capture: dict[str, dict[str, str]]) -> tuple[int, int, int]:
    """(regions captured, of which went stale, capturable regions) of a capture matrix column: the
    one count the capture probe's line, the summary and capture-test all print. A region that went
    stale was captured (and then ran eagerly once Python rebound a buffer its graph reads)."""
    statuses = [cell["status"] for cell in capture.values() if cell["status"] != EAGER]
    stale = statuses.count(STALE)
    return statuses.count(CAPTURED) + stale, stale, len(statuses)


def runtime_rules() -> dict[str, Rule]:
    """The rules the probes report: the runtime pack alone, so that the dynamic half does not
    depend on the static packs (``graphlint check`` validates all packs together)."""
    return {rule.code: rule for rule in load_pack(BUILTIN_PACK_DIR / "runtime.yaml")}


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


@dataclass
class Inventory:
    """One inventory run: what was probed, where, with what, and what each device showed."""

    target: str
    command: str
    date: str
    torch: str
    cuda: bool
    devices: list[DeviceResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        return sorted((f for d in self.devices for f in d.findings), key=Finding.sort_key)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["devices"] = [d.to_dict() for d in self.devices]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Inventory":
        data = dict(data)
        data["devices"] = [DeviceResult.from_dict(d) for d in data.get("devices", [])]
        return cls(**data)

