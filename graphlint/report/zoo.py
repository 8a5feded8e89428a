"""The zoo report: one row per transformers architecture, its distinct blockers, the static half judged.

Markdown for people, JSON (the same rows, the scores, and every raw run: ``graphlint zoo --from``
re-renders it) for tools. Per distinct blocker it can also write a draft upstream issue
(:func:`render_draft`): what breaks, the line and its text, the rule's why and fix, the
architectures, the command that re-runs one of them, and the hand-written reproducer when
``reports/zoo/repro/index.json`` lists one for that rule, file and function. Renders plain data:
nothing here runs or decides.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from graphlint.report.markdown import md_cell, md_table
from graphlint.zoo import Row, distinct_blockers, short

VERDICT_ORDER = ("captures, replays like eager", "captures, replays stale", "capture fails", "tracer: no blocker seen",
                 "target not built", "crashed", "timed out", "not run")


def _seconds(value: float | None) -> str:
    return f"{value:.4g}" if value else "—"


def _speedup(row: Row) -> str:
    if row.eager_s and row.graph_s and row.captures == "yes" and row.replay == "identical":
        return f"{row.eager_s / row.graph_s:.1f}x"
    return "—"


def _blocker(row: Row) -> str:
    b = row.blocker
    if b is None:
        return "none"
    head = f"{b.rule} `{b.where}`" if b.rule else f"{b.kind}" + (f" `{b.where}`" if b.path else "")
    return f"{head}: {b.reason[:240]}"


def counts(rows: list[Row]) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in rows:
        key = next((v for v in VERDICT_ORDER if row.verdict.startswith(v)), row.verdict.split(";")[0])
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: VERDICT_ORDER.index(kv[0]) if kv[0] in VERDICT_ORDER else 99))


def _percent(value: float | None) -> str:
    return f"{100 * value:.0f}%" if value is not None else "—"


def _score_lines(scores: list[dict[str, Any]]) -> list[str]:
    rows = [(", ".join(s["severities"]), s["architectures"], s["dynamic_lines"], s["static_lines"], s["confirmed"],
             s["static_miss"], s["static_only"], _percent(s["recall"]), _percent(s["precision"])) for s in scores]
    return [md_table(("Severities", "Architectures", "Dynamic lines", "Static lines", "Both", "Static miss",
                      "Static only", "Recall", "Precision"), rows), ""]


def render_markdown(meta: dict[str, Any], rows: list[Row], scores: list[dict[str, Any]],
                    repros: dict[str, dict] | None = None) -> str:
    out = [f"# Transformers zoo: CUDA-graph readiness of {len(rows)} architectures", ""]
    out += [f"Date: {meta.get('date', '')}  ", f"Command: `{meta.get('command', '')}`  ",
            f"Machine: {meta.get('device', '')}; torch {meta.get('torch', '')}; transformers "
            f"{meta.get('transformers', '')}  ",
            f"Wall time: {meta.get('seconds', 0):.0f} s, {meta.get('jobs', '')} architectures at a time; "
            f"target options: {meta.get('options', {})}", ""]
    out += ["## Summary", ""]
    out += [f"- **{n}** {verdict}" for verdict, n in counts(rows).items()]
    if scores:
        best = scores[0]
        out += [f"- Static half against the probes ({', '.join(best['severities'])} findings, lines counted once "
                f"over {best['architectures']} architectures): recall {_percent(best['recall'])} "
                f"({best['confirmed']}/{best['dynamic_lines']}), precision {_percent(best['precision'])} "
                f"({best['confirmed']}/{best['static_lines']})"]
    out += ["", "Each row is one `graphlint inventory` of `graphlint.targets.hf:make_target --option arch=NAME`: the "
            "architecture's config class with its defaults shrunk (`graphlint.targets.hf_config`), random weights, "
            "the step captured and replayed against an eager instance. *Static*: the static half run on the "
            "transformers files the findings blame, with the functions the step ran as entries.", ""]
    out += ["## Architectures", ""]
    table = [(f"`{r.arch}`", r.config, r.cache[:160], r.captures or "—", r.replay or "—", _seconds(r.eager_s),
              _seconds(r.graph_s), _speedup(r), _blocker(r), r.static or "—", f"{r.seconds:.0f}")
             for r in rows]
    out += [md_table(("Architecture", "Config", "Cache", "Captures", "Replay", "Eager s/token", "Graph s/token",
                      "Speedup", "First blocker", "Static", "s"), table), ""]
    out += _blocker_sections(rows, repros or {})
    out += ["## Static cross-reference into transformers", ""]
    if scores:
        out += ["A *dynamic line* is a file:line an error-severity probe finding blames; a *static line* one the "
                "static half flags in the files it checked (matched by line, as `graphlint inventory` does). Lines "
                "are counted once across architectures.", ""]
        out += _score_lines(scores)
        misses = scores[0]["misses"]
        out += [f"Static misses ({len(misses)}): " + (", ".join(f"`{m}`" for m in misses) or "none"), ""]
        unconfirmed = scores[0]["unconfirmed"]
        out += [f"Static only ({len(unconfirmed)}, first 30): " + (", ".join(f"`{m}`" for m in unconfirmed[:30])
                                                                  or "none"), ""]
    failed = [r for r in rows if r.status != "done" or r.verdict == "target not built"]
    if failed:
        out += ["## Not run to the end", ""]
        out += [md_table(("Architecture", "What happened", "Detail"),
                         [(f"`{r.arch}`", r.verdict, (r.blocker.reason if r.blocker else "")[:400]) for r in failed]), ""]
    return "\n".join(out)


def _blocker_sections(rows: list[Row], repros: dict[str, dict]) -> list[str]:
    groups = distinct_blockers(rows)
    if not groups:
        return []
    out = ["## Distinct blockers", ""]
    for number, (key, members) in enumerate(groups.items(), 1):
        b = members[0].blocker
        archs = ", ".join(f"`{r.arch}`" for r in members)
        out += [f"### {number}. {md_cell(key)} ({len(members)}: {archs})", "", f"- What: {b.reason}",
                f"- Static: {members[0].static or '—'}", f"- Re-run one: `{members[0].command}`"]
        repro = repros.get(repro_key(b.rule, b.path, b.function))
        if repro:
            out.append(f"- Reproducer: `{repro['script']}`; draft issue: `{repro['issue']}`")
        elif b.rule and b.line:
            out.append("- Reproducer: none yet (write one by hand; `--drafts DIR` writes the draft issue)")
        out.append("")
    return out


def repro_key(rule: str, path: str, function: str) -> str:
    return f"{rule} {short(path)} {function}"


def load_repros(index: str | None) -> dict[str, dict]:
    """``reports/zoo/repro/index.json``: [{rule, file, function, script, issue}] -> by :func:`repro_key`."""
    if not index or not Path(index).is_file():
        return {}
    entries = json.loads(Path(index).read_text(encoding="utf-8"))
    base = Path(index).parent
    return {f"{e['rule']} {e['file']} {e['function']}": {"script": str(base / e["script"]), "issue": str(base / e["issue"])}
            for e in entries}


def render_json(meta: dict[str, Any], rows: list[Row], scores: list[dict[str, Any]], runs: list[dict]) -> str:
    blockers = [{"key": key, "architectures": [r.arch for r in members], "blocker": members[0].to_dict()["blocker"],
                 "static": members[0].static, "command": members[0].command}
                for key, members in distinct_blockers(rows).items()]
    return json.dumps({"zoo": meta, "rows": [r.to_dict() for r in rows], "scores": scores, "blockers": blockers,
                       "runs": runs}, indent=1, default=str) + "\n"


def draft_name(number: int, key: str) -> str:
    return f"{number:02d}-" + re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-").lower()[:80] + ".md"


def render_draft(key: str, members: list[Row], rules: dict, meta: dict[str, Any], line_text: str = "",
                 repro: dict | None = None) -> str:
    """A draft upstream issue for one distinct blocker (nothing is filed from here)."""
    b = members[0].blocker
    rule = rules.get(b.rule)
    archs = ", ".join(r.arch for r in members)
    out = [f"# Draft: {b.where}: {rule.message if rule else b.kind} under CUDA graph capture", "",
           f"*Found by `graphlint zoo` ({meta.get('date', '')}, torch {meta.get('torch', '')}, transformers "
           f"{meta.get('transformers', '')}, {meta.get('device', '')}). Not filed: check the line against the "
           "current release and add a minimal reproducer before filing.*", "",
           "## What breaks", "", b.reason, "", f"Architectures: {archs}.", ""]
    if b.path:
        out += ["## Where", "", f"`{b.where}`" + (f" in `{b.function}`" if b.function else ""), ""]
        if line_text:
            out += ["```python", line_text, "```", ""]
    if rule is not None:
        out += ["## Why it breaks capture", "", " ".join(rule.why.split()), "", "## Suggested fix", "",
                " ".join(rule.fix.split()), ""]
    out += ["## Reproduce", "", "```bash", f"PYTHONPATH=. {members[0].command} --steps 16", "```", ""]
    if repro:
        out += [f"A plain torch + transformers reproducer: `{repro['script']}`; the hand-written draft: "
                f"`{repro['issue']}`.", ""]
    out += [f"graphlint's static check on the same line: {members[0].static or 'not run'}.", ""]
    return "\n".join(out)
