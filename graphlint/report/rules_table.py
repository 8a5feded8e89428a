"""``graphlint rules``: every rule as a table.

A boxed rich table only on a terminal wide enough to hold it (:data:`BOX_MIN_WIDTH`); anywhere
else -- piped, redirected, an 80-column terminal -- a plain table: columns padded with spaces, one
rule per line, nothing truncated or boxed (rich squeezed the codes to ``GL1…`` at 80 columns, and
a pipe got a 166-column box), so ``graphlint rules | grep host-sync`` and ``awk '{print $1}'`` work.
"""

from __future__ import annotations

import io

from graphlint.report.context import rule_kind, rule_message
from graphlint.rules import Rule

COLUMNS = ("code", "name", "category", "severity", "kind", "message")
#: Narrower terminals get the plain table: the boxed one needs ~75 columns before the message.
BOX_MIN_WIDTH = 120


def rule_rows(rules: dict[str, Rule]) -> list[tuple[str, ...]]:
    return [(r.code, r.name, r.category, r.severity, rule_kind(r), rule_message(r)) for r in rules.values()]


def render_plain(rules: dict[str, Rule]) -> str:
    rows = [COLUMNS, *rule_rows(rules)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def render_boxed(rules: dict[str, Rule], width: int, color: bool) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"graphlint rules ({len(rules)})", title_justify="left")
    for column in COLUMNS:
        table.add_column(column, no_wrap=column != "message")
    for row in rule_rows(rules):
        table.add_row(*row)
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=color, no_color=not color, highlight=False).print(table)
    return out.getvalue()


def render_rules(rules: dict[str, Rule], *, terminal_width: int | None, color: bool = False) -> str:
    """``terminal_width``: the terminal's columns when stdout is one, else None (piped)."""
    if terminal_width is None or terminal_width < BOX_MIN_WIDTH:
        return render_plain(rules)
    return render_boxed(rules, terminal_width, color)
