"""Apply ``# graphlint: ignore[...]`` comments to findings, ruff-style.

The analyzer parses the comments (:class:`graphlint.static.api.Suppression`); this module
decides what they do:

* A finding is suppressed by a comment that covers its line and names its code or rule name
  (or names nothing: a blanket ``# graphlint: ignore``). It stays in the result, marked
  ``suppressed`` with the comment's ``-- reason``, so ``--show-suppressed`` can print it.
* A code in a comment that suppressed nothing is reported as GL001 (unused-suppression), but
  only when that rule is enabled for the file: ``--select GL1`` must not make every GL2
  suppression "unused" (ruff's RUF100 behaves the same way). A blanket comment that
  suppressed nothing is unused too, but only when every static rule is enabled for the file.
* A code or name that no rule has is GL003 (invalid-suppression): it is almost always a
  typo, and the finding it meant to silence is still reported.
* ``# noqa`` is never honoured: it belongs to other linters, and honouring it would hide
  capture hazards behind a flake8 suppression written for a different reason.
"""

from __future__ import annotations

from typing import Callable, Iterable

from graphlint.finding import Finding
from graphlint.rules import Rule
from graphlint.static.api import FileSummary, Suppression

UNUSED = "GL001"
INVALID = "GL003"


def meta_finding(rules: dict[str, Rule], code: str, path: str, line: int, col: int, message: str) -> Finding:
    """A GL0xx finding about the run itself (parse error, unused suppression, ...)."""
    return Finding.from_rule(rules[code], path, max(line, 1), max(col, 0), message=message)


def apply_suppressions(
    findings: Iterable[Finding],
    summaries: dict[str, FileSummary],
    rules: dict[str, Rule],
    enabled_for: Callable[[str], set[str]],
) -> list[Finding]:
    """Mark suppressed findings and append GL001/GL003 findings for bad comments."""
    by_name = {rule.name: code for code, rule in rules.items()}
    resolved: dict[str, list[tuple[Suppression, set[str], list[str]]]] = {}
    for path, summary in summaries.items():
        entries = []
        for sup in summary.suppressions:
            known, unknown = set(), []
            for raw in sup.codes:
                code = raw.upper() if raw.upper() in rules else by_name.get(raw)
                if code:
                    known.add(code)
                else:
                    unknown.append(raw)
            entries.append((sup, known, unknown))
        resolved[path] = entries

    used: set[tuple[str, int, str]] = set()  # (path, suppression index, code or "*")
    out: list[Finding] = []
    for finding in findings:
        for index, (sup, known, unknown) in enumerate(resolved.get(finding.path, ())):
            blanket = not sup.codes
            if sup.first_line <= finding.line <= sup.last_line and (blanket or finding.rule in known):
                used.add((finding.path, index, "*" if blanket else finding.rule))
                finding = finding.with_(suppressed=True, suppression_reason=sup.reason)
                break
        out.append(finding)

    # a blanket comment can only be called unused when every static rule had its chance
    static_codes = {code for code, rule in rules.items() if rule.category != "meta" and not rule.dynamic}
    for path, entries in resolved.items():
        enabled = enabled_for(path)
        for index, (sup, known, unknown) in enumerate(entries):
            if unknown and INVALID in enabled:
                names = ", ".join(unknown)
                out.append(meta_finding(rules, INVALID, path, sup.comment_line, sup.comment_col,
                                        f"suppression names unknown rule(s): {names}"))
            if UNUSED not in enabled:
                continue
            if not sup.codes and (path, index, "*") not in used and static_codes <= enabled:
                out.append(meta_finding(rules, UNUSED, path, sup.comment_line, sup.comment_col,
                                        "unused blanket suppression: no finding on the lines it covers"))
            stale = sorted(c for c in known if c in enabled and (path, index, c) not in used)
            if stale:
                listed = ", ".join(f"{c} ({rules[c].name})" for c in stale)
                out.append(meta_finding(rules, UNUSED, path, sup.comment_line, sup.comment_col,
                                        f"unused suppression for {listed}"))
    return out
