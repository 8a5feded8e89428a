"""Which of the linked findings ``graphlint check`` reports, and which unreached functions it notes.

Its own module because it is the check's last step and one concern: the linker places findings
in every analysed file, and only here do the project's settings decide what the user sees
(per-file rules, ``skip-file``, suppressions, the paths named on the command line). The same
settings decide which unreached hot-named functions are worth a note, so both live together.
When the link crashed, the one GL002 that says so is made here too, since what is reported
without a link (every per-file finding, no unused-suppression verdict) is this module's call.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from graphlint.check_settings import Settings, enabled_for_file
from graphlint.finding import LINK_FAILURE, Finding
from graphlint.paths import display_path
from graphlint.static.facts import FileSummary
from graphlint.static.suppressions import UNUSED, apply_suppressions

INTERNAL_ERROR = "GL002"


def apply_settings(findings: list[Finding], summaries: dict[str, FileSummary], settings: Settings,
                   link_failed: Finding | None = None) -> list[Finding]:
    """Enabled rules per file (per-file-ignores), skip-file, suppressions, the reported files.

    ``link_failed`` (:func:`link_failure`): the link crashed, so no comment can be called unused
    (GL001 needs the hot findings it might have suppressed), and the GL002 is reported whatever
    paths are reported (it is the run's, like its configuration) unless GL002 is ignored."""
    enabled_by_path: dict[str, set[str]] = {}

    def enabled_for(path: str) -> set[str]:
        if path not in enabled_by_path:
            enabled_by_path[path] = enabled_for_file(settings, path) - ({UNUSED} if link_failed else set())
        return enabled_by_path[path]

    live = {path: s for path, s in summaries.items() if not s.skip_file}
    kept = [f for f in findings if (f.path in live or f.path not in summaries) and f.rule in enabled_for(f.path)]
    kept = apply_suppressions(sorted(kept, key=Finding.sort_key), live, settings.rules, enabled_for)
    if settings.report_paths is not None:
        record = settings.options.decode_path  # a stale decode path is the run's business, like its config
        kept = [f for f in kept if in_report_set(f.path, settings.report_paths) or (record and f.path == record)]
    if link_failed is not None and link_failed.rule in enabled_for_file(settings, link_failed.path):
        kept.append(link_failed)
    return sorted(kept, key=Finding.sort_key)


def link_error(exc: Exception, files: int) -> str:
    """What a crash of the link was: its stage, the exception, and where it was raised (for the bug
    report; ``graphlint entries`` prints it alone, having nothing else to show)."""
    import traceback

    stage, cause = getattr(exc, "stage", "linking"), getattr(exc, "cause", exc)
    frames = traceback.extract_tb(cause.__traceback__)
    where = f" (raised at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    text = str(cause)
    text = text if len(text) <= 200 else text[:200] + "..."
    return (f"internal error in the cross-file pass (whole-program link), stage {stage}, over {files} files: "
            f"{type(cause).__name__}: {text}{where}")


def link_failure(error: str, settings: Settings) -> Finding:
    """The one GL002 a crash of the link gives (``error``: :func:`link_error`), at line 1 of the first
    path checked. The per-file findings are still reported; what the link decides -- the hot code,
    so every rule's finding -- is not."""
    path = display_path((settings.report_paths or settings.analysis_paths or (Path("."),))[0])
    message = f"{error}; only per-file findings are reported: no hazard on the decode path was judged"
    return Finding.from_rule(settings.rules[INTERNAL_ERROR], path, 1, message=message, evidence=(LINK_FAILURE,)).with_(
        fix="report it with this message and `graphlint --version`; every per-file finding still stands")


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
