"""Modules swapped into a field by a method nothing names: not what the field holds when decoding.

``def freeze_llm(self, ...): self.embed_tokens = PartiallyFrozenEmbedding(self.embed_tokens)``
replaces a sub-module its class builds in ``__init__``, for training. A flow-insensitive
points-to counts every store into a field wherever it is, so ``self.embed_tokens(ids)`` in the
decode step also runs ``PartiallyFrozenEmbedding.forward``, although no code the engine runs
ever calls ``freeze_llm``. A field's points-to set should count only the stores of code that may
run; here "may run" is decided by names, on the safe side:

- the store is on ``self``, in a method (not a dunder: ``__init__``, ``__setstate__`` and the
  like run implicitly), of a class whose own ``__init__`` stores the same field (a swap of what
  construction built; a field only a hook fills, as Lightning's ``configure_model``, keeps every
  store);
- the method is not decorated (a decorator may register it with a library that calls it), and
  its name is loaded nowhere in the analysed code: no attribute or plain name spelled so (``fset =
  freeze`` in the class body), no string naming it (``getattr(model, "freeze_llm")``, a method table), no computed ``getattr`` whose
  literal prefix it starts with -- on ``self`` in its class's family (``getattr(self, f.name)`` in
  a dataclass names its own fields), on anything else but an imported name (``getattr(torch,
  cfg.dtype)``, ``getattr(kernels, op)``: a module's attributes are no bound methods; an imported
  class's unbound method so fetched is not followed).

Such a store is held back while the scopes compile and made at the end if some load did name the
method after all. Nothing else of the method changes (what it calls is still in the call graph)."""

from __future__ import annotations

#: the IR of ``self`` (:mod:`.flowir`)
SELF = ("n", "self")


class UnnamedStores:
    """Held-back field stores of unnamed methods (see the module docstring)."""

    def __init__(self, infos) -> None:
        self.names: set[str] = set()  # attribute names and strings the compiled code loads
        self.prefixes: set[str] = set()  # literal prefixes of computed ``getattr`` names
        self.own: set[tuple[str, str, str]] = set()  # (path, class, prefix) of ``getattr(self, ...)``
        self.held: list[tuple] = []  # (method name, object node, field, value node, path, class)
        self.inits: dict[tuple[str, str], frozenset[str]] = {}  # (path, class) -> fields its __init__ stores
        for info in infos:
            for qual, flow in info.flows.items():
                if flow.kind == "class":  # ``@register`` / ``@hook``: a decorated method counts as named
                    self.names.update(s[1][1] for s in flow.stmts
                                      if s[0] == "=" and s[1][0] == "n" and s[2] and s[2][0] == "dec")
                if flow.cls and qual == flow.cls + ".__init__":
                    self.inits[(info.path, flow.cls)] = frozenset(
                        s[1][2] for s in flow.stmts if s[0] == "=" and s[1][0] == "a" and s[1][1] == SELF)

    def loaded(self, ir: tuple, path: str, cls: str, imported) -> None:
        """Record what a compiled expression may name (an attribute, a string, a getattr prefix);
        ``cls`` is the class of the scope's ``self``, ``imported(ir)`` whether ``ir`` names an import."""
        tag = ir[0]
        if tag == "a":
            self.names.add(ir[2])
        elif tag == "n" or tag == "str":
            self.names.add(ir[1])
        elif tag == "g":
            if ir[1] == SELF and cls:
                self.own.add((path, cls, ir[2] or ""))
            elif not imported(ir[1]):
                self.prefixes.add(ir[2] or "")

    def hold(self, flow, qual: str, path: str, target: tuple, obj: int, value: int) -> bool:
        """Whether a store ``target = value`` waits for the end of compiling (True: not made now)."""
        if target[1] != SELF or flow is None or flow.fkind != "m" or not flow.cls:
            return False
        name = qual.rpartition(".")[2]
        if name.startswith("__") or target[2] not in self.inits.get((path, flow.cls), ()):
            return False
        self.held.append((name, obj, target[2], value, path, flow.cls))
        return True

    def release(self, store, family) -> None:
        """Make the held stores of every method some compiled code names (``store(obj, field, value)``);
        ``family(path, cls)`` is the set of (path, class) of a class's bases and subclasses."""
        for name, obj, attr, value, path, cls in self.held:
            if name in self.names or any(name.startswith(p) for p in self.prefixes) or any(
                    name.startswith(p) and (where, owner) in family(path, cls) for where, owner, p in self.own):
                store(obj, attr, value)
        self.held = []
