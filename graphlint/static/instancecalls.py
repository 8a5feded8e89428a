"""The calls of a module's ``forward``: every call of an instance, where each instance of its class is
kept in a field and only ever called there.

``forward`` is called by no name of its own (``self.codebook(x)`` runs ``Codebook.forward`` through
``nn.Module.__call__``), so what its calls pass was never known and its parameters were presumed
tensors: a Python int the caller passes made ``if rcp == 1:`` a read-back. The calls are known where
no instance can escape (:meth:`InstanceCalls.names`): the class has no project subclass, every read of
its name is a construction stored straight into a field (``self.codebook = Codebook(...)``), every
read of such a field calls it (``self.codebook(...)``) or loads another attribute from it
(``self.codebook.cb.unpack(...)``; ``.forward`` / ``.__call__`` count as escapes), and the class's
own methods never use ``self`` as a value. Those field names are then the names the method is called
under: :mod:`.paramkinds` agrees on what those calls pass only where every call so spelled is
resolved. A local, a list, an argument, a return, a string naming the class, a subclass: unknown, as before.
"""

from __future__ import annotations

from graphlint.static.flowir import last_name
from graphlint.static.index import Index

#: IR tags whose subtrees read no value: imports, defs, classes, annotations
_SKIP = frozenset(("i", "d", "k", "t", "la", "da"))
_CALLED = ("forward", "__call__")


class InstanceCalls:
    def __init__(self, index: Index):
        self.index = index
        self._scan: tuple | None = None
        self._memo: dict[tuple[str, str], frozenset[str] | None] = {}

    def names(self, target: tuple[str, str]) -> frozenset[str] | None:
        """The field names every call of ``target`` (a class's ``forward`` / ``__call__``) is spelled
        with; None where an instance may be called some other way."""
        if target not in self._memo:
            self._memo[target] = self._names(target)
        return self._memo[target]

    def _names(self, target: tuple[str, str]) -> frozenset[str] | None:
        cls, _, method = target[1].rpartition(".")
        info = next((i for i in self.index.infos if i.path == target[0]), None)
        if method not in _CALLED or info is None or cls not in info.classes or self.index.subclasses((info, cls)):
            return None
        reads, stores, escaped, selves, _ = self._scanned()
        name = cls.rsplit(".", 1)[-1]
        fields = stores.get(name)
        if not fields or name in reads or fields & escaped:
            return None
        if any(f"{i.path}:{c}" in selves for i, c in self.index.mro((info, cls))):
            return None  # ``self`` used as a value in its own methods: handed somewhere
        return frozenset(fields)

    def held(self, field: str) -> set[str] | None:
        """The names of the classes constructions stored into a field named ``field`` anywhere build;
        None where some store of it is anything else (a function, another field, a call's result)."""
        return self._scanned()[4].get(field)

    def _scanned(self) -> tuple:
        """(names read as values other than a field's construction, class name -> the fields its
        constructions are stored in, field names read as values, classes whose methods use ``self`` as
        one, field name -> :meth:`held`)."""
        if self._scan is None:
            reads: set[str] = set()
            stores: dict[str, set[str]] = {}
            escaped: set[str] = set()
            selves: set[str] = set()
            held: dict[str, set[str] | None] = {}
            for info in self.index.infos:
                for flow in info.flows.values():
                    built: set[int] = set()  # statements whose call builds an object stored into a field
                    for at, stmt in enumerate(flow.stmts):
                        if stmt[:1] != ("=",) or type(stmt[1]) is not tuple or stmt[1][:1] != ("a",):
                            continue
                        field, value = stmt[1][2], stmt[2]
                        if type(value) is tuple and value[:1] == ("c",) and last_name(value[1]):
                            stores.setdefault(last_name(value[1]), set()).add(field)
                            if held.get(field, set()) is not None:
                                held.setdefault(field, set()).add(last_name(value[1]))
                            built.add(at)
                            if at and flow.stmts[at - 1] == ("e", value):
                                built.add(at - 1)  # the same call, recorded as run just before
                        else:
                            held[field] = None
                    values: set[str] = set()
                    for at, stmt in enumerate(flow.stmts):
                        _statement(stmt, at in built, reads, escaped, values)
                    if flow.cls and "self" in values:
                        selves.add(f"{info.path}:{flow.cls}")
            self._scan = (reads, stores, escaped, selves, held)
        return self._scan


def _statement(stmt: tuple, built: bool, reads: set[str], escaped: set[str], values: set[str]) -> None:
    """What one flow statement reads: class names into ``reads`` (``built``: the statement's call
    constructs what a field stores, its callee no read), field names read as a value into ``escaped``,
    plain names read as a value into ``values``."""
    tag = stmt[0] if stmt else None
    top = "built" if built else "value"
    if tag in ("=", "set"):
        target = stmt[1]
        if type(target) is tuple and target[:1] in (("a",), ("s",)):
            _walk(target[1], "base", reads, escaped, values)
        for part in stmt[2:]:
            _walk(part, top, reads, escaped, values)
    elif tag == "e" and type(stmt[1]) is tuple and stmt[1][:1] == ("a",):
        _walk(stmt[1][1], "base", reads, escaped, values)  # ``if self.f is None:``: a test, no hand-off
    else:
        for part in stmt[1:]:
            _walk(part, top, reads, escaped, values)


def _walk(ir, ctx: str, reads: set[str], escaped: set[str], values: set[str]) -> None:
    stack = [(ir, ctx)]
    while stack:
        node, ctx = stack.pop()
        if type(node) is not tuple or not node:
            continue
        tag = node[0]
        if type(tag) is not str:
            stack.extend((part, "value") for part in node)
            continue
        if tag in _SKIP:
            continue
        if tag == "n" and len(node) == 2:
            reads.add(node[1])
            if ctx != "base":
                values.add(node[1])
        elif tag == "a" and len(node) == 3 and type(node[2]) is str:
            if ctx == "value":
                escaped.add(node[2])
            stack.append((node[1], "value" if node[2] in _CALLED else "base"))
        elif tag == "c" and len(node) == 4:
            if node[1] == ("n", "super"):
                continue  # ``super(Cls, self)``: neither an instance nor the class handed on
            if ctx != "built":
                stack.append((node[1], "callee"))
            stack.extend((part, "value") for part in node[2])
            stack.extend((part[1] if type(part) is tuple and len(part) == 2 else part, "value") for part in node[3])
        elif tag == "str" and type(node[1]) is str:
            reads.update(node[1].replace(":", ".").split("."))
        else:
            stack.extend((part, "value") for part in node[1:])


def field_calls(info, fn, expr: tuple, fields, index: Index, instances: InstanceCalls) -> list[tuple[str, str]]:
    """``self.f(...)``: the ``forward`` (else ``__call__``) of each class the field is built as, where
    those are all any field so named is ever given and each is called only through such fields (not
    an annotation's cone: a subclass's override may run); else nothing."""
    if expr[:2] != ("a", ("n", "self")) or not fn.cls:
        return []
    out, names = [], set()
    for ref, cone in fields.of(info, fn.cls, expr[2]):
        hit = None if cone else index.find_method(ref, "forward") or index.find_method(ref, "__call__")
        if hit is None or expr[2] not in (instances.names((hit[0].path, hit[1])) or ()):
            return []
        out.append((hit[0].path, hit[1]))
        names.add(ref[1].rsplit(".", 1)[-1])
    return out if names and names == instances.held(expr[2]) else []
