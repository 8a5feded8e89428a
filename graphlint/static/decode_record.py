"""The :class:`~graphlint.static.decode_path.DecodePath` as the plain record the reports render
(reports import no analyzer): entries sorted into captured regions, host steps, per-token loops,
given and guessed entries, with lines; the unresolved calls at their lines; the unreached
hot-named functions.

Lines are read here, with ``ast``, from the few files that hold what is printed: the files of the
entries always (a capture's line is in the headline), the files of unresolved calls only when the
output lists them (``calls=True``: JSON, SARIF, ``graphlint entries``). The analysis itself never
pays for positions.
"""

from __future__ import annotations

import ast
from pathlib import Path

from graphlint.static.decode_path import DecodePath
from graphlint.static.entry_lines import entry_rows
from graphlint.static.positions import locate
from graphlint.static.unresolved import UnresolvedCall, callee_name, spelling


def decode_path_record(path: DecodePath, full: bool = True) -> dict:
    """``{"guessed", "names_on", "captured_regions", "host_steps", "token_loops", "eager_entries",
    "guessed_entries", "functions", "guessed_functions", "unresolved_calls", "unresolved",
    "unreached"}``. Without ``full`` (the text headline: counts, and the lines of the evidence),
    ``unresolved`` is empty and guessed entries and unreached functions carry no line: their files
    are not read."""
    regions: dict[tuple[str, int], dict] = {}
    host, loops, given, guessed = [], [], [], []
    by_key = {(e.context, e.function): e for e in path.entries}
    shown = path.entries if full else [e for e in path.entries if not e.guessed]
    rows = entry_rows(shown) + ([] if full else [
        {"context": e.context, "path": e.function[0], "line": 0, "function": e.function[1], "reason": e.reason,
         "evidence": None, "loop_only": bool(e.loops)} for e in path.entries if e.guessed])
    for row in rows:
        entry = by_key[(row["context"], (row["path"], row["function"]))]
        at = row["evidence"] or {"path": row["path"], "line": row["line"]}
        if entry.context == "graph":
            region = regions.setdefault((at["path"], at["line"]), {**at, "functions": []})
            region["functions"].append(row["function"])
        elif entry.context == "host":
            host.append({"path": row["path"], "line": row["line"], "function": row["function"],
                         "loop_only": row["loop_only"], "reason": row["reason"]})
        elif entry.guessed:
            guessed.append({"path": row["path"], "line": row["line"], "function": row["function"]})
        elif row["loop_only"]:
            loops.append({**at, "function": row["function"], "reason": row["reason"]})
        else:
            given.append({"path": row["path"], "line": row["line"], "function": row["function"],
                          "reason": row["reason"]})
    return {
        "guessed": path.guessed,
        "names_on": path.names_on,
        "captured_regions": sorted(regions.values(), key=lambda r: (r["path"], r["line"])),
        "host_steps": host,
        "token_loops": loops,
        "eager_entries": given,
        "guessed_entries": guessed,
        "functions": path.functions,
        "guessed_functions": path.guessed_functions,
        "unresolved_calls": len(path.unresolved),
        "unresolved": unresolved_rows(path.unresolved) if full else [],
        "unreached": unreached_rows(path, full),
    }


def unreached_rows(path: DecodePath, lines: bool = True) -> list[dict]:
    trees = _trees({u.function[0] for u in path.unreached}) if lines else {}
    return [{"path": u.function[0], "line": getattr(_function_node(trees.get(u.function[0]), u.function[1]),
                                                     "lineno", 0),
             "function": u.function[1], "why": u.why,
             "hazards": [{"line": line, "rule": code} for line, code in u.hazards]} for u in path.unreached]


def unresolved_rows(calls: list[UnresolvedCall]) -> list[dict]:
    """``{"path", "line", "function", "call"}`` per unresolved call, ``call`` as the source spells it."""
    trees = _trees({c.function[0] for c in calls})
    rows = []
    for c in calls:
        path, qual = c.function
        node = _function_node(trees.get(path), qual)
        line, text = _call_site(node, c.call) if node is not None else (0, "")
        if c.where and path in trees:  # the call graph knows the position: trust it over the name
            line = locate(trees[path], *c.where)[0]
        if not line and node is not None:
            line = getattr(node, "lineno", 0)
        row = {"path": path, "line": line, "function": qual, "call": text or spelling(c.call)}
        if row not in rows:  # one call site the summary typed two ways is still one call
            rows.append(row)
    return sorted(rows, key=lambda r: (r["path"], r["line"], r["call"]))


def _trees(paths: set[str]) -> dict[str, ast.Module]:
    out = {}
    for path in sorted(paths):
        try:
            out[path] = ast.parse(Path(path).read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
    return out


def _function_node(tree: ast.Module | None, qual: str) -> ast.AST | None:
    if tree is None:
        return None
    if qual == "<module>":
        return tree
    node: ast.AST = tree
    for part in qual.split("."):
        node = next((n for n in getattr(node, "body", ()) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                             ast.ClassDef)) and n.name == part), None)
        if node is None:
            return None
    return node


def _own_nodes(fn: ast.AST):
    """The nodes of a function's body, nested defs and classes left out (they are functions of their own)."""
    stack = list(reversed(getattr(fn, "body", [])))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _call_site(fn: ast.AST, desc: tuple) -> tuple[int, str]:
    """(line, source spelling) of the first call in ``fn`` the descriptor names, or (0, "")."""
    want = callee_name(desc)
    if want is None and desc[0] == "member":  # ``attention_interface(...)``: a local bound to a typed object
        bound = {t.id for n in _own_nodes(fn) if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        args = getattr(fn, "args", None)
        bound |= {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args else set()
        want = next((n.func.id for n in _own_nodes(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                     and n.func.id in bound), None)
    for node in _own_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        while isinstance(func, ast.Subscript):  # ``self.layers[i](x)``
            func = func.value
        if desc[0] == "getattr":
            hit = isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"
        else:
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            hit = name is not None and name == want
        if hit:
            return node.lineno, ast.unparse(node.func)
    return 0, ""
