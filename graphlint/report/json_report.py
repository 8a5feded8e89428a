"""Machine output. The schema (documented in docs/check.md) is a superset of issue 2's::

    {"version": "0.1.0",
     "findings": [{"rule", "name", "category", "severity", "path", "line", "col", "message",
                   "chain": [...], "function", "line_text", "fix", "fingerprint",
                   "suppressed", "suppression_reason"}],
     "summary": {"files", "lines", "findings", "files_with_findings", "by_category",
                 "by_severity", "by_rule", "suppressed", "baselined", "failing",
                 "failing_severities", "warnings"}}

Paths are POSIX and relative to the working directory; ``fingerprint`` is the one a baseline
file in the working directory records (baseline paths are relative to the baseline's directory).
"""

from __future__ import annotations

import json

import graphlint
from graphlint.baseline import aligned_fingerprints
from graphlint.finding import Finding
from graphlint.report.context import ReportContext, summary

FIELDS = ("rule", "name", "category", "severity", "path", "line", "col", "message", "chain", "function",
          "line_text", "fix", "suppressed", "suppression_reason")


def finding_record(finding: Finding, fingerprint: str) -> dict:
    data = finding.to_dict()
    record = {key: data[key] for key in FIELDS}
    record["fingerprint"] = fingerprint
    return record


def render_json(findings: list[Finding], ctx: ReportContext) -> str:
    prints = aligned_fingerprints(findings)
    payload = {
        "version": graphlint.__version__,
        "findings": [finding_record(f, fp) for f, fp in zip(findings, prints)],
        "summary": summary(findings, ctx),
    }
    if ctx.decode_path is not None:
        payload["decode_path"] = ctx.decode_path
    return json.dumps(payload, indent=2) + "\n"
