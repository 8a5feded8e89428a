"""Renderers: findings in, one string out. Data flows one way: they never filter or decide.

Every renderer gets the findings to show (already baselined/suppression-filtered by the CLI;
suppressed ones only with ``--show-suppressed``) and a :class:`ReportContext` with the run's
counts (:mod:`graphlint.report.context`, where ``summary`` does all the counting).
Nothing here imports torch; :mod:`graphlint.report.markdown` has the table helpers the
dynamic inventory report reuses.
"""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.report.context import ReportContext, rule_kind, rule_message, summary, use_color

__all__ = ["FORMATS", "ReportContext", "render", "rule_kind", "rule_message", "summary", "use_color"]

FORMATS = ("text", "concise", "grouped", "json", "sarif", "markdown", "github")


def render(fmt: str, findings: list[Finding], ctx: ReportContext) -> str:
    if fmt == "text":
        from graphlint.report.text import render_text as renderer
    elif fmt == "concise":
        from graphlint.report.grouped import render_concise as renderer
    elif fmt == "grouped":
        from graphlint.report.grouped import render_grouped as renderer
    elif fmt == "json":
        from graphlint.report.json_report import render_json as renderer
    elif fmt == "sarif":
        from graphlint.report.sarif import render_sarif as renderer
    elif fmt == "markdown":
        from graphlint.report.markdown import render_markdown as renderer
    elif fmt == "github":
        from graphlint.report.github import render_github as renderer
    else:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return renderer(findings, ctx)
