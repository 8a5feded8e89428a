"""Run the analyzer on in-memory sources: summarize every file, then link them together."""

from __future__ import annotations

import textwrap
from functools import lru_cache

from graphlint.finding import Finding
from graphlint.rules import Rule, load_rules
from graphlint.static.facts import FileSummary
from graphlint.static.link import link
from graphlint.static.options import DEFAULT_GUARDS, StaticOptions
from graphlint.static.summarize import summarize_file


@lru_cache(maxsize=1)
def builtin_rules() -> dict[str, Rule]:
    return load_rules()


def options(rules: dict[str, Rule] | None = None, **kw) -> StaticOptions:
    rules = rules or builtin_rules()
    kw.setdefault("enabled", frozenset(rules))
    kw.setdefault("guards", DEFAULT_GUARDS)
    return StaticOptions(**kw)


def summarize(files: dict[str, str | bytes], rules=None, **kw) -> list[FileSummary]:
    rules = rules or builtin_rules()
    opts = options(rules, **kw)
    out = []
    for path, src in files.items():
        data = src if isinstance(src, bytes) else textwrap.dedent(src).encode()
        out.append(summarize_file(path, data, rules, opts))
    return out


def analyze(files: dict[str, str | bytes], rules=None, **kw) -> list[Finding]:
    rules = rules or builtin_rules()
    summaries = summarize(files, rules, **kw)
    for s in summaries:
        assert not s.errors, (s.path, s.errors)
    return link(summaries, rules, options(rules, **kw))


def codes(findings: list[Finding]) -> list[str]:
    return [f.rule for f in findings]


#: The per-token loop the reachability tests drive a model with: it makes ``model``'s forward hot.
#: ``{args}`` is what the call passes after ``x`` (``, mask=x``); :func:`decode_loop` fills it.
DECODE_LOOP = """
def loop(model, x, n):
    for _ in range(n):
        out = model(x{args})
        x = out.argmax(-1)
    return x
"""


def decode_loop(args: str = "") -> str:
    return DECODE_LOOP.format(args=args)
