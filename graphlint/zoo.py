"""What a zoo run says: one row per architecture, its first blocker, and the static half judged.

Input: the :class:`graphlint.dynamic.zoo.ArchRun` records (each an inventory of one architecture
plus the library functions its step ran). Output: :class:`Row` per architecture and
:func:`score`, the static half's precision and recall against the probes over the whole zoo. Torch
free, like the cross-reference it calls; the reports render rows, they decide nothing.

**The first blocker** is the one thing to fix first, in this order: the architecture did not run
(crashed, timed out, not run, its target not built: a row with the error and where), a capture
that failed (its GL590 at the line that failed), a replay that differed from eager (GL391/GL392
at the line it is pinned on), then any other error-severity finding (the tracer's: a host sync, a
growing cache, a Python value frozen into the graph), then a probe that crashed. On a CPU run
(tracer only) the capture columns say "skipped" and the blocker is the tracer's.

**Cross-reference into library files.** The inventory's own cross-reference checks only the
target's project; a zoo's findings point into transformers. Here the static half runs on exactly
the blamed files and the model's own modeling file, with the functions the step ran there as
entries (:func:`graphlint.crossref.cross_reference` with ``library_files``); summaries are cached
across architectures, which share most of transformers' files.

**Scores.** Over every architecture that ran: a *dynamic line* is a (file, line) an error-severity
probe finding blames; a *static line* is a (file, line) the static half flags (error severity) in
the files it checked. Recall = dynamic lines the static half also flags / dynamic lines; precision
= static lines the probes also blame / static lines. Lines are counted once across the zoo (most
architectures share ``masking_utils.py``). The GPU is the judge: on a CPU run the probes see less
(no capture, no syncs), so CPU figures are a floor for recall and say little about precision.
"""

from __future__ import annotations

import functools
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphlint.crossref import CONFIRMED, DYNAMIC_ONLY, CrossRef, cross_reference
from graphlint.dynamic.verdicts import pin_mismatch_on_growth
from graphlint.finding import Finding
from graphlint.inventory import FAILED, DeviceResult, Inventory

_ORDER = ("GL590", "GL591", "GL593", "GL391", "GL392", "GL292", "GL394", "GL393", "GL190", "GL191", "GL192",
          "GL390", "GL291")


@dataclass
class Blocker:
    kind: str  # "capture", "replay", "finding", "build", "crash", "timed out", "not run"
    rule: str = ""
    path: str = ""  # as the run saw it (absolute for an installed library)
    line: int = 0
    reason: str = ""  # one line
    function: str = ""
    line_text: str = ""

    @property
    def where(self) -> str:
        return f"{short(self.path)}:{self.line}" if self.path and self.line else short(self.path)

    @property
    def key(self) -> str:
        """What makes two blockers the same: rule and line, else the kind and the start of the reason."""
        return f"{self.rule} {self.where}" if self.rule and self.line else f"{self.kind}: {self.reason[:80]}"


@dataclass
class Row:
    arch: str
    status: str  # the run: done, crashed, timed out, not run
    verdict: str  # one phrase: "captures, replays like eager", "capture fails", ...
    config: str = ""
    cache: str = ""
    captures: str = ""  # "yes", "no", "skipped (no CUDA)", "" when it never got there
    replay: str = ""
    eager_s: float | None = None
    graph_s: float | None = None
    blocker: Blocker | None = None
    static: str = ""  # the cross-reference's verdict on the blocker's line
    xref: str = ""  # what the cross-reference checked, or why it did not run
    findings: list[dict[str, Any]] = field(default_factory=list)  # rule, path, line, severity, bucket
    static_only: list[dict[str, Any]] = field(default_factory=list)  # rule, path, line
    seconds: float = 0.0
    command: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["blocker"] = {**asdict(self.blocker), "where": self.blocker.where} if self.blocker else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Row":
        data = dict(data)
        blocker = data.pop("blocker", None)
        if blocker:
            blocker = Blocker(**{k: v for k, v in blocker.items() if k != "where"})
        return cls(**data, blocker=blocker)


def short(path: str) -> str:
    """``transformers/masking_utils.py`` for a file of an installed library; other paths as they are."""
    parts = Path(path).parts
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return "/".join(parts[i + 1:])
    return path


def rerun_command(arch: str, options: dict[str, Any], cpu: bool) -> str:
    """The one inventory this row came from, as a command."""
    opts = " ".join(f"--option {shlex.quote(f'{k}={v}')}" for k, v in {"arch": arch, **options}.items())
    return f"graphlint inventory --target graphlint.targets.hf:make_target {opts}" + (" --cpu" if cpu else "")


