"""Which of the linked findings ``graphlint check`` reports, and which unreached functions it notes.

Its own module because it is the check's last step and one concern: the linker places findings
in every analysed file, and only here do the project's settings decide what the user sees
(per-file rules, ``skip-file``, suppressions, the paths named on the command line). The same
settings decide which unreached hot-named functions are worth a note, so both live together.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from graphlint.check_settings import Settings, enabled_for_file
from graphlint.finding import Finding
from graphlint.static.facts import FileSummary
from graphlint.static.suppressions import apply_suppressions


def apply_settings(findings: list[Finding], summaries: dict[str, FileSummary], settings: Settings) -> list[Finding]:
    """Enabled rules per file (per-file-ignores), skip-file, suppressions, the reported files."""
    enabled_by_path: dict[str, set[str]] = {}

    def enabled_for(path: str) -> set[str]:
        if path not in enabled_by_path:
            enabled_by_path[path] = enabled_for_file(settings, path)
        return enabled_by_path[path]

    live = {path: s for path, s in summaries.items() if not s.skip_file}
    kept = [f for f in findings if (f.path in live or f.path not in summaries) and f.rule in enabled_for(f.path)]
    kept = apply_suppressions(sorted(kept, key=Finding.sort_key), live, settings.rules, enabled_for)
    if settings.report_paths is not None:
        record = settings.options.decode_path  # a stale decode path is the run's business, like its config
        kept = [f for f in kept if in_report_set(f.path, settings.report_paths) or (record and f.path == record)]
    return sorted(kept, key=Finding.sort_key)


def unreached_worth_a_note(unreached: list, summaries: dict[str, FileSummary], settings: Settings) -> list:
    """The unreached hot-named functions worth a note: in a reported file, with a hazard of a rule
    enabled for that file and not suppressed (a suppressed ``.item()`` hides nothing)."""
    out = []
    for item in unreached:
        path = item.function[0]
        if settings.report_paths is not None and not in_report_set(path, settings.report_paths):
            continue
        codes = set(settings.options.enabled)
        for matcher, ignored in settings.per_file_ignores:
            if matcher(Path(path)):
                codes -= ignored
        summary = summaries.get(path)
        hazards = tuple((line, code) for line, code in item.hazards if code in codes and not (
            summary and _suppressed(summary, line, code, settings.rules)))
        if hazards:
            out.append(replace(item, hazards=hazards))
    return out


def _suppressed(summary: FileSummary, line: int, code: str, rules: dict) -> bool:
    name = rules[code].name if code in rules else code
    return any(s.first_line <= line <= s.last_line and (not s.codes or code in {c.upper() for c in s.codes}
                                                        or name in s.codes) for s in summary.suppressions)


def in_report_set(path: str, report_paths: tuple[Path, ...]) -> bool:
    target = os.path.abspath(path)
    for root in report_paths:
        base = os.path.abspath(root)
        if target == base or target.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False
