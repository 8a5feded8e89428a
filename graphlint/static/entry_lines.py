"""Where each decode entry is, in lines: the ``def`` of its function and its evidence (the capture,
the replay, the per-token loop, the declaration), as plain rows for :mod:`graphlint.report.entries`.

The lines are read here, from the few files that hold entries, when ``graphlint entries`` or
``check --show-entries`` asks: the analyzer itself never pays for positions it does not report.
"""

from __future__ import annotations

import ast
from pathlib import Path

from graphlint.static.entries import Entry
from graphlint.static.positions import locate


def parsed_trees(paths: set[str]) -> dict[str, ast.Module]:
    """Each readable, parsable file's ``ast`` (the few files a report needs lines from)."""
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


def entry_rows(entries: list[Entry]) -> list[dict]:
    """One row per entry, graph entries first: ``context``, ``path``, ``line`` (of the ``def``),
    ``function``, ``reason``, ``evidence`` (``{"path", "line"}`` or None), ``loop_only``."""
    trees = parsed_trees({e.function[0] for e in entries} | {e.where[0] for e in entries if e.where[0]})
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
