"""``graphlint entries`` / ``check --show-entries``: what graphlint thinks the decode step is.

One line per entry -- the context it runs in, the function (with the line of its ``def``), and
why it was chosen, pointing at the evidence (the capture, the replay, the per-token loop, the
declaration). The rows, lines included, come from :func:`graphlint.static.entry_lines.entry_rows`.
"""

from __future__ import annotations

import json

CONTEXT_HELP = {
    "graph": "captured code: every rule, strictly",
    "host": "host step around a replay: per-step costs only (warnings), the result read-back is info",
    "eager": "eager decode path: every rule, strictly",
}


def render_entries(rows: list[dict], fmt: str = "text") -> str:
    if fmt == "json":
        captures = any(r["context"] == "graph" for r in rows)
        return json.dumps({"captures": captures, "entries": rows}, indent=2) + "\n"
    if not rows:
        return "No decode entries found: nothing is captured, no per-token loop, no function matches hot-names.\n"
    kinds = sorted({r["context"] for r in rows}, key=("graph", "host", "eager").index)
    if "graph" in kinds:
        head = "the engine captures CUDA graphs"
    elif "host" in kinds:  # e.g. a graph captured through a callable graphlint could not resolve
        head = "CUDA graphs are replayed, but their captured code was not found; the rest is an eager decode path"
    else:
        head = "nothing is captured: eager decode path"
    out = [f"Decode step: {len(rows)} entr{'y' if len(rows) == 1 else 'ies'} ({head})", ""]
    for r in rows:
        where = f"{r['path']}:{r['line']}" if r["line"] else r["path"]
        scope = " (loop body only)" if r["loop_only"] else ""
        out.append(f"{r['context']:<6} {where}  {r['function']}{scope}")
        evidence = r["evidence"]
        at = f"  [{evidence['path']}:{evidence['line']}]" if evidence else ""
        out.append(f"       {r['reason']}{at}")
    out += ["", *(f"{k}: {CONTEXT_HELP[k]}" for k in kinds)]
    return "\n".join(out) + "\n"