def device_of(run: dict[str, Any]) -> tuple[Inventory | None, DeviceResult | None]:
    data = (run.get("result") or {}).get("inventory")
    if not data:
        return None, None
    inv = Inventory.from_dict(data)
    dev = inv.devices[0] if inv.devices else None
    if dev is not None:  # a run recorded before the combined result pinned it (idempotent)
        dev.findings = pin_mismatch_on_growth(dev.findings)
    return inv, dev


def first_blocker(run: dict[str, Any]) -> Blocker | None:
    """See the module doc for the order."""
    if run["status"] != "done":
        return Blocker(run["status"], reason=run.get("detail", ""))
    inv, dev = device_of(run)
    if dev is None:
        return Blocker("crash", reason="the arch process wrote no inventory")
    refused = dev.meta.get("target_error") or next(
        (p.detail for p in dev.probes if p.status == "error" and p.detail.startswith("TargetError")), "")
    # a probe that failed before any region existed failed to build the target (or its first step)
    if refused or (not dev.regions and any(p.status == "error" for p in dev.probes)):
        probe = next(p for p in dev.probes if p.status == "error") if dev.probes else None
        where = (probe.where if probe else "").rpartition(":")
        return Blocker("build", path=where[0], line=int(where[2]) if where[2].isdigit() else 0,
                       reason=(refused or (probe.detail if probe else ""))[:300])
    errors = sorted((f for f in dev.findings if f.severity == "error" and not f.suppressed),
                    key=lambda f: (_ORDER.index(f.rule) if f.rule in _ORDER else len(_ORDER), f.line <= 0, f.path, f.line))
    failed = [name for name, cell in dev.capture.items() if cell["status"] == FAILED]
    if failed:
        gl590 = next((f for f in errors if f.rule == "GL590" and f.region in failed), None)
        if gl590 is not None:
            return _from(gl590, "capture")
        return Blocker("capture", reason=dev.capture[failed[0]].get("detail", "")[:300])
    for kind, rules in (("replay", ("GL391", "GL392", "GL292")), ("finding", None)):
        chosen = next((f for f in errors if rules is None or f.rule in rules), None)
        if chosen is not None:
            return _from(chosen, kind)
    crash = next((p for p in dev.probes if p.status == "error"), None)
    if crash is not None:
        where = crash.where.rpartition(":")
        return Blocker("crash", path=where[0], line=int(where[2]) if where[2].isdigit() else 0,
                       reason=f"{crash.probe}: {crash.detail}"[:300])
    return None


def _from(f: Finding, kind: str) -> Blocker:
    """The rule's message and the probe's detail: "a Python value that changes every step is passed to
    an op ...: aten.add.Tensor got 1 at step 1 and 2 at step 2"."""
    return Blocker(kind, f.rule, f.path, f.line, " ".join(f.message.split())[:300], f.function, f.line_text)


def _verdict(run: dict, dev: DeviceResult | None, blocker: Blocker | None, cuda: bool) -> tuple[str, str, str]:
    """(verdict, captures, replay)."""
    if run["status"] != "done":
        return run["status"], "", ""
    if blocker is not None and blocker.kind == "build":
        return "target not built", "", ""
    if not cuda:
        captures, replay = "skipped (no CUDA)", "skipped (no CUDA)"
        if blocker is None:
            return "tracer: no blocker seen", captures, replay
        return f"tracer: {blocker.rule or blocker.kind} would block capture", captures, replay
    statuses = [cell["status"] for cell in dev.capture.values()] if dev else []
    captures = "yes" if statuses and all(s in ("captured", "stale") for s in statuses) else "no" if statuses else ""
    outcome = dev.outcome("replay") if dev else None
    mismatch = [f for f in dev.findings if f.rule in ("GL391", "GL292")] if dev else []
    if outcome is None or outcome.status != "ran":
        replay = f"not run: {outcome.detail[:120]}" if outcome else ""
    elif mismatch:
        replay = "differs: " + (outcome.detail[:120] if outcome.detail else mismatch[0].message[:120])
    else:
        replay = "identical"
    if captures == "no":
        return "capture fails", captures, replay
    if mismatch:
        return "captures, replays stale", captures, replay
    if blocker is not None:
        return f"captures; {blocker.rule or blocker.kind}", captures, replay
    return "captures, replays like eager", captures, replay


def library_files(dev: DeviceResult) -> list[str]:
    """The files the cross-reference checks: every file an error or warning blames, and the file of
    the model's forward (the step's entry)."""
    files = {f.path for f in dev.findings if f.line > 0}
    files |= {e.rsplit(":", 1)[0] for e in dev.entries}
    return sorted(f for f in files if Path(f).is_file())


