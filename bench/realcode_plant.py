"""Plant known hazards into a copy of a real engine and check that graphlint reports each at its line.

Labels measure what graphlint says about the hazards an engine already has; a planted hazard asks
the sharper question a user asks first: "if I add a ``.item()`` *here*, does the hook catch it?".
A plant is one ``[[engines.<name>.plant]]`` table of a manifest (``bench/realcode/fresh.toml``)::

    [[engines.tiny.plant]]
    name = "item-in-captured-forward"    # what the report calls it
    file = "eng/model.py"                 # relative to the engine root, inside its `paths`
    function = "Block.forward"            # insert as the first statement of this function's body,
    # after = "h = self.norm(x)"          # ... or after the one statement whose first line is this
    code = "_planted = h.sum().item()"    # the statement(s), re-indented to the insertion point
    rule = "GL101"                        # the rule expected at the first inserted line
    severity = "error"                    # the least severity that counts as reported

Exactly one of ``function`` (a dotted qualified name: ``Class.method``, ``outer.inner``) and
``after`` (the stripped text of a line that starts a statement, unique in the file; when that
statement opens a block, the code goes first in its body). The file must still parse afterwards.

Each plant is measured alone: the engine's ``paths`` are copied to a temporary directory, the one
plant is applied, and graphlint runs there with the scorer's default settings. The result is
``found`` (the rule at the line, at ``severity`` or stronger), ``weaker`` (the rule at the line at
a lower severity), ``other rule`` (something else reported at the line) or ``missed``.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
KEYS = {"name", "file", "function", "after", "code", "rule", "severity"}


class PlantError(Exception):
    pass


@dataclass(frozen=True)
class Plant:
    engine: str
    name: str
    file: str
    code: str
    rule: str
    severity: str
    function: str = ""
    after: str = ""

    @property
    def anchor(self) -> str:
        return f"in {self.function}" if self.function else f"after `{self.after.strip()}`"


@dataclass(frozen=True)
class PlantResult:
    plant: Plant
    line: int  # the first inserted line in the planted copy
    reported: tuple[tuple[str, str], ...]  # (rule, severity) of every finding at that line
    status: str  # found | weaker | other rule | missed

    def reported_text(self) -> str:
        return ", ".join(f"{rule} {severity}" for rule, severity in self.reported) or "nothing"


def parse_plants(engine_name: str, tables: tuple[dict, ...]) -> list[Plant]:
    """Validate an engine's plant tables; every mistake names the engine and the plant."""
    plants = []
    for number, table in enumerate(tables, 1):
        where = f"[engines.{engine_name}] plant {number}"
        if not isinstance(table, dict):
            raise PlantError(f"{where}: must be a table")
        unknown = set(table) - KEYS
        if unknown:
            raise PlantError(f"{where}: unknown keys {sorted(unknown)}")
        missing = [key for key in ("name", "file", "code", "rule", "severity") if not table.get(key)]
        if missing:
            raise PlantError(f"{where}: missing {', '.join(missing)}")
        if bool(table.get("function")) == bool(table.get("after")):
            raise PlantError(f"{where}: give exactly one of function or after")
        if table["severity"] not in SEVERITY_RANK:
            raise PlantError(f"{where}: severity must be one of {sorted(SEVERITY_RANK)}")
        plants.append(Plant(engine=engine_name, **{key: table[key] for key in table}))
    return plants


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method by dotted qualified name (classes and enclosing functions)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.setdefault(name, child)
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


def _first_body_statement(body: list[ast.stmt]) -> ast.stmt:
    first = body[0]
    is_docstring = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
        and isinstance(first.value.value, str)
    return body[1] if is_docstring and len(body) > 1 else first


def _indentation(source_lines: list[str], node: ast.stmt) -> str:
    """The whitespace before ``node`` on its first line, as written (tabs stay tabs).

    A statement after a colon on its opener's line (``if x: y = 1``) has no indentation of its own:
    a plant there would silently become conditional, so it is refused."""
    prefix = source_lines[node.lineno - 1][:node.col_offset]
    if prefix.strip():
        raise PlantError(f"line {node.lineno} shares its line with `{prefix.strip()}`: plant after a statement of its own")
    return prefix


