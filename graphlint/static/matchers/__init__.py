"""Matcher kinds: the code behind a rule's ``matcher:`` name.

A matcher is built once per rule (validating ``params``) and is shown the libcst nodes of
the ``node_types`` it asks for, in source order, with a :class:`MatchContext`. It reports
through ``ctx.report``; whether a report becomes a finding (hot code, capture code) is the
linker's business, declared per rule with ``params.scope``:

- ``hot`` (default): code reachable from a decode entry or from a capture region;
- ``capture``: code inside a capture region, what it calls, and any function that captures;
- ``anywhere``: every function (for patterns that are wrong wherever they are).

A new kind is a module in this package with a :class:`~.base.Matcher` subclass that sets
``kind``: defining the class registers it, and :func:`matcher_kinds` imports every module here.
"""

from __future__ import annotations

import importlib
import pkgutil

from graphlint.rules import Rule, RuleError
from graphlint.static.matchers.base import REGISTRY, Matcher


_imported: list[bool] = []


def matcher_kinds() -> dict[str, type[Matcher]]:
    """Every kind in this package: importing a module registers the kinds it defines. The
    package is listed once per process (a directory listing per file summarized was about 2%
    of a worker); kinds registered later still show."""
    if not _imported:
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _imported.append(True)
    return dict(sorted(REGISTRY.items()))


def build_matchers(rules: dict[str, Rule]) -> list[Matcher]:
    """One matcher per static rule, in code order. Unknown kinds are a RuleError."""
    kinds = matcher_kinds()
    built = []
    for code in sorted(rules):
        rule = rules[code]
        if not rule.matcher or rule.dynamic:
            continue
        if rule.matcher not in kinds:
            raise RuleError(
                f"{rule.pack}: rule {rule.code}: unknown matcher {rule.matcher!r} "
                f"(known: {', '.join(sorted(kinds))})"
            )
        built.append(kinds[rule.matcher](rule))
    return built
