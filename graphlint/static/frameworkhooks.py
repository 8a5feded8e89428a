"""Per-step code an external framework calls: a plugin's subclasses and patches of its classes.

A vLLM plugin replaces vLLM's model runner methods (``execute_model``, ``propose_draft_token_ids``),
brings its own attention metadata builder (vLLM calls ``build`` before every forward) and patches
the logits layer; a Hugging Face user hands ``generate`` a ``LogitsProcessor``. The framework's own
loop calls that code every step, from outside the checked paths: no call of the checked code says
so, and none of it was on a decode path.

**The model** is a small table of well-known frameworks' per-step entry points
(``frameworkhooks.yaml``, next to this file; its header says its scope): for a framework package, the
classes its loop drives and the methods it calls on them every step -- stubs of code the analysis
cannot see, as PyCG models the standard library.

**The rule.** A method the table lists becomes a **host** entry (per-step costs only, at most
warnings: it is the host code around the framework's captured or eager forward) when the checked
code's version of it belongs to

- a class deriving from a table class (its MRO's bases include one), imported from the framework's
  package and not defined in the checked paths (``class B(AttentionMetadataBuilder[M])``: ``build``),
  that the checked code uses -- it or a subclass is built, passed, returned or imported outside its
  own body (a class nothing uses is an API for users, as an uncalled function is no entry);
- a patch of one: a class whose base is a patching class of the project -- one defining its own
  ``__class_getitem__`` (``typing.Generic`` parameters are no patch) -- subscripted with a table
  class (``class P(ArcticPatch[GPUModelRunner])``: its ``execute_model``);
- or a function stored onto a table class (``GPUModelRunner.execute_model = fn``,
  ``setattr(GPUModelRunner, "execute_model", fn)``, at module level or in an installing function).

A class is matched by the top-level package it is imported from and its name (frameworks move
classes between modules across versions). Nothing is added under configured entries or a recorded
decode path (they say what is hot). The call graph spreads the entries as any host step.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import libcst as cst

FuncId = tuple[str, str]
TABLE = Path(__file__).with_name("frameworkhooks.yaml")


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, frozenset[str]]]:
    """package -> class name -> the methods its loop calls every step."""
    import yaml  # local: only linking reads it

    data = yaml.safe_load(TABLE.read_text(encoding="utf-8")) or {}
    return {pkg: {cls: frozenset(methods) for cls, methods in classes.items()} for pkg, classes in data.items()}


def hooked_methods(dotted: str) -> frozenset[str]:
    """The per-step methods of the framework class an import names (``vllm.v1.worker.x.GPUModelRunner``)."""
    package, _, rest = dotted.partition(".")
    if not rest or dotted.startswith("."):
        return frozenset()
    return table().get(package, {}).get(rest.rpartition(".")[2], frozenset())


def subscript_args(stmt: cst.ClassDef, descriptor) -> tuple:
    """The imported classes a base is subscripted with: ``Runner`` of ``class P(Patch[Runner])``."""
    out = []
    for arg in stmt.bases:
        if isinstance(arg.value, cst.Subscript):
            for element in arg.value.slice:
                if isinstance(element.slice, cst.Index):
                    desc = descriptor(element.slice.value)
                    if desc is not None and desc[0] == "dotted":
                        out.append(desc)
    return tuple(out)


def framework_hooks(discovery) -> list[tuple[FuncId, str]]:
    """(method, reason) of every per-step method the checked code gives a framework class."""
    index, found, used = discovery.index, {}, Uses(discovery.infos)
    for info in discovery.infos:
        for qual, cls in sorted(info.classes.items()):
            for target, how in framework_bases(index, info, qual):
                if how == "subclass of" and not any(used(i, q) for i, q in [(info, qual), *index.subclasses((info, qual))]):
                    continue  # nothing hands it to the framework: an API for users, as an uncalled function
                for method in sorted(hooked_methods(target)):
                    if method in cls.methods and f"{qual}.{method}" in info.functions:
                        found.setdefault((info.path, f"{qual}.{method}"), f"{how} {target.rpartition('.')[2]}: "
                                         f"the framework calls its {method} every step")
        for fid, reason in stored_hooks(discovery, info):
            found.setdefault(fid, reason)
    return sorted(found.items())


class Uses:
    """Whether the checked code uses a class (builds, passes, returns or imports it) outside its own body."""

    def __init__(self, infos):
        self.infos, self._names = infos, None

    def __call__(self, info, qual: str) -> bool:
        if self._names is None:
            self._names = {}
            for other in self.infos:
                for dotted in other.imports.values():
                    self._names.setdefault(dotted.rpartition(".")[2], set()).add((other.path, "<import>"))
                for scope, flow in other.flows.items():
                    for st in flow.stmts:
                        if not (st[0] == "=" and st[2] and st[2][0] == "k"):  # not the class statement itself
                            for name in named(st):
                                self._names.setdefault(name, set()).add((other.path, scope))
        name = qual.rpartition(".")[2]
        return any(path != info.path or not (scope == qual or scope.startswith(qual + "."))
                   for path, scope in self._names.get(name, ()))


def named(ir) -> set[str]:
    """The names and attributes a statement's :mod:`.flowir` expressions mention."""
    out, stack = set(), [ir]
    while stack:
        node = stack.pop()
        if type(node) is tuple and node:
            if node[0] == "n" and len(node) == 2 and type(node[1]) is str:
                out.add(node[1])
            elif node[0] == "a" and len(node) == 3 and type(node[2]) is str:
                out.add(node[2])
            stack.extend(x for x in node if type(x) is tuple)
    return out


