"""``graphlint entries`` / ``check --show-entries``: what graphlint thinks the decode step is.

One line per entry -- the context it runs in, the function (with the line of its ``def``), and
why it was chosen, pointing at the evidence (the capture, the replay, the per-token loop, the
declaration). ``def`` and evidence lines are read here, from the few files that hold entries, so
the analyzer itself never pays for positions it does not report.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from graphlint.static.entries import Entry
from graphlint.static.positions import locate

CONTEXT_HELP = {
    "graph": "captured code: every rule, strictly",
    "host": "host step around a replay: per-step costs only (warnings), the result read-back is info",
    "eager": "eager decode path: every rule, strictly",
}


def _trees(paths: set[str]) -> dict[str, ast.Module]:
    out = {}
    for path in sorted(paths):
        try:
            out[path] = ast.parse(Path(path).read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
    return out


def def_lines(entries: list[Entry], trees: dict[str, ast.Module]) -> dict[tuple[str, str], int]:
    """(path, qualname) -> line of its ``def`` (absent when the file cannot be read or parsed)."""
    out: dict[tuple[str, str], int] = {}
    for path, tree in trees.items():
        _collect(tree.body, "", path, out)
    return out


def _evidence_line(entry: Entry, trees: dict[str, ast.Module]) -> int:
    path, where = entry.where
    tree = trees.get(path or entry.function[0])
    if tree is None or not where:
        return 0
    return locate(tree, *where)[0]


def _collect(body: list[ast.stmt], prefix: str, path: str, out: dict) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qual = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                out.setdefault((path, qual), node.lineno)
            _collect(node.body, qual + ".", path, out)


def _rows(entries: list[Entry]) -> list[dict]:
    trees = _trees({e.function[0] for e in entries} | {e.where[0] for e in entries if e.where[0]})
    lines = def_lines(entries, trees)
    order = {c: i for i, c in enumerate(("graph", "host", "eager"))}
    rows = []
    for e in sorted(entries, key=lambda e: (order.get(e.context, 9), e.function[0], lines.get(e.function, 0))):
        path, qual = e.function
        rows.append({
            "context": e.context, "path": path, "line": lines.get((path, qual), 0), "function": qual,
            "reason": e.reason, "evidence": evidence(e, path, trees),
            "loop_only": bool(e.loops),
        })
    return rows


def evidence(entry: Entry, path: str, trees: dict[str, ast.Module]) -> dict | None:
    line = _evidence_line(entry, trees)
    return {"path": entry.where[0] or path, "line": line} if line else None


def render_entries(entries: list[Entry], fmt: str = "text") -> str:
    rows = _rows(entries)
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
