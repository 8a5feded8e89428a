"""The short text formats, next to the full one (:mod:`graphlint.report.text`), as ruff has them.

* ``concise``: one line per finding (``path:line:col: GL101 [host-sync-item] message``), no source
  line and no help -- for editors, ``grep`` and long lists.
* ``grouped``: findings under their file, each with its source line, and every rule's help
  **once**, in a ``help:`` section after the files: the full format repeats the same help under
  each finding (twelve times for GL308 on dsv4's eager decoder).

Both end with the same summary as the full format; ``--statistics`` (:func:`render_statistics`)
replaces the listing with one line per rule and its count, as ruff's does.
"""

from __future__ import annotations

import io
import json
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from graphlint.finding import Finding
from graphlint.report.context import ReportContext, rule_message
from graphlint.report.text import SEVERITY_STYLE, first_sentence, print_summary


def _console(out: io.StringIO, ctx: ReportContext) -> Console:
    return Console(file=out, force_terminal=ctx.color, no_color=not ctx.color,
                   color_system="standard" if ctx.color else None, width=100_000, highlight=False, soft_wrap=True)


def _code(f: Finding) -> str:
    style = "dim" if f.suppressed else SEVERITY_STYLE.get(f.severity, "")
    return f"[{style}]{f.rule}[/] [dim]\\[{escape(f.name)}][/]"


def render_concise(findings: list[Finding], ctx: ReportContext) -> str:
    out = io.StringIO()
    console = _console(out, ctx)
    for f in findings:
        suppressed = f"  [dim](suppressed: {escape(f.suppression_reason or 'no reason given')})[/]" if f.suppressed else ""
        console.print(f"[bold]{escape(f.path)}[/]:{f.line}:{f.col}: {_code(f)} {escape(f.message)}{suppressed}")
    print_summary(console, findings, ctx)
    return out.getvalue()


def render_grouped(findings: list[Finding], ctx: ReportContext) -> str:
    out = io.StringIO()
    console = _console(out, ctx)
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    for path, mine in by_file.items():
        console.print(f"[bold]{escape(path)}[/]:")
        width = max(len(f"{f.line}:{f.col}") for f in mine)
        for f in mine:
            console.print(f"  {f'{f.line}:{f.col}':<{width}} {_code(f)} {escape(f.message)}")
            if f.line_text:
                console.print(Text.assemble("  " + " " * width + " ", ("|", "dim"), " ", f.line_text))
            if ctx.show_chain and f.chain:
                console.print(f"  {' ' * width} [dim]chain:[/] {escape(' -> '.join(f.chain))}")
            if f.suppressed:
                console.print(f"  {' ' * width} [dim]suppressed: {escape(f.suppression_reason or 'no reason given')}[/]")
        console.print()
    helped = {f.rule: f for f in findings if f.fix and not f.suppressed}
    if helped:
        console.print("[cyan]help:[/]")
        for code in sorted(helped):
            f = helped[code]
            console.print(Text.assemble(f"  {code} {f.name}: ", first_sentence(f.fix)))
    print_summary(console, findings, ctx)
    return out.getvalue()


def statistics_rows(findings: list[Finding], ctx: ReportContext) -> list[dict]:
    """One row per rule with unsuppressed findings, most frequent first (then by code)."""
    counts = Counter(f.rule for f in findings if not f.suppressed)
    first = {f.rule: f for f in findings}
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        f, rule = first[code], ctx.rules.get(code)
        rows.append({"code": code, "name": f.name, "count": count, "severity": f.severity, "category": f.category,
                     "message": rule_message(rule) if rule else f.message})
    return rows


def render_statistics(findings: list[Finding], ctx: ReportContext, fmt: str = "text") -> str:
    """``--statistics``: per-rule counts instead of the findings (``fmt`` text or json)."""
    rows = statistics_rows(findings, ctx)
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    out = io.StringIO()
    console = _console(out, ctx)
    if rows:
        width = max(len(str(r["count"])) for r in rows)
        name = max(len(r["name"]) for r in rows)
        for r in rows:
            style = SEVERITY_STYLE.get(r["severity"], "")
            console.print(f"{r['count']:>{width}}  [{style}]{r['code']}[/]  {escape(r['name']):<{name}}  "
                          f"{r['severity']:<7}  {escape(r['message'])}")
    print_summary(console, findings, ctx)
    return out.getvalue()
