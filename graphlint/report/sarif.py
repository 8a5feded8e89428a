"""SARIF 2.1.0 for GitHub code scanning (``github/codeql-action/upload-sarif``).

Every loaded rule is listed with its why/fix as help text, so the code-scanning UI explains a
finding without the README. Results carry the baseline fingerprint as a partial fingerprint
(code scanning then tracks a finding across line shifts the same way ``--baseline`` does), the
call chain as a property, and ``suppressions`` for findings shown with ``--show-suppressed``.
Relative paths are relative to ``%SRCROOT%`` (the checkout when run from the repository root).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import graphlint
from graphlint.baseline import aligned_fingerprints
from graphlint.finding import Finding
from graphlint.report.context import ReportContext, rule_message
from graphlint.rules import Rule

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "graphlintFingerprint/v1"


def _rule_descriptor(rule: Rule) -> dict:
    help_text = f"{rule.why}\n\nFix: {rule.fix}"
    markdown = f"{rule.why}\n\n**Fix:** {rule.fix}"
    if rule.bad:
        markdown += "\n\n**Bad:**\n```python\n" + rule.bad[0].rstrip() + "\n```"
    if rule.good:
        markdown += "\n\n**Good:**\n```python\n" + rule.good[0].rstrip() + "\n```"
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule_message(rule)},
        "fullDescription": {"text": rule.why},
        "help": {"text": help_text, "markdown": markdown},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"category": rule.category, "tags": [rule.category, "cuda-graphs"]},
    }


def _location(finding: Finding) -> dict:
    # a URI of the name's bytes: "my dir" -> "my%20dir", a name that is not UTF-8 -> "%FF"
    artifact = {"uri": quote(os.fsencode(finding.path)), "uriBaseId": "%SRCROOT%"}
    if Path(finding.path).is_absolute():
        artifact = {"uri": Path(finding.path).as_uri()}
    region = {"startLine": finding.line}
    if finding.col > 0:
        region["startColumn"] = finding.col
    physical = {"artifactLocation": artifact, "region": region}
    location = {"physicalLocation": physical}
    if finding.function:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.function, "kind": "function"}]
    return location


def _result(finding: Finding, fingerprint: str, index: dict[str, int]) -> dict:
    result = {
        "ruleId": finding.rule,
        "level": LEVEL.get(finding.severity, "warning"),
        "message": {"text": finding.message},
        "locations": [_location(finding)],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        "properties": {"category": finding.category, "chain": list(finding.chain)},
    }
    if finding.rule in index:
        result["ruleIndex"] = index[finding.rule]
    if finding.suppressed:
        result["suppressions"] = [{"kind": "inSource", "justification": finding.suppression_reason or ""}]
    return result


def render_sarif(findings: list[Finding], ctx: ReportContext) -> str:
    rules = list(ctx.rules.values())
    index = {rule.code: i for i, rule in enumerate(rules)}
    prints = aligned_fingerprints(findings)
    run = {
        "tool": {
            "driver": {
                "name": "graphlint",
                "version": graphlint.__version__,
                "semanticVersion": graphlint.__version__,
                "rules": [_rule_descriptor(rule) for rule in rules],
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, fp, index) for f, fp in zip(findings, prints)],
    }
    properties = {}
    if ctx.decode_path is not None:  # what the check took for the decode path (docs/check.md)
        properties["decodePath"] = ctx.decode_path
    if ctx.gate_off:  # the gate was off: say so where code scanning shows the run
        properties["gateOff"] = ctx.gate_off
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": [
            {"level": "warning", "message": {"text": f"the check is off: {ctx.gate_off}"}}]}]
    if properties:
        run["properties"] = properties
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"
