"""Markdown shaped like the seed inventory: one table per category with File, Line, Issue, Fix.

``md_cell`` and ``md_table`` are shared with the dynamic inventory report
(:mod:`graphlint.report.inventory`), so both halves render tables the same way.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from graphlint.finding import Finding
from graphlint.report.context import ReportContext, summary
from graphlint.report.decode_path import headline, unreached_notes
from graphlint.rules import CATEGORIES


def md_cell(text: object) -> str:
    """One table cell: pipes escaped, newlines folded, so a message never breaks the table."""
    return " ".join(str(text).replace("\\", "\\\\").replace("|", "\\|").split())


def md_code(text: object) -> str:
    """Inline code that survives backticks inside it."""
    body = str(text)
    fence = "``" if "`" in body else "`"
    return f"{fence} {body} {fence}" if fence == "``" else f"`{body}`"


def md_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(md_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_markdown(findings: list[Finding], ctx: ReportContext) -> str:
    info = summary(findings, ctx)
    parts = [
        "# graphlint: CUDA graph capture hazards\n",
        f"{info['findings']} finding(s) in {info['files_with_findings']} of {info['files']} file(s); "
        f"{info['suppressed']} suppressed, {info['baselined']} baselined.\n",
    ]
    if ctx.decode_path is not None and ctx.files:
        parts.append("\n\n".join(line.strip() for line in (*headline(ctx.decode_path),
                                                          *unreached_notes(ctx.decode_path))) + "\n")
    by_category: dict[str, list[Finding]] = {}
    for finding in findings:
        by_category.setdefault(finding.category, []).append(finding)
    for category in [*CATEGORIES, *sorted(set(by_category) - set(CATEGORIES))]:
        if category not in by_category:
            continue
        rows = by_category[category]
        parts.append(f"## {_title(category)} ({len(rows)})\n")
        parts.append(md_table(("File", "Line", "Issue", "Fix"), (_row(f) for f in rows)))
    if not by_category:
        parts.append("No findings.\n")
    return "\n".join(parts)


def _title(category: str) -> str:
    """Fixed numbers, so "Category 3" means data-dependent in every report, as in the seed."""
    if category in CATEGORIES:
        return f"Category {CATEGORIES.index(category) + 1}: {category}"
    return "Meta: files graphlint could not check, stale suppressions" if category == "meta" else category


def _row(f: Finding) -> tuple[str, ...]:
    issue = f"{md_code(f.rule)} {f.message}"
    if f.line_text:
        issue += f" — {md_code(f.line_text)}"
    if f.suppressed:
        issue += f" (suppressed: {f.suppression_reason or 'no reason given'})"
    return (md_code(f.path), str(f.line), issue, f.fix)
