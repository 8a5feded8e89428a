"""One pass/fail policy for both halves (graphlint.gate)."""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.gate import (DEFAULT_FAILING, EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, check_exit_code,
                            failing_severities, fails)
from graphlint.rules import load_rules

RULES = load_rules()


def _static(code: str, **fields) -> Finding:
    return Finding.from_rule(RULES[code], "a.py", 1, 1, **fields)


def test_severity_and_suppression_decide_for_static_findings():
    error, warning, info = _static("GL101"), _static("GL101", severity="warning"), _static("GL101", severity="info")
    assert fails(error) and not fails(warning) and not fails(info)
    assert fails(warning, failing_severities(strict=True)) and not fails(info, failing_severities(strict=True))
    assert not fails(error.with_(suppressed=True))


def test_a_probe_finding_fails_only_when_it_was_seen_in_captured_code():
    seen = Finding.from_rule(RULES["GL190"], "step.py", 4, source="dynamic", in_graph=True)
    assert fails(seen, DEFAULT_FAILING)
    assert not fails(seen.with_(in_graph=False), DEFAULT_FAILING)  # an eager region, on purpose


def test_exit_codes_of_the_check():
    assert check_exit_code([], DEFAULT_FAILING) == EXIT_CLEAN
    assert check_exit_code([_static("GL101")], DEFAULT_FAILING) == EXIT_FINDINGS
    assert check_exit_code([_static("GL101")], DEFAULT_FAILING, exit_zero=True) == EXIT_CLEAN
    crashed = Finding.from_rule(RULES["GL002"], "a.py", 1, message="internal error while analysing this file")
    assert check_exit_code([crashed], DEFAULT_FAILING, exit_zero=True) == EXIT_ERROR
    assert check_exit_code([crashed.with_(suppressed=True)], DEFAULT_FAILING) == EXIT_CLEAN
