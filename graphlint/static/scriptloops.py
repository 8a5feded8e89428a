"""Per-token loops of a command-line tool shipped inside a library: they rank below the library's own.

A quantization library ships its measuring and converting tools as modules that build their
argument parser when imported (``parser = argparse.ArgumentParser(); parser.add_argument(...)`` at
module level) and whose ``main(args)`` a launcher outside the package runs. Such a ``main`` feeds
one layer's output into the next module of a model, and its loop looks per-token
(:mod:`.loops`), but it is a tool's run, not the decode step of the library beside it, whose own
decode loops (a ``Generator.generate``) live in the package's importable modules. When no entry
point of the checked paths runs any loop (:meth:`.tokenloops.TokenLoops.unused`: a library), the
loops of those tool modules rank below the library's: listed as entries, what only they reach at
most a warning. A package whose only per-token loops sit in its tools (a generation script *is*
the engine) keeps them at full severity: nothing there ranks one loop above another.
"""

from __future__ import annotations

from graphlint.static.contexts import FuncId
from graphlint.static.facts import ModuleInfo

#: an argument parser's own methods, called on it at module level by a tool that parses at import
PARSER_METHODS = frozenset(("add_argument", "add_argument_group", "add_mutually_exclusive_group",
                            "add_subparsers", "parse_args", "parse_known_args", "set_defaults"))


def tool_modules(infos: list[ModuleInfo]) -> set[str]:
    """Paths of the modules that import ``argparse`` and call a parser's methods in module-level code."""
    out: set[str] = set()
    for info in infos:
        top = info.functions.get("<module>")
        if top is None or not any(v == "argparse" or v.startswith("argparse.") for v in info.imports.values()):
            continue
        if any(c.expr[0] == "a" and c.expr[2] in PARSER_METHODS for c in top.calls):
            out.add(info.path)
    return out


def tool_loops(loops: set[FuncId], others: set[FuncId], infos: list[ModuleInfo]) -> set[FuncId]:
    """The ``loops`` in tool modules, when some loop of ``loops | others`` (others: the host step
    loops) lives outside them; else none."""
    tools = tool_modules(infos)
    inside = {fid for fid in loops if fid[0] in tools}
    return inside if inside and any(fid[0] not in tools for fid in loops | others) else set()
