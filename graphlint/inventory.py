"""The inventory's data: what the probes observed, per device, as plain JSON-able records.

A :class:`DeviceResult` is everything observed on one device; per-GPU worker processes and
torchrun ranks ship it as JSON, and the inventory report and the gate read nothing else. Here,
beside :mod:`graphlint.finding`, because both the dynamic half that fills it and the reports and
gate that read it use it: it is findings, not analysis. Torch-free.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from graphlint.finding import Finding

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
    ran: list[str] = field(default_factory=list)  # "path:first-last" of the target's functions a step ran

    def outcome(self, probe: str) -> ProbeOutcome | None:
        return next((p for p in self.probes if p.probe == probe), None)

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


def captured_count(capture: dict[str, dict[str, str]]) -> tuple[int, int, int]:
    """(regions captured, of which went stale, capturable regions) of a capture matrix column: the
    one count the capture probe's line, the summary and capture-test all print. A region that went
    stale was captured (and then ran eagerly once Python rebound a buffer its graph reads)."""
    statuses = [cell["status"] for cell in capture.values() if cell["status"] != EAGER]
    stale = statuses.count(STALE)
    return statuses.count(CAPTURED) + stale, stale, len(statuses)
