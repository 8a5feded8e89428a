"""What every renderer gets: the run's :class:`ReportContext`, and :func:`summary`, the one
place that counts, so text, JSON and markdown always agree.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graphlint.finding import Finding
from graphlint.gate import DEFAULT_FAILING, fails
from graphlint.rules import CATEGORIES, SEVERITIES, Rule


@dataclass
class ReportContext:
    rules: dict[str, Rule]
    files: int = 0
    lines: int = 0
    suppressed: int = 0  # suppressed findings in the reported files, shown or not
    baselined: int = 0
    failing: frozenset[str] = DEFAULT_FAILING  # severities that make the check fail
    show_chain: bool = False
    color: bool = False
    warnings: list[str] = field(default_factory=list)
    #: what the check took for the decode path (:func:`graphlint.static.decode_record.decode_path_record`);
    #: None where no decode path was computed (a report of another run)
    decode_path: dict | None = None
    gate_off: str = ""  # why nothing could fail the check (graphlint.check.gate_off), else ""


def use_color(output: str | None) -> bool:
    """Colour only for a terminal on stdout: never into ``--output``, never with ``NO_COLOR`` set
    and non-empty (no-color.org); ``FORCE_COLOR`` forces it (CI logs that render ANSI)."""
    import os
    import sys

    if output or os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


#: Params that list what a rule's matcher matches, in the order a table should prefer them.
_MATCHED = ("ops", "callees", "methods", "factories")
#: What ``{name}`` stands for when the rule lists no names (its matcher finds a kind of code).
_PLACEHOLDER = {"attr-mutation": "self.<attribute>", "growing-concat": "torch.cat", "host-copy": "<host tensor>",
                "out-of-place-update": ".index_copy()"}


def rule_message(rule: Rule) -> str:
    """A rule's message for tables and help, its per-finding ``{name}`` filled in with what the rule
    matches (``torch.bincount``, ``.cpu()/.numpy()``, ``torch.zeros/torch.empty/...``) or, for a rule
    that finds a kind of code rather than names, a ``<placeholder>``; a trailing ``({name})``, which
    only says where the finding is, is dropped."""
    message = re.sub(r"\s*\(\{name\}\)", "", rule.message)
    if "{name}" not in message:
        return message
    return message.replace("{name}", _matched_names(rule))


def _matched_names(rule: Rule) -> str:
    params = rule.params or {}
    key = next((k for k in _MATCHED if params.get(k)), None)
    if rule.matcher in _PLACEHOLDER or key is None:  # host-copy lists factories, but names the tensor
        return _PLACEHOLDER.get(rule.matcher or "", "<name>")
    names = [f".{n}()" if key == "methods" else (f"torch.{n}" if key == "ops" else n) for n in params[key]]
    shown = "/".join(names[:3])
    return shown + "/..." if len(names) > 3 else shown


def rule_kind(rule: Rule) -> str:
    """``static``, ``runtime`` (reported by ``inventory``/``capture-test``) or ``meta``: one word for
    the CLI table, ``rules --format json`` and the generated docs."""
    if rule.category == "meta":
        return "meta"
    return "runtime" if rule.dynamic else "static"


def summary(findings: list[Finding], ctx: ReportContext) -> dict[str, Any]:
    """Counts of active (unsuppressed) findings, plus what was hidden and why."""
    active = [f for f in findings if not f.suppressed]
    by_category = Counter(f.category for f in active)
    by_severity = Counter(f.severity for f in active)
    return {
        "files": ctx.files,
        "lines": ctx.lines,
        "findings": len(active),
        "files_with_findings": len({f.path for f in active}),
        "by_category": {c: by_category[c] for c in (*CATEGORIES, "meta") if by_category[c] or c in CATEGORIES},
        "by_severity": {s: by_severity[s] for s in SEVERITIES},
        "by_rule": dict(sorted(Counter(f.rule for f in active).items())),
        "suppressed": ctx.suppressed,
        "baselined": ctx.baselined,
        "failing": sum(fails(f, ctx.failing) for f in findings),
        "failing_severities": sorted(ctx.failing, key=SEVERITIES.index),
        "warnings": list(ctx.warnings),
        "gate_off": ctx.gate_off or None,
    }
