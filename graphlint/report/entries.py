"""``graphlint entries`` / ``check --show-entries``: what graphlint thinks the decode step is.

One line per entry -- the context it runs in, the function (with the line of its ``def``), and
why it was chosen, pointing at the evidence (the capture, the replay, the per-token loop, the
declaration). The rows, lines included, come from :func:`graphlint.static.entry_lines.entry_rows`.
"""

from __future__ import annotations

import json

from graphlint.report.decode_path import headline, unreached_notes, unresolved_listing

CONTEXT_HELP = {
    "graph": "captured code: every rule, strictly",
    "host": "host step around a replay: per-step costs only (warnings), the result read-back is info",
    "eager": "eager decode path: every rule, strictly",
}


def render_entries(rows: list[dict], fmt: str = "text", decode: dict | None = None) -> str:
    """``decode``: the decode path's record (:func:`graphlint.static.decode_record.decode_path_record`),
    whose headline opens the listing and whose unresolved calls and unreached functions close it."""
    if fmt == "json":
        captures = any(r["context"] == "graph" for r in rows)
        payload = {"captures": captures, "entries": rows}
        if decode is not None:
            payload["decode_path"] = decode
        return json.dumps(payload, indent=2) + "\n"
    head = [*headline(decode, listed_below=True), ""] if decode is not None else []
    tail = [*unresolved_listing(decode), *unreached_notes(decode, limit=None)] if decode is not None else []
    for o in (decode or {}).get("outer_loops", ()):  # loops that look per-token but run whole decodes
        where = f"{o['path']}:{o['line']}" if o["line"] else o["path"]
        tail.append(f"Outer loop, not per token: {where}  {o['function']} runs the decode loop of {o['runs']} "
                    "once per iteration (per request, window or attempt: not checked)")
    if decode is not None and decode.get("decided_branches"):
        tail.append(f"Branches decided by argument and configuration values: {decode['decided_branches']} "
                    "(no hot caller or stored configuration value takes them: not on the decode path)")
    if not rows:
        if decode is not None:
            return "\n".join([*head[:-1], *tail]) + "\n"
        return "No decode entries found: nothing is captured, no per-token loop, no function matches hot-names.\n"
    kinds = sorted({r["context"] for r in rows}, key=("graph", "host", "eager").index)
    if "graph" in kinds:
        what = "the engine captures CUDA graphs"
    elif "host" in kinds:  # e.g. a graph captured through a callable graphlint could not resolve
        what = "CUDA graphs are replayed, but their captured code was not found; the rest is an eager decode path"
    else:
        what = "nothing is captured: eager decode path"
    out = [*head, f"Decode step: {len(rows)} entr{'y' if len(rows) == 1 else 'ies'} ({what})", ""]
    for r in rows:
        where = f"{r['path']}:{r['line']}" if r["line"] else r["path"]
        scope = " (loop body only)" if r["loop_only"] else ""
        out.append(f"{r['context']:<6} {where}  {r['function']}{scope}")
        evidence = r["evidence"]
        at = f"  [{evidence['path']}:{evidence['line']}]" if evidence else ""
        out.append(f"       {r['reason']}{at}")
    out += ["", *(f"{k}: {CONTEXT_HELP[k]}" for k in kinds)]
    if decode is not None and decode["guessed_entries"]:
        out.append("eager entries chosen by name (hot-names): what only they reach is at most a warning")
    if tail:
        out += ["", *tail]
    return "\n".join(out) + "\n"
