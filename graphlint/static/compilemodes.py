"""Which names may hold a CUDA-graph compile mode: ``torch.compile(m, mode=args.compile_mode)``.

A mode read from settings is no literal at the compile call, so :func:`.regions.compile_kind` sees
"compile". What a project binds its settings to is read here, per file, and joined when linking
(:meth:`graphlint.static.callgraph.CallGraph`): the mode counts as CUDA graphs when the name it is
read through (its last name: ``args.compile_mode``, ``self.cfg.compile_mode``, ``mode``) may hold
``"reduce-overhead"`` or ``"max-autotune"`` anywhere in the analysed code -- any binding counts,
as everywhere in the flow-insensitive analysis ("a mode that may capture counts"):

- an argparse option whose ``default`` or ``choices`` hold one (``--compile_mode``, its ``dest``);
- an assignment, a field or dataclass field default, a keyword argument, a parameter default or a
  dict entry (``compile_mode = "reduce-overhead"``, ``Config(compile_mode=...)``, ``{"mode": ...}``);
- a name bound to another such name (``compile_mode = args.compile_mode``), to a fixpoint;
- a literal passed positionally to a function, by the function's bare name and the argument's
  position (:data:`ModuleInfo.graph_mode_args`): ``make_step(model, "reduce-overhead")`` makes
  ``def make_step(model, mode): return torch.compile(model, mode=mode)`` compile with graphs.

One ``ast`` walk, and only over files whose text holds such a literal: a few per engine.
"""

from __future__ import annotations

import ast

from graphlint.static.compileswitch import eager_default
from graphlint.static.regions import CUDAGRAPH_MODES


def _is_mode(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in CUDAGRAPH_MODES
    if isinstance(node, ast.IfExp):
        return _is_mode(node.body) or _is_mode(node.orelse)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(_is_mode(el) for el in node.elts)
    return False


def last_name(node: ast.AST | None) -> str:
    """``args.compile_mode`` -> "compile_mode", ``mode`` -> "mode", anything else -> ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _option_dest(call: ast.Call) -> str:
    """The attribute ``parser.add_argument("--compile-mode", ...)`` stores into."""
    for kw in call.keywords:
        if kw.arg == "dest" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = next((f for f in flags if f.startswith("--")), flags[0] if flags else "")
    return long.lstrip("-").replace("-", "_")


def scan(text: str, tree: ast.Module | None) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """(names that may hold a CUDA-graph mode, (callee's bare name, argument position) of literal
    modes passed positionally) for one file; empty unless its text holds a mode literal."""
    if tree is None or not any(m in text for m in CUDAGRAPH_MODES):
        return (), ()
    names: set[str] = set()
    aliases: list[tuple[str, str]] = []  # (target, source): ``compile_mode = args.compile_mode``
    positional: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                name = last_name(target)
                if not name:
                    continue
                if _is_mode(value):
                    names.add(name)
                elif last_name(value):
                    aliases.append((name, last_name(value)))
                elif isinstance(value, ast.IfExp):
                    aliases.extend((name, last_name(v)) for v in (value.body, value.orelse) if last_name(v))
        elif isinstance(node, ast.Call):
            func = last_name(node.func)
            if func == "add_argument":  # an option's ``default``/``choices``: what its attribute may hold
                if any(_is_mode(kw.value) for kw in node.keywords if kw.arg in ("default", "choices", "const")):
                    names.add(_option_dest(node))
                continue
            for kw in node.keywords:
                if kw.arg and _is_mode(kw.value):
                    names.add(kw.arg)
            for i, arg in enumerate(node.args):
                if func and _is_mode(arg):
                    positional.add((func, i))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            plain = [*args.posonlyargs, *args.args]
            for arg, default in zip(plain[len(plain) - len(args.defaults):], args.defaults):
                if _is_mode(default):
                    names.add(arg.arg)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults):
                if _is_mode(default):
                    names.add(arg.arg)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_mode(value):
                    names.add(key.value)
    changed = True
    while changed:  # ``compile_mode = args.compile_mode``: the alias may hold what its source holds
        changed = False
        for target, source in aliases:
            if source in names and target not in names:
                names.add(target)
                changed = True
    names.discard("")
    return tuple(sorted(names)), tuple(sorted(positional))


def graph_mode(region, flow, modes: set[str], positional: set[tuple[str, int]]) -> bool:
    """Whether a ``torch.compile`` region whose mode is read through the name ``region.mode`` may
    compile with CUDA graphs: the name may hold a mode (:func:`scan`), or it is a parameter of the
    compiling function and a caller passes a mode literal at its position (a method's ``self`` is
    not passed)."""
    name = region.mode
    if not name:
        return False
    if name in modes:
        return True
    if flow is None or name not in flow.params:
        return False
    index = flow.params.index(name) - (1 if flow.fkind in ("m", "c") else 0)
    bare = region.function.rpartition(".")[2]
    return (bare, index) in positional


#: the points-to value a compiled CUDA-graph callable carries besides what it wraps: it flows
#: through names, parameters, fields, containers and returns as every value does, so a call of
#: it anywhere is a replay (:meth:`graphlint.static.callgraph.CallGraph.compiled_sites`)
COMPILED_GRAPH = ("G",)


def mark_compiled(infos, linker, solver) -> set[int]:
    """Before the solve: the ``torch.compile`` regions that capture (a CUDA-graph mode, a literal or
    read from settings: :func:`graph_mode`), their result nodes given :data:`COMPILED_GRAPH`.
    Returns the regions' ids."""
    stored = lambda attr: [v for info in infos for v in info.field_stores.get(attr, ())]  # noqa: E731
    modes = {n for info in infos for n in info.graph_modes}
    positional = {a for info in infos for a in info.graph_mode_args}
    found: set[int] = set()
    for info in infos:
        for region in info.regions:
            if eager_default(region.opt_in, stored):
                continue  # not made by default: no replay (:mod:`.compileswitch`)
            if region.kind == "compiled-graph" or (
                    region.kind == "compiled" and graph_mode(region, info.flows.get(region.function), modes, positional)):
                found.add(id(region))
                if region.call is not None and region.function in info.flows:
                    solver.add_values(linker.eval(info.path, region.function, region.call), (COMPILED_GRAPH,))
    return found