def insertion_point(plant: Plant, source: str) -> tuple[int, str]:
    """(0-based line index to insert before, its indentation as written) for ``plant`` in ``source``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    if plant.function:
        function = _functions(tree).get(plant.function)
        if function is None:
            raise PlantError(f"{plant.engine}/{plant.name}: no function {plant.function} in {plant.file}")
        target = _first_body_statement(function.body)
        if target.lineno == function.lineno:
            raise PlantError(f"{plant.engine}/{plant.name}: {plant.function} is a one-line function")
        return target.lineno - 1, _indentation(lines, target)
    matches = [index for index, line in enumerate(lines, 1) if line.strip() == plant.after.strip()]
    if len(matches) != 1:
        raise PlantError(f"{plant.engine}/{plant.name}: `{plant.after.strip()}` is on {len(matches)} lines of "
                         f"{plant.file}, not exactly one")
    starts = [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and node.lineno == matches[0]]
    if not starts:
        raise PlantError(f"{plant.engine}/{plant.name}: line {matches[0]} of {plant.file} starts no statement")
    statement = starts[0]
    body = getattr(statement, "body", None)
    if isinstance(body, list) and body and not isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        target = body[0]  # a block opener: the code goes first in its body
        return target.lineno - 1, _indentation(lines, target)
    return statement.end_lineno, _indentation(lines, statement)


def apply(plant: Plant, source: str) -> tuple[str, int]:
    """The planted source and the 1-based line of its first inserted line."""
    index, indent = insertion_point(plant, source)
    lines = source.splitlines(keepends=True)
    block = textwrap.indent(textwrap.dedent(plant.code).strip("\n") + "\n", indent)
    planted = "".join(lines[:index]) + block + "".join(lines[index:])
    try:
        ast.parse(planted)
    except SyntaxError as exc:
        raise PlantError(f"{plant.engine}/{plant.name}: the planted {plant.file} does not parse: {exc}") from None
    return planted, index + 1


def copy_paths(root: Path, paths: tuple[str, ...], target: Path) -> None:
    for rel in paths:
        source = root / rel
        if source.is_dir():
            # A checkout may hold a link that points outside it (ktransformers commits one to its
            # author's home): skip dangling links, as graphlint's own walk does.
            shutil.copytree(source, target / rel, dirs_exist_ok=True, ignore_dangling_symlinks=True)
        elif source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
        else:
            raise PlantError(f"{source} does not exist")


def judge(plant: Plant, line: int, findings: list[dict]) -> PlantResult:
    at_line = [f for f in findings if f["path"] == plant.file and f["line"] == line]
    reported = tuple((f["rule"], f["severity"]) for f in at_line)
    same_rule = [SEVERITY_RANK[f["severity"]] for f in at_line if f["rule"] == plant.rule]
    if same_rule and max(same_rule) >= SEVERITY_RANK[plant.severity]:
        status = "found"
    elif same_rule:
        status = "weaker"
    elif at_line:
        status = "other rule"
    else:
        status = "missed"
    return PlantResult(plant, line, reported, status)


def check_plant(plant: Plant, root: Path, paths: tuple[str, ...],
                run: Callable[[Path, tuple[str, ...]], list[dict]]) -> PlantResult:
    """Apply ``plant`` to a copy of ``paths`` under ``root``, run graphlint there (``run``), judge."""
    if not any(plant.file == p or plant.file.startswith(p.rstrip("/") + "/") or p == "." for p in paths):
        raise PlantError(f"{plant.engine}/{plant.name}: {plant.file} is outside the checked paths {list(paths)}")
    source_file = root / plant.file
    if not source_file.is_file():
        raise PlantError(f"{plant.engine}/{plant.name}: {source_file} does not exist")
    planted, line = apply(plant, source_file.read_text(encoding="utf-8-sig"))
    with tempfile.TemporaryDirectory(prefix="graphlint-plant-") as tmp:
        copy_dir = Path(tmp)
        copy_paths(root, paths, copy_dir)
        (copy_dir / plant.file).write_text(planted, encoding="utf-8")
        return judge(plant, line, run(copy_dir, paths))


def print_results(results: list[PlantResult], markdown: bool) -> None:
    found = sum(r.status == "found" for r in results)
    if markdown:
        print("| engine | planted hazard | where | expected | reported at the line | result |")
        print("|---|---|---|---|---|---|")
        for r in results:
            p = r.plant
            print(f"| {p.engine} | {p.name} | `{p.file}:{r.line}` ({p.anchor}) | {p.rule} {p.severity} | "
                  f"{r.reported_text()} | {r.status} |")
        print(f"| **overall** | | | | | {found}/{len(results)} found |")
        return
    for r in results:
        p = r.plant
        print(f"{p.engine:18} {p.name:34} {p.file}:{r.line} expected {p.rule} {p.severity}: "
              f"{r.reported_text()} -> {r.status.upper()}")
    print(f"planted hazards found: {found}/{len(results)}")
