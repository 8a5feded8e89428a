"""Classes loaded by their dotted path: a registry of classes by string.

An engine that supports many architectures often maps a name to a class *path*, not to the class
(``MODULE_MAP = {"LlamaForCausalLM": f"{MODELS}.llama.LlamaForCausalLM"}``), and loads the class
it needs at run time: ``mod = importlib.import_module(path[:dot]); cls = getattr(mod, path[dot +
1:])``. No value flows from the string to the class, so the model built from it -- the one a
graph runner captures -- is unknown to the call graph. Read statically: every dotted string held
in a container or passed as an argument (and the literal tail of such an f-string) that ends in
``module.Class`` is a *class path* (per file, :attr:`.facts.ModuleInfo.class_paths`); a module
imported by a computed name (``importlib.import_module(x)``) is any project module some class path
names, and a computed ``getattr`` on it gives the classes the paths name there -- not every class
of the module (a path names the class a registry hands out, not its layers and helpers).
"""

from __future__ import annotations

from graphlint.static.names import module_name

#: calls that import a module by a computed name (their result: a module some class path names)
DYNAMIC_IMPORTS = frozenset(("importlib.import_module",))


def class_path(text: str) -> str | None:
    """``"pkg.models.llama.Llama"`` / ``".llama.Llama"`` -> ``"pkg.models.llama.Llama"`` /
    ``"llama.Llama"``: a dotted path of identifiers (a module part and a last name), else None."""
    parts = text[1:].split(".") if text.startswith(".") else text.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def named_classes(infos, most: int) -> dict[str, frozenset[str]]:
    """path -> the top-level classes of that module some class path of the project names: the
    module's dotted name ends with the path's module part (``llama`` or ``pkg.models.llama``).
    Nothing when they are more than ``most`` (:data:`.pointsto.CAP`): a node of the points-to
    analysis keeps at most that many values, so the classes would be cut to an arbitrary few (in
    id order), and every node they pass through -- the model's local, the agent's field, the
    runner's -- would drop what else it holds (the graph runner an agent's field holds beside the
    model). A registry of a hundred architectures needs one value standing for the family (left:
    see docs/benchmarks.md, branch ``lmdreach``); the import then stays unknown, as before."""
    by_last: dict[str, list] = {}
    for info in infos:
        by_last.setdefault(module_name(info.path).rpartition(".")[2], []).append(info)
    found: dict[str, set[str]] = {}
    for info in infos:
        for path in sorted(getattr(info, "class_paths", ())):
            module, _, cls = path.rpartition(".")
            for target in by_last.get(module.rpartition(".")[2], ()):
                name = module_name(target.path)
                if cls in target.classes and (name == module or name.endswith("." + module)):
                    found.setdefault(target.path, set()).add(cls)
    if sum(len(classes) for classes in found.values()) > most:
        return {}
    return {path: frozenset(classes) for path, classes in found.items()}
