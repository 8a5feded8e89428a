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

from graphlint.static.decode_path import DecodePath
from graphlint.static.entries import Entry
from graphlint.static.entry_lines import entry_rows, parsed_trees
from graphlint.static.positions import locate
from graphlint.static.unresolved import UnresolvedCall, callee_name, spelling
from graphlint.static.unresolvedkinds import KINDS

SHOWN = 3  # locations per kind the text headline prints (graphlint.report.decode_path.SHOWN)


def decode_path_record(path: DecodePath, lines: str = "all", shown: int = SHOWN) -> dict:
    """``{"guessed", "names_on", "captured_regions", "host_steps", "token_loops", "eager_entries",
    "guessed_entries", "functions", "guessed_functions", "unresolved_calls", "unresolved_kinds", "unresolved",
    "unreached", "outer_loops"}``, with the lines ``lines`` asks for -- each costs one ``ast`` parse per file read:

    * ``"headline"`` (text, markdown, github: counts, the first ``shown`` captured regions at their
      lines, host steps and loops by name): only those regions carry lines (the files of the
      captures, usually one); ``unresolved`` is empty. A generate loop in a 4,000-line file cost
      the headline 0.1-0.25 s per run when it printed that loop's line too;
    * ``"entries"`` (check's JSON and SARIF): every entry with its lines (the entries' files, as
      ``graphlint entries`` reads them); the unresolved calls by function and callee, no line (on
      all of torch their 196 files take 10 s to read);
    * ``"all"`` (``graphlint entries``): the unresolved calls at their lines too.

    An unreached function's ``line`` is its first unchecked hazard's, known without reading."""
    full = lines != "headline"
    kinds: dict[str, list[Entry]] = {"graph": [], "host": [], "loop": [], "eager": [], "guessed": []}
    for e in sorted(path.entries, key=_source_order):
        kinds["graph" if e.context == "graph" else "host" if e.context == "host" else "guessed" if e.guessed
              else "loop" if e.loops else "eager"].append(e)
    regions: dict[tuple, list[Entry]] = {}  # one per capture site or declaration, else per function
    for e in kinds["graph"]:
        regions.setdefault(e.where if e.where[1] else (e.function[0], ("def", e.function[1])), []).append(e)
    picked = path.entries if full else [e for group in list(regions.values())[:shown] for e in group]
    rows = {(r["context"], (r["path"], r["function"])): r for r in entry_rows(picked)}

    def row(e: Entry) -> dict:
        return rows.get((e.context, e.function)) or {"path": e.function[0], "line": 0, "function": e.function[1],
                                                      "reason": e.reason, "evidence": None, "loop_only": bool(e.loops)}

    def at(r: dict) -> dict:
        return dict(r["evidence"] or {"path": r["path"], "line": r["line"]})

    captured = [{**at(row(group[0])), "functions": [e.function[1] for e in group]} for group in regions.values()]
    host = [{k: row(e)[k] for k in ("path", "line", "function", "loop_only", "reason")} for e in kinds["host"]]
    loops = [{**at(row(e)), "function": e.function[1], "reason": e.reason} for e in kinds["loop"]]
    given = [{k: row(e)[k] for k in ("path", "line", "function", "reason")} for e in kinds["eager"]]
    guessed = [{k: row(e)[k] for k in ("path", "line", "function")} for e in kinds["guessed"]]
    if full:  # every line is known: source order by line
        for rows_of_kind in (captured, host, loops, given, guessed):
            rows_of_kind.sort(key=lambda r: (r["path"], r["line"]))
    return {
        "guessed": path.guessed,
        "names_on": path.names_on,
        "decided_branches": path.decided,
        "captured_regions": captured,
        "host_steps": host,
        "token_loops": loops,
        "eager_entries": given,
        "guessed_entries": guessed,
        "functions": path.functions,
        "guessed_functions": path.guessed_functions,
        "unresolved_calls": len(path.unresolved),
        "unresolved_kinds": unresolved_kinds(path.unresolved),
        "unresolved": (unresolved_rows(path.unresolved) if lines == "all" else
                       [{"path": c.function[0], "function": c.function[1], "call": spelling(c.call), "kind": c.kind}
                        for c in path.unresolved] if full else []),
        "by_class": by_class_rows(path, lines == "all"),
        "unreached": unreached_rows(path),
        "outer_loops": outer_loop_rows(path, with_lines=full),
    }


