"""Human output: ``path:line:col: GL101 [host-sync-item] message``, the line, the chain, a summary.

Colour comes from rich and only when writing to a terminal without ``NO_COLOR`` (the CLI
decides); otherwise the very same text is produced plain, so it can be grepped and diffed.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from graphlint.finding import Finding
from graphlint.gate import fails
from graphlint.report.context import ReportContext, summary
from graphlint.report.decode_path import headline, unreached_count, unreached_notes

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_text(findings: list[Finding], ctx: ReportContext) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=ctx.color, no_color=not ctx.color, color_system="standard" if ctx.color else None,
        width=100_000, highlight=False, soft_wrap=True,
    )
    if ctx.decode_path is not None and ctx.files:
        _print_decode_path(console, ctx)
    for finding in findings:
        _print_finding(console, finding, ctx)
    print_summary(console, findings, ctx)
    return out.getvalue()


def _print_finding(console: Console, f: Finding, ctx: ReportContext) -> None:
    style = "dim" if f.suppressed else SEVERITY_STYLE.get(f.severity, "")
    console.print(
        f"[bold]{escape(f.path)}[/]:{f.line}:{f.col}: [{style}]{f.rule}[/] [dim]\\[{escape(f.name)}][/] {escape(f.message)}"
    )
    if f.line_text:
        console.print(Text.assemble("    ", ("|", "dim"), " ", f.line_text))  # no markup: a trailing \ stays one
    if f.fix and not f.suppressed:
        console.print(Text.assemble("    ", ("= help:", "cyan"), " ", first_sentence(f.fix)))
    if ctx.show_chain and f.chain:
        console.print(f"    [dim]chain:[/] {escape(' -> '.join(f.chain))}")
    if f.suppressed:
        reason = f.suppression_reason or "no reason given"
        console.print(f"    [dim]suppressed: {escape(reason)}[/]")


def _print_decode_path(console: Console, ctx: ReportContext) -> None:
    """What the decode path is, before the findings (see :mod:`graphlint.report.decode_path`)."""
    record = ctx.decode_path
    lines = headline(record)
    for i, line in enumerate(lines):
        warn = i == 0 and (record["guessed"] or len(lines) == 1)
        console.print(Text(line, style="yellow" if warn else "dim"))
    for note in unreached_notes(record):
        console.print(Text(note, style="yellow"))
    console.print()


_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf", "approx")


def first_sentence(text: str) -> str:
    """The fix's first sentence: a hint under the finding, as ruff's ``= help:``; the rest (why,
    examples) is one ``graphlint explain CODE`` away. A period inside parentheses or backticks, or
    after an abbreviation (``(e.g. the number of experts)``), does not end the sentence."""
    text = " ".join(text.split())
    depth, code = 0, False
    for i, char in enumerate(text):
        if char == "`":
            code = not code
        elif not code and char in "([":
            depth += 1
        elif not code and char in ")]":
            depth = max(0, depth - 1)
        elif char == "." and not code and not depth and text[i + 1:i + 2] == " ":
            word = text[:i].rsplit(" ", 1)[-1].lstrip("(").lower()
            if word not in _ABBREVIATIONS:
                return text[: i + 1]
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def print_summary(console: Console, findings: list[Finding], ctx: ReportContext) -> None:
    info = summary(findings, ctx)
    if findings:
        console.print()
    hidden = []
    if info["suppressed"]:
        hidden.append(f"{info['suppressed']} suppressed")
    if info["baselined"]:
        hidden.append(f"{info['baselined']} in the baseline")
    tail = f" ({', '.join(hidden)})" if hidden else ""
    if not info["files"]:
        console.print("No Python files checked.")
        return
    unchecked = unreached_count(ctx.decode_path)
    if unchecked:
        tail += (f" ({_plural(unchecked, 'function')} named like decode code "
                 f"{'is' if unchecked == 1 else 'are'} not on the decode path: see the note above)")
    if not info["findings"]:
        console.print(f"[green]No findings[/] in {_plural(info['files'], 'file')}{tail}.")
        return
    severities = ", ".join(_plural(n, s) for s, n in info["by_severity"].items() if n)
    failing = sum(fails(f, ctx.failing) for f in findings)
    console.print(
        f"Found {_plural(info['findings'], 'finding')} in {info['files_with_findings']} of "
        f"{_plural(info['files'], 'file')}: {severities}{tail}."
    )
    for category, count in info["by_category"].items():
        if count:
            console.print(f"  {category:<16} {count}")
    codes = sorted({f.rule for f in findings if not f.suppressed})
    if codes:
        example = f"graphlint explain {codes[0]}"
        console.print(f"[dim]Why each breaks capture, with a fixed example:[/] {example}"
                      + (" (or any code above)" if len(codes) > 1 else ""))
    if failing:
        verb = "fails" if failing == 1 else "fail"
        console.print(f"[bold red]{_plural(failing, 'finding')} {verb} the check[/] "
                      f"(failing severities: {', '.join(info['failing_severities'])}).")
    else:
        console.print(f"None of them fail the check (failing severities: {', '.join(info['failing_severities'])}).")
