"""Modules and classes loaded by a name a string spells: a points-to over string constants.

An engine that supports many architectures often names its model class by a string
(``ModelSpec("llama", "pkg.models.llama:LlamaModel")``, ``MODULE_MAP = {"Llama":
f"{MODELS}.llama.LlamaForCausalLM"}``) and loads it at run time: ``mod, name = path.split(":");
getattr(importlib.import_module(mod), name)``. The strings are values of the points-to analysis,
as classes are, and flow the same ways (assignments, parameters, fields, containers, returns):

- a string literal that is a dotted path (:func:`path_like`) is ``("Str", text)`` when its module
  part names a project module (a longest prefix of it: ``"pkg.models.llama.Llama"`` names
  ``pkg/models/llama.py``); other strings are nothing, so a library's names never enter the solve;
- an f-string (one or two expressions) is the paths the strings reaching them spell with its
  literal parts (``f"{MODELS}.llama.Llama"`` with ``MODELS = "pkg.models"``; ``__name__`` is the
  module's own dotted name);
- ``s.split(sep)`` / ``rsplit`` / ``partition`` / ``rpartition`` of a path is a container of its
  module part and its last name, whatever ``sep`` (the summary keeps no separator); a slice of a
  string is the string (:mod:`.flowir`), so ``path[:dot]`` and ``path[dot + 1:]`` are the whole path;
- ``importlib.import_module(s)`` is the module ``s`` names (its longest module prefix: the whole
  path a slice left), as ``("Mod", path, "str")``; a computed ``getattr`` on it is the attribute
  each identifier string reaching the name spells, and for a dotted string its last name, looked
  up only in the module its module part names (:meth:`ClassPaths.getattr_path`). A module so
  imported never hands out every class it defines (``getattr(module, prefix + x)`` does, for a
  module imported by name: :meth:`.libflows.LibraryFlows.getattr_prefix`).

**How many classes one import may load** (the decision, measured on lite_llama's six specs and
lmdeploy's ~100 class paths): a node keeps at most :data:`.pointsto.CAP` values, cut in id order,
so a registry of a hundred paths reaches a helper's parameter as an arbitrary sixteen, and the
classes they load would push the graph runner out of the agent's field beside them (branch
``lmdreach``) or, folded into one family value, pour every class into every generic helper
(branch ``registry``). So an import by string is decided after the solve (:meth:`settle`, then
solved again): a site whose strings name at most :data:`NARROW` modules, none of them cut on the
way (no node at its cap holds one of them), loads those modules; a wider site is a choice the
analysis cannot narrow (the key comes from a checkpoint's config) and loads nothing, as before --
its call stays unresolved, and ``graphlint entries`` says so.
"""

from __future__ import annotations

from graphlint.static.pointsto import CAP

#: calls that import a module by a computed name
DYNAMIC_IMPORTS = frozenset(("importlib.import_module",))
#: string methods that take a path apart (:meth:`ClassPaths.split_path`)
SPLITS = frozenset(("split", "rsplit", "partition", "rpartition"))
#: the most modules one import by string may load: more is a family chosen at run time
NARROW = CAP
#: the most paths one f-string spells (the product of the strings reaching its expressions)
MAX_SPELLED = 64
#: the tag of a module imported by string (``("Mod", path, BY_STRING)``)
BY_STRING = "str"


def path_like(text: str) -> bool:
    """``"pkg.models.llama"``, ``"pkg.models.llama.Llama"``, ``"pkg.models.llama:Llama"``: dotted
    identifiers, at least two, at most one ``:`` (before the last name)."""
    module, colon, last = text.partition(":")
    parts = module.split(".") + ([last] if colon else [])
    return len(parts) >= 2 and all(p.isidentifier() for p in parts)


def halves(text: str) -> tuple[str, str]:
    """``"a.b:C"`` / ``"a.b.C"`` -> ``("a.b", "C")``: the module part and the last name."""
    if ":" in text:
        module, _, last = text.partition(":")
        return module, last
    module, _, last = text.rpartition(".")
    return module, last