def outer_loop_rows(path: DecodePath, with_lines: bool) -> list[dict]:
    """``{"path", "line", "function", "runs"}`` per outer loop (:mod:`.outerloops`): a loop that
    runs the decode ``runs`` holds once per iteration. Lines only when the output lists them."""
    outer = getattr(path, "outer_loops", ())
    trees = parsed_trees({o.function[0] for o in outer}) if with_lines and outer else {}
    rows = []
    for o in outer:
        tree = trees.get(o.function[0])
        line = locate(tree, *o.where)[0] if tree is not None and o.where else 0
        rows.append({"path": o.function[0], "line": line, "function": o.function[1], "runs": o.decoder[1]})
    return sorted(rows, key=lambda r: (r["path"], r["line"], r["function"]))


def _source_order(e: Entry) -> tuple:
    """Entries in source order without reading a file: by path, then the evidence's statement path."""
    path, where = e.where if e.where[1] else (e.function[0], ())
    return (path, 0, where, e.function[1]) if where else (path, 1, (), e.function[1])


def unreached_rows(path: DecodePath) -> list[dict]:
    return [{"path": u.function[0], "line": u.hazards[0][0] if u.hazards else 0, "function": u.function[1],
             "why": u.why, "hazards": [{"line": line, "rule": code} for line, code in u.hazards]}
            for u in path.unreached]


def by_class_rows(path: DecodePath, with_lines: bool) -> list[dict]:
    """``{"path", "line", "function", "call", "targets"}`` per call resolved by class
    (:mod:`.openreceivers`): a receiver only an unbound parameter gives, given the package's own
    classes that define the method. Lines only when the output lists them."""
    rows = []
    for c in getattr(path, "by_class", ()):
        row = unresolved_rows([c])[0] if with_lines else {
            "path": c.function[0], "line": 0, "function": c.function[1], "call": spelling(c.call)}
        row.pop("kind", None)
        rows.append({**row, "targets": [qual for _, qual in c.targets]})
    return rows


def unresolved_kinds(calls: list[UnresolvedCall]) -> dict[str, int]:
    """How many unresolved calls of each kind (:data:`graphlint.static.unresolvedkinds.KINDS`, every
    kind listed, in that order): the counts sum to ``unresolved_calls``."""
    counts = dict.fromkeys(KINDS, 0)
    for c in calls:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    return counts


def unresolved_rows(calls: list[UnresolvedCall]) -> list[dict]:
    """``{"path", "line", "function", "call", "kind"}`` per unresolved call, ``call`` as the source
    spells it, ``kind`` why it is unresolved (:mod:`graphlint.static.unresolvedkinds`)."""
    trees = parsed_trees({c.function[0] for c in calls})
    rows = []
    for c in calls:
        path, qual = c.function
        node = _function_node(trees.get(path), qual)
        line, text = _call_site(node, c.call) if node is not None else (0, "")
        if c.where and path in trees:  # the call graph knows the position: trust it over the name
            line = locate(trees[path], *c.where)[0]
        if not line and node is not None:
            line = getattr(node, "lineno", 0)
        row = {"path": path, "line": line, "function": qual, "call": text or spelling(c.call), "kind": c.kind}
        if row not in rows:  # one call site the summary typed two ways is still one call
            rows.append(row)
    return sorted(rows, key=lambda r: (r["path"], r["line"], r["call"]))


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


def _call_site(fn: ast.AST, ir: tuple) -> tuple[int, str]:
    """(line, source spelling) of the first call in ``fn`` whose callee the flow IR names, or (0, "")."""
    want = callee_name(ir)
    for node in _own_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        while isinstance(func, ast.Subscript):  # ``self.layers[i](x)``
            func = func.value
        if ir[0] == "g":
            hit = isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"
        else:
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            hit = name is not None and name == want
        if hit:
            return node.lineno, ast.unparse(node.func)
    return 0, ""
