"""Which of the linked findings ``graphlint check`` reports, and which unreached functions it notes.

Its own module because it is the check's last step and one concern: the linker places findings
in every analysed file, and only here do the project's settings decide what the user sees
(per-file rules, ``skip-file``, suppressions, the paths named on the command line). The same
settings decide which unreached hot-named functions are worth a note, so both live together.
When a whole-program stage crashed (the cross-file pass, the link), the one GL002 that says so is
made here too, since what is reported without it (every per-file finding, no unused-suppression
verdict without a link) is this module's call.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from graphlint.check_settings import Settings, enabled_for_file
from graphlint.finding import INTERNAL_ERROR, WHOLE_PROGRAM, Finding
from graphlint.paths import display_path
from graphlint.static.facts import FileSummary
from graphlint.static.suppressions import UNUSED, apply_suppressions


def apply_settings(findings: list[Finding], summaries: dict[str, FileSummary], settings: Settings,
                   failures: list[Finding] = (), linked: bool = True) -> list[Finding]:
    """Enabled rules per file (per-file-ignores), skip-file, suppressions, the reported files.

    ``failures`` (:func:`pass_failure`): the GL002s of whole-program stages that crashed, reported
    whatever paths are reported (they are the run's, like its configuration) unless GL002 is
    ignored. Without a link (``linked`` False) no comment can be called unused: GL001 needs the
    hot findings it might have suppressed."""
    enabled_by_path: dict[str, set[str]] = {}

    def enabled_for(path: str) -> set[str]:
        if path not in enabled_by_path:
            enabled_by_path[path] = enabled_for_file(settings, path) - (set() if linked else {UNUSED})
        return enabled_by_path[path]

    live = {path: s for path, s in summaries.items() if not s.skip_file}
    kept = [f for f in findings if (f.path in live or f.path not in summaries) and f.rule in enabled_for(f.path)]
    kept = apply_suppressions(sorted(kept, key=Finding.sort_key), live, settings.rules, enabled_for)
    if settings.report_paths is not None:
        record = settings.options.decode_path  # a stale decode path is the run's business, like its config
        kept = [f for f in kept if in_report_set(f.path, settings.report_paths) or (record and f.path == record)]
    kept += [f for f in failures if f.rule in enabled_for_file(settings, f.path)]
    return sorted(kept, key=Finding.sort_key)


#: what each whole-program stage's crash costs the result (:func:`pass_failure`)
FACTS_LOST = "the check went on with each file's own facts: findings that need another file's may be missing"
LINK_LOST = "only per-file findings are reported: no hazard on the decode path was judged"


def pass_error(exc: Exception, files: int, where: str) -> str:
    """What a crash of a whole-program stage was: the stage (and its step, from a
    :class:`graphlint.static.link.LinkError`), the exception, and where it was raised (for the bug
    report; ``graphlint entries`` prints it alone, having nothing else to show)."""
    import traceback

    step, cause = getattr(exc, "stage", ""), getattr(exc, "cause", exc)
    frames = traceback.extract_tb(cause.__traceback__)
    at = f" (raised at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    text = str(cause)
    text = text if len(text) <= 200 else text[:200] + "..."
    return (f"internal error in {where}{f', stage {step}' if step else ''}, over {files} files: "
            f"{type(cause).__name__}: {text}{at}")


def pass_failure(error: str, lost: str, settings: Settings) -> Finding:
    """The one GL002 a crashed whole-program stage gives (``error``: :func:`pass_error`; ``lost``:
    what the result lacks), at line 1 of the first path checked. It fails the check like any error
    (exit 1, :data:`graphlint.finding.WHOLE_PROGRAM`): every per-file finding is still reported."""
    path = display_path((settings.report_paths or settings.analysis_paths or (Path("."),))[0])
    return Finding.from_rule(settings.rules[INTERNAL_ERROR], path, 1, message=f"{error}; {lost}",
                             evidence=(WHOLE_PROGRAM,)).with_(
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
