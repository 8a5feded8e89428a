"""``# graphlint: ignore[...]`` comments: what they say (parsed per file) and what they do
(applied to the linked findings), ruff-style.

What a comment says:

- at the end of a line: covers that line's whole logical statement (all its physical lines);
- on a line of its own: covers the next statement (its header only, for ``if``/``def``...; a
  decorated ``def``/``class`` is one statement from its first decorator to the end of its header);
- ``[GL101, host-sync-item]`` limits it to those codes or names; bare ``ignore`` means all rules;
- text after ``--`` is the reason, shown with ``--show-suppressed``; another tool's ``# noqa``
  may follow;
- ``# graphlint: skip-file`` anywhere in a comment skips the file;
- anything else after ``# graphlint:`` (``ignore(GL102)``, ``ignore GL102``, ``ignore: GL102``,
  an unclosed ``ignore[GL102``, ``ignroe[...]``) is malformed: it suppresses nothing and is GL003.
  A suppression is syntax: a typo must never turn into a blanket ignore.

The file is tokenized only when it contains ``graphlint:`` at all, so clean files pay nothing.

What it does:

* A finding is suppressed by a comment that covers its line and names its code or rule name
  (or names nothing: a blanket ``# graphlint: ignore``). It stays in the result, marked
  ``suppressed`` with the comment's ``-- reason``, so ``--show-suppressed`` can print it.
* A code in a comment that suppressed nothing is reported as GL001 (unused-suppression), but
  only when that rule is enabled for the file: ``--select GL1`` must not make every GL2
  suppression "unused" (ruff's RUF100 behaves the same way). A blanket comment that
  suppressed nothing is unused too, but only when every static rule is enabled for the file.
* A code or name that no rule has is GL003 (invalid-suppression): it is almost always a
  typo, and the finding it meant to silence is still reported.
* GL000, GL002 and GL005 -- the file went unchecked -- cannot be suppressed by a comment (one
  naming them is GL003); exclude the file, or ignore the code in the configuration, where it shows.
* ``# noqa`` is never honoured: it belongs to other linters, and honouring it would hide
  capture hazards behind a flake8 suppression written for a different reason.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Callable, Iterable

from graphlint.finding import Finding
from graphlint.rules import Rule
from graphlint.static.facts import FileSummary, Suppression

PREFIX = re.compile(r"#\s*graphlint\s*:\s*")
#: The whole directive after ``# graphlint:``; another tool's ``# noqa`` may follow it.
DIRECTIVE = re.compile(
    r"(?P<kind>ignore|skip-file)(?:\s*\[(?P<codes>[^\[\]]*)\])?\s*(?:--\s*(?P<reason>.*?))?\s*(?:#.*)?",
)
UNUSED, INVALID = "GL001", "GL003"
#: Findings about the file itself: a comment in the file must not hide that it went unchecked.
UNSUPPRESSIBLE = frozenset({"GL000", "GL002", "GL005"})
SKIP_TOKENS = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENCODING)


def parse_suppressions(text: str) -> tuple[list[Suppression], bool]:
    """(suppressions, skip_file). Tokenizer errors end the scan quietly (the parse reports them)."""
    if "graphlint" not in text:
        return [], False
    comments: list[tuple[int, int, bool, re.Match]] = []  # (line, 1-based col, own_line, match)
    statements: list[tuple[int, int]] = []  # logical statement line ranges
    start = None
    last_code_line = 0
    decorator = False  # the logical line under way is a decorator: it runs on into the def/class header
    fresh = True  # the next significant token begins a logical line
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                prefix = PREFIX.search(tok.string)
                if prefix:
                    col = tok.start[1] + prefix.start() + 1
                    match = DIRECTIVE.fullmatch(tok.string, prefix.end())
                    comments.append((tok.start[0], col, tok.start[0] != last_code_line,
                                     match or tok.string[prefix.end():].strip()))
                continue
            if tok.type == tokenize.NEWLINE and start is not None:
                if not decorator:
                    statements.append((start, tok.start[0]))
                    start = None
                fresh = True
            elif tok.type not in SKIP_TOKENS and tok.type != tokenize.ENDMARKER:
                if fresh:
                    start = tok.start[0] if start is None else start
                    decorator, fresh = tok.type == tokenize.OP and tok.string == "@", False
                last_code_line = tok.end[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    if start is not None:
        statements.append((start, max(start, last_code_line)))
    result: list[Suppression] = []
    skip_file = False
    for line, col, own_line, match in comments:
        first, last = _covered(statements, line, own_line)
        if isinstance(match, str):  # ``ignore(GL102)``, ``ignore GL102``, ``ignore[GL102``: suppresses nothing
            result.append(Suppression(line, first, last, (), "", col, problem=_malformed(match)))
            continue
        if match["kind"] == "skip-file":
            skip_file = skip_file or match["codes"] is None
            if match["codes"] is not None:
                result.append(Suppression(line, first, last, (), "", col, problem="`skip-file` takes no codes"))
            continue
        codes = tuple(c.strip() for c in (match["codes"] or "").split(",") if c.strip())
        if match["codes"] is not None and not codes:
            codes = ("[]",)  # ``ignore[]`` names no rule: an invalid suppression (GL003), never a blanket one
        result.append(Suppression(line, first, last, codes, (match["reason"] or "").strip(), col))
    return result, skip_file


def _malformed(text: str) -> str:
    shown = text if len(text) <= 40 else text[:37] + "..."
    if text.startswith("ignore"):
        return (f"malformed suppression `{shown}`: it suppresses nothing; write `# graphlint: ignore[CODE, ...]` "
                "(a reason after `--`)")
    return (f"unknown graphlint directive `{shown}`: it does nothing; `# graphlint:` takes `ignore[CODE, ...]`, "
            "`ignore` or `skip-file`")


def _covered(statements: list[tuple[int, int]], line: int, own_line: bool) -> tuple[int, int]:
    for first, last in statements:
        if own_line and first > line:
            return first, last
        if not own_line and first <= line <= last:
            return first, last
    return line, line


def apply_suppressions(
    findings: Iterable[Finding],
    summaries: dict[str, FileSummary],
    rules: dict[str, Rule],
    enabled_for: Callable[[str], set[str]],
) -> list[Finding]:
    """Mark suppressed findings and append GL001/GL003 findings for bad comments."""
    by_name = {name: code for code, rule in rules.items() for name in (rule.name, *rule.previous_names)}
    resolved: dict[str, list[tuple[Suppression, set[str], list[str]]]] = {}
    for path, summary in summaries.items():
        entries = []
        for sup in summary.suppressions:
            known, unknown = set(), []
            for raw in sup.codes:
                code = raw.upper() if raw.upper() in rules else by_name.get(raw)
                if code:
                    known.add(code)
                else:
                    unknown.append(raw)
            entries.append((sup, known, unknown))
        resolved[path] = entries

    used: set[tuple[str, int, str]] = set()  # (path, suppression index, code or "*")
    out: list[Finding] = []
    for finding in findings:
        for index, (sup, known, unknown) in enumerate(resolved.get(finding.path, ())):
            if sup.problem or finding.rule in UNSUPPRESSIBLE:
                continue
            blanket = not sup.codes
            if sup.first_line <= finding.line <= sup.last_line and (blanket or finding.rule in known):
                used.add((finding.path, index, "*" if blanket else finding.rule))
                finding = finding.with_(suppressed=True, suppression_reason=sup.reason)
                break
        out.append(finding)

    # a blanket comment can only be called unused when every static rule had its chance
    static_codes = {code for code, rule in rules.items() if rule.category != "meta" and not rule.dynamic}
    for path, entries in resolved.items():
        enabled = enabled_for(path)
        for index, (sup, known, unknown) in enumerate(entries):
            if sup.problem and INVALID in enabled:
                out.append(_comment_finding(rules[INVALID], path, sup, sup.problem))
                continue
            if unknown and INVALID in enabled:
                names = ", ".join(unknown)
                out.append(_comment_finding(rules[INVALID], path, sup, f"suppression names unknown rule(s): {names}"))
            fixed = sorted(known & UNSUPPRESSIBLE)
            if fixed and INVALID in enabled:
                out.append(_comment_finding(rules[INVALID], path, sup, f"{', '.join(fixed)} cannot be suppressed by a "
                                            "comment: it says the file went unchecked (fix it, or exclude the file)"))
            if UNUSED not in enabled:
                continue
            if not sup.codes and (path, index, "*") not in used and static_codes <= enabled:
                out.append(_comment_finding(rules[UNUSED], path, sup,
                                            "unused blanket suppression: no finding on the lines it covers"))
            stale = sorted(c for c in known - UNSUPPRESSIBLE if c in enabled and (path, index, c) not in used)
            if stale:
                listed = ", ".join(f"{c} ({rules[c].name})" for c in stale)
                out.append(_comment_finding(rules[UNUSED], path, sup, f"unused suppression for {listed}"))
    return out


def _comment_finding(rule: Rule, path: str, sup: Suppression, message: str) -> Finding:
    """GL001/GL003 at the ``# graphlint:`` of the comment."""
    return Finding.from_rule(rule, path, max(sup.comment_line, 1), max(sup.comment_col, 0), message=message)