def build_rows(runs: list[dict[str, Any]], options: dict[str, Any], cpu: bool, *, cross: bool = True,
               cache_dir: str | None = None) -> list[Row]:
    rows = []
    for run in runs:
        inv, dev = device_of(run)
        result = run.get("result") or {}
        cuda = bool(inv and inv.cuda)
        blocker = first_blocker(run)
        verdict, captures, replay = _verdict(run, dev, blocker, cuda)
        row = Row(run["arch"], run["status"], verdict, config=_config(result), cache=_cache(result), captures=captures,
                  replay=replay, blocker=blocker, seconds=round(run.get("seconds", 0.0), 1),
                  command=rerun_command(run["arch"], options, cpu))
        if dev is not None:
            row.eager_s, row.graph_s = dev.timing.get("eager_s"), dev.timing.get("graph_s")
            xref = _cross(dev, result.get("ran", []), cache_dir) if cross else CrossRef(False, "not run (--no-cross)")
            row.xref = xref.detail
            row.findings = [{"rule": f.rule, "path": f.path, "line": f.line, "severity": f.severity,
                             "region": f.region, "bucket": xref.of(f), "static_rules": xref.rules_at(f)}
                            for f in dev.findings if not f.suppressed]
            row.static_only = [{"rule": f.rule, "path": f.path, "line": f.line, "severity": f.severity}
                               for f in xref.static_only]
            row.static = _static_verdict(row, xref)
        rows.append(row)
    return rows


def _config(result: dict) -> str:
    source = result.get("source", "")
    return source.split("(", 1)[1].rsplit(")", 1)[0] if "(" in source else source


def _cache(result: dict) -> str:
    layout = result.get("cache_layout", "")
    note = result.get("cache_note", "")
    return layout + (f" (refused: {note})" if note else "")


def _cross(dev: DeviceResult, ran: list[str], cache_dir: str | None) -> CrossRef:
    """``ran`` empty (the arch process could not observe its step): the regions' entries alone."""
    files = library_files(dev)
    if not files:
        return CrossRef(False, "nothing to cross-reference: no finding points at a source file")
    return cross_reference(dev.findings, ran or dev.entries, library_files=files, cache_dir=cache_dir)


def _static_verdict(row: Row, xref: CrossRef) -> str:
    if not xref.ran:
        return "not checked: " + xref.detail[:120]
    b = row.blocker
    if b is None or not b.rule or not b.line:
        extra = len(row.static_only)
        return f"nothing to confirm; static only: {extra} line(s)" if extra else "nothing to confirm"
    bucket = next((f["bucket"] for f in row.findings if f["path"] == b.path and f["line"] == b.line), "")
    if bucket == CONFIRMED:
        codes = next((f["static_rules"] for f in row.findings if f["path"] == b.path and f["line"] == b.line), [])
        return f"confirmed by both ({', '.join(codes)})"  # by line: the codes say what the static half saw there
    if bucket == DYNAMIC_ONLY:
        return "static miss"
    return bucket or "not matched"


@functools.lru_cache(maxsize=1)
def _rules() -> dict:
    from graphlint.rules import load_rules

    return load_rules()


def score(rows: list[Row], severities: tuple[str, ...] = ("error",)) -> dict[str, Any]:
    """The static half against the probes over the whole zoo, counting findings of ``severities`` on
    both sides (see the module doc)."""
    severity = {code: rule.severity for code, rule in _rules().items()}
    dynamic: set[tuple[str, int]] = set()
    static: set[tuple[str, int]] = set()
    archs = 0
    for row in rows:
        if row.status != "done" or row.static.startswith("not checked") or not row.xref:
            continue
        archs += 1
        for f in row.findings:
            if f["line"] <= 0:
                continue
            if f["severity"] in severities:
                dynamic.add((f["path"], f["line"]))
            codes = [c.split(" ")[0] for c in f.get("static_rules", [])]
            if any(severity.get(c) in severities for c in codes):
                static.add((f["path"], f["line"]))
        static |= {(f["path"], f["line"]) for f in row.static_only if f["severity"] in severities}
    both = dynamic & static
    return {"severities": list(severities), "architectures": archs, "dynamic_lines": len(dynamic),
            "static_lines": len(static), "confirmed": len(both), "static_miss": len(dynamic - both),
            "static_only": len(static - both),
            "recall": len(both) / len(dynamic) if dynamic else None,
            "precision": len(both) / len(static) if static else None,
            "misses": sorted(f"{short(p)}:{n}" for p, n in dynamic - both),
            "unconfirmed": sorted(f"{short(p)}:{n}" for p, n in static - both)}


def distinct_blockers(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows by blocker (rule and line, else kind and reason), most shared first."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        if row.blocker is not None and row.status == "done":
            groups.setdefault(row.blocker.key, []).append(row)
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))