class ClassPaths:
    """A mixin of :class:`graphlint.static.flowlink.Linker` (its solver ``s``, objects ``o``,
    index ``index`` and module names ``names``)."""

    def string(self, dst: int, text: str) -> None:
        """A string literal: an identifier (an attribute a computed ``getattr`` may name), or a
        dotted path naming a project module."""
        if text.isidentifier() or (path_like(text) and self.path_module(text) is not None):
            self.s.add_values(dst, (("Str", text),))

    def path_module(self, text: str) -> str | None:
        """The file of the project module the longest prefix of ``text``'s module part names."""
        memo = self.__dict__.setdefault("_path_modules", {})
        if text in memo:
            return memo[text]
        parts = text.partition(":")[0].split(".")
        found = None
        for cut in range(len(parts), 0, -1):
            module = self.index.find_module(".".join(parts[:cut]))
            if module is not None:
                found = module.path
                break
        memo[text] = found
        return found

    def concat(self, dst: int, pieces: list) -> None:
        """An f-string: literal texts and nodes; the paths each choice of a string per node spells
        (at most :data:`MAX_SPELLED` of them)."""
        def on(_values):
            spelled = [""]
            for piece in pieces:
                if type(piece) is str:
                    spelled = [head + piece for head in spelled]
                    continue
                texts = [self.s.value_of[v][1] for v in sorted(self.s.pts.get(piece, ()))
                         if self.s.value_of[v][0] == "Str"]
                spelled = [head + text for head in spelled for text in texts][:MAX_SPELLED]
            for text in spelled:
                if path_like(text):
                    self.string(dst, text)
        for piece in pieces:
            if type(piece) is not str:
                self.s.watch(piece, on)

    def split_path(self, recv: int, dst: int) -> None:
        """``path.split(":")``: a container of the module part and the last name of each path
        reaching ``recv`` (an identifier is its own part)."""
        parts = ("L", "", ("split", dst), 0)
        self.s.add_values(dst, (parts,))
        elems = self.o.elems(parts)

        def on(values):
            for v in values:
                if v[0] == "Str":
                    for text in (halves(v[1]) if not v[1].isidentifier() else (v[1],)):
                        self.string(elems, text)
        self.s.watch(recv, on)

    def dynamic_import(self, arg: int, dst: int) -> None:
        """``importlib.import_module(arg)``: decided after the solve (:meth:`settle`)."""
        self.__dict__.setdefault("_imports", []).append([arg, dst, set(), False])

    def getattr_path(self, obj: int, text: str, dst: int) -> None:
        """``getattr(module, s)`` with ``s`` a dotted path (a slice of one): its last name, in the
        module its module part names."""
        module = self.path_module(text)
        last = halves(text)[1]

        def on(values):
            for v in values:
                if v[0] == "Mod" and v[1] == module and self.o.once(("getattr-path", obj, text, dst)):
                    self.module_attr(v, last, dst)
        self.s.watch(obj, on)

    def settle(self) -> bool:
        """After a solve: each import by string loads the modules its strings name, when they are
        few and none was cut on the way (see the module's docstring). True when a module was added
        (the caller solves again: the classes it hands out may carry more strings)."""
        sites = self.__dict__.get("_imports", ())
        if not sites:
            return False
        s, added = self.s, False
        cut: set[int] | None = None
        for site in sites:
            arg, dst, done, wide = site
            if wide:
                continue
            held = [v for v in s.pts.get(arg, ()) if v not in done and s.value_of[v][0] == "Str"]
            if not held:
                continue
            if cut is None:
                cut = {v for n in s.full for v in s.pts.get(n, ()) if s.value_of[v][0] == "Str"}
            modules = {self.path_module(s.value_of[v][1]) for v in held} - {None}
            known = {self.path_module(s.value_of[v][1]) for v in done} - {None}
            if arg in s.full or cut.intersection(held) or cut.intersection(done) or len(modules | known) > NARROW:
                site[3] = True  # a family chosen at run time: nothing (and nothing more) is loaded
                continue
            done.update(held)
            new = sorted(modules - known)
            if new:
                s.add_values(dst, [("Mod", path, BY_STRING) for path in new])
                added = True
        return added
