"""Pass or fail: the one policy for both halves, and the exit codes it maps to.

A finding fails when it is active (not suppressed, not in the baseline: the caller filters
those), its severity is a failing one (``error``; with ``--strict`` also ``warning``; ``info``
is advice and never fails), and it was not seen only in an eager region: a probe that watched
a region the target runs eagerly on purpose reports what it saw there, but nothing in it stops
the graphs from capturing. Static findings carry no such fact, so only the first two apply.

``capture-test`` (and ``inventory``, and the ``graph_capture`` pytest fixture) also fails on
what the probes saw of the graphs themselves: a capture that failed, came out empty or went
stale, and a probe that crashed.
"""

from __future__ import annotations

from typing import Iterable

from graphlint.finding import INTERNAL_ERROR, WHOLE_PROGRAM, Finding
from graphlint.inventory import EMPTY, FAILED, STALE, Inventory

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

DEFAULT_FAILING = frozenset({"error"})
STRICT_FAILING = frozenset({"error", "warning"})


def failing_severities(strict: bool) -> frozenset[str]:
    return STRICT_FAILING if strict else DEFAULT_FAILING


def fails(finding: Finding, failing: frozenset[str] = DEFAULT_FAILING) -> bool:
    return not finding.suppressed and finding.severity in failing and finding.in_graph is not False


def check_exit_code(findings: Iterable[Finding], failing: frozenset[str], exit_zero: bool = False) -> int:
    """``graphlint check``: 2 when graphlint itself failed on a file (GL002, even with
    ``--exit-zero``: the fix is in graphlint, not in the user's code), else 1 on a failing finding
    (the GL002 of a crashed whole-program stage is one: every per-file finding is still reported
    beside it, see :data:`graphlint.finding.WHOLE_PROGRAM`)."""
    findings = list(findings)
    if any(f.rule == INTERNAL_ERROR and not f.suppressed and WHOLE_PROGRAM not in f.evidence for f in findings):
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(fails(f, failing) for f in findings) else EXIT_CLEAN


def capture_failures(inventory: Inventory) -> list[str]:
    """One line per reason ``capture-test`` fails: capture failures, empty or stale graphs, probe
    errors (one line per error, not per probe it stopped), failing findings."""
    out = []
    for dev in inventory.devices:
        for region, cell in dev.capture.items():
            if cell["status"] in (FAILED, EMPTY, STALE):
                out.append(f"{dev.device} {region}: capture {cell['status']} {cell.get('detail', '')}".rstrip())
        crashes: dict[str, list[str]] = {}
        for probe in dev.probes:
            if probe.status == "error":
                crashes.setdefault(probe.detail, []).append(probe.probe)
        out += [f"{dev.device} {', '.join(probes)}: probe error {detail}" for detail, probes in crashes.items()]
        out += [f"{f.path}:{f.line} {f.rule} {f.message} [{dev.device}]" for f in dev.findings if fails(f)]
    return list(dict.fromkeys(out))
