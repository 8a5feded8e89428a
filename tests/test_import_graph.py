"""The README's "rules → analyzers → findings → reports", as import arrows the package may have.

Every module of ``graphlint`` belongs to one stage (``STAGES``; a new module without one fails
``test_every_module_has_a_stage``). A stage imports only the stages ``MAY_IMPORT`` lists for it:

* rules (the packs and the project's configuration) know nothing of what uses them;
* the Finding type (and the inventory's per-device records that carry the probes' findings) is
  built from a rule and knows nothing else;
* the two analyzers, static and dynamic, import rules and the Finding type, never each other:
  the halves meet only in their findings;
* what happens to findings of both halves (the pass/fail gate, baselines, the cross-reference)
  may ask either analyzer;
* reports render findings: they import no analyzer at all;
* front ends (the CLI, the pytest plugin, the docs generator) wire everything together, and
  nothing but a front end imports a front end.

Imports inside functions and under ``TYPE_CHECKING`` count: a lazy import is still an arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphlint"

#: (module or package prefix, stage); the longest prefix that matches a module wins.
STAGES = [
    ("graphlint", "shared"),  # the package root: its version
    ("graphlint.paths", "shared"),  # the one spelling of a file path, for both halves
    ("graphlint.decode_path_file", "shared"),  # the record file: written by the dynamic half, read by the static
    ("graphlint.rules", "rules"),
    ("graphlint.config_file", "rules"),  # [tool.graphlint]: which rules, which files
    ("graphlint.config_values", "rules"),  # [tool.graphlint]: the per-file budget, the target Python
    ("graphlint.finding", "finding"),
    ("graphlint.inventory", "finding"),  # what the probes observed, per device: plain records
    ("graphlint.static", "static"),
    ("graphlint.check", "static"),  # the static check: files, cache, workers, link, suppressions
    ("graphlint.check_settings", "static"),
    ("graphlint.check_filter", "static"),  # which linked findings the check reports
    ("graphlint.discovery", "static"),  # which files the check reads
    ("graphlint.cache", "static"),
    ("graphlint.workers", "static"),  # one process per file at a time: a crash costs a file, not the run
    ("graphlint.workqueue", "static"),  # which pending item a worker takes next
    ("graphlint.dynamic", "dynamic"),
    ("graphlint.targets", "dynamic"),  # ready-made targets for the probes
    ("graphlint.gate", "findings"),
    ("graphlint.crossref", "findings"),  # pairs the probes' findings with the static check's
    ("graphlint.zoo", "findings"),  # a transformers zoo's rows, blockers and the static half's scores
    ("graphlint.baseline", "findings"),
    ("graphlint.report", "reports"),
    ("graphlint.cli", "front end"),
    ("graphlint.__main__", "front end"),
    ("graphlint.progress", "front end"),  # the terminal's progress bars
    ("graphlint.docs", "front end"),  # rules/*.yaml -> docs/rules.md, README table
    ("graphlint.dynamic.commands", "front end"),  # inventory / capture-test
    ("graphlint.dynamic.zoo_command", "front end"),  # zoo
    ("graphlint.dynamic.pytest_plugin", "front end"),
    ("graphlint.dynamic.record_command", "front end"),  # graphlint record: runs a command in-process
]

MAY_IMPORT = {
    "shared": {"shared"},
    "rules": {"rules", "shared"},
    "finding": {"finding", "rules", "shared"},
    "static": {"static", "finding", "rules", "shared"},
    "dynamic": {"dynamic", "finding", "rules", "shared"},
    "findings": {"findings", "static", "dynamic", "finding", "rules", "shared"},
    "reports": {"reports", "findings", "finding", "rules", "shared"},
    "front end": {"front end", "reports", "findings", "static", "dynamic", "finding", "rules", "shared"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The graphlint modules ``name`` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:  # `from graphlint.static import matchers` imports a module
                out.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {m for m in out if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _stage(module: str) -> str | None:
    matches = [(len(prefix), stage) for prefix, stage in STAGES
               if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1] if matches else None


def test_every_module_has_a_stage():
    assert [m for m in MODULES if _stage(m) is None or (_stage(m) == "shared" and m not in dict(STAGES))] == []


def test_data_flows_one_way():
    wrong = sorted(
        f"{a} ({_stage(a)}) imports {b} ({_stage(b)})"
        for a, targets in GRAPH.items() for b in targets
        if _stage(b) not in MAY_IMPORT[_stage(a)]
    )
    assert wrong == []


def _cycles() -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    assert [sorted(c) for c in _cycles()] == []


def test_no_module_reaches_into_anothers_private_names():
    """``from graphlint.x import _helper`` or ``module._helper``: a name a module keeps to itself."""
    wrong = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("graphlint"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        wrong.append(f"{name}: from {node.module} import {alias.name}")
                    if f"{node.module}.{alias.name}" in MODULES:
                        aliases.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                aliases |= {a.asname for a in node.names if a.asname and a.name in MODULES}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                wrong.append(f"{name}: {node.value.id}.{node.attr}")
    assert wrong == []