def framework_bases(index, info, qual: str) -> list[tuple[str, str]]:
    """(dotted framework class, "subclass of" | "patch of") for a class of the checked code."""
    out = []
    for base_info, name in index.mro((info, qual)):
        klass = base_info.classes[name]
        for desc in klass.bases:
            if desc[0] == "dotted" and index.class_ref(base_info, desc) is None and hooked_methods(desc[1]):
                out.append((desc[1], "subclass of"))
        if klass.base_args and any("__class_getitem__" in c.classes[n].methods for c, n in index.mro((base_info, name))[1:]):
            out += [(d[1], "patch of") for d in klass.base_args
                    if index.class_ref(base_info, d) is None and hooked_methods(d[1])]
    return out


def stored_hooks(discovery, info) -> list[tuple[FuncId, str]]:
    """``Cls.method = fn`` / ``setattr(Cls, "method", fn)`` with ``Cls`` a framework class: ``fn``
    (a def of this file, a scope's own or an imported project function)."""
    out = []
    for scope, flow in info.flows.items():
        names = {st[1][1]: st[2] for st in flow.stmts if st[0] == "=" and st[1][0] == "n" and st[2] and st[2][0] in "id"}
        for st in flow.stmts:
            if st[0] != "=" or st[1][0] != "a" or st[1][2] not in hooked_methods(spelled(st[1][1], info, names) or ""):
                continue
            target = spelled(st[1][1], info, names)
            if discovery.index.class_ref(info, ("dotted", target)) is not None:
                continue  # the checked code's own class: its calls are followed as they are
            fid = stored_function(discovery, info, st[2], names)
            if fid is not None:
                out.append((fid, f"stored as {target.rpartition('.')[2]}.{st[1][2]} in {scope}: "
                                 f"the framework calls it every step"))
    return out


def spelled(expr: tuple, info, names: dict) -> str | None:
    """The dotted import an expression names: ``Cls`` or ``mod.Cls`` through the file's (or the scope's) imports."""
    if expr[0] == "n":
        local = names.get(expr[1])
        return local[1] if local and local[0] == "i" else info.imports.get(expr[1])
    if expr[0] == "a":
        base = spelled(expr[1], info, names)
        return f"{base}.{expr[2]}" if base else None
    return None


def stored_function(discovery, info, value: tuple, names: dict) -> FuncId | None:
    """The project function a stored value names, else None."""
    if value[0] != "n":
        return None
    local = names.get(value[1])
    if local is not None and local[0] == "d" and local[1] in info.functions:
        return (info.path, local[1])
    if value[1] in info.functions:
        return (info.path, value[1])
    dotted = info.imports.get(value[1]) or (local[1] if local and local[0] == "i" else None)
    hit = discovery.index.resolve(info, dotted) if dotted else None
    return (hit[1].path, hit[2]) if hit is not None and hit[0] == "function" else None


def add_framework_hooks(discovery) -> None:
    """Adds the hooks as host entries of ``discovery``; called before it spreads its contexts."""
    if discovery.options.entries or discovery.options.recorded:
        return
    for fid, reason in framework_hooks(discovery):
        if not discovery.fn(fid).abstract:
            discovery.add("host", fid, reason)
