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
resolved. A local, an argument, a return, a string naming the class, a subclass: unknown, as before.

A list of instances is followed the same way: a field bound only to a list of constructions
(``self.blocks = nn.ModuleList([Block(...) for _ in range(n)])``) whose every read is a loop over its
elements (``for block in self.blocks:``), the loop's name bound to nothing else and only ever called
(``x = block(x, **kwargs)``): such calls, counted per field (:data:`ELEMENT`), are the method's
calls too (:func:`element_calls`).
An index (``self.blocks[i](x)``), ``len(self.blocks)``, ``enumerate`` or ``zip`` of it, a
``nn.Sequential`` (calling it calls every element): unknown, as before.
"""

from __future__ import annotations

from graphlint.static.flowir import last_name
from graphlint.static.index import Index

#: IR tags whose subtrees read no value: imports, defs, classes, annotations
_SKIP = frozenset(("i", "d", "k", "t", "la", "da"))
_CALLED = ("forward", "__call__")
#: the prefix of a list field's name, the call name of its elements' locals (``block`` of ``for block in
#: self.blocks``: ``[]blocks``)
ELEMENT = "[]"


class InstanceCalls:
    def __init__(self, index: Index):
        self.index = index
        self._scan: tuple | None = None
        #: (class name -> list fields holding its instances, field -> :meth:`held_list`, list field ->
        #: the local names its elements are bound to and called by)
        self._lists: tuple[dict, dict, dict] = ({}, {}, {})
        self._elements: dict[tuple[str, str], dict[str, str]] = {}  # (path, function) -> :func:`_element_bindings`
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
        fields, lists = stores.get(name, set()), self._lists[0].get(name, set())
        if not fields and not lists or name in reads or (fields | lists) & escaped or fields & self._lists[2].keys():
            return None  # (an instance's field iterated over: its elements called, not it)
        if any(f"{i.path}:{c}" in selves for i, c in self.index.mro((info, cls))):
            return None  # ``self`` used as a value in its own methods: handed somewhere
        return frozenset(fields | {ELEMENT + f for f in lists if self._lists[2].get(f)})

    def call_names(self, info, fn, expr: tuple, last: str) -> tuple[str, ...]:
        """The names a call site counts under: its callee's last name, and for a list element's local
        the field's (:data:`ELEMENT`)."""
        field = self.element_field(info, fn, last) if expr[0] == "n" else None
        return (last, ELEMENT + field) if field else (last,)

    def element_field(self, info, fn, name: str) -> str | None:
        """The field whose list elements ``name`` is bound to in ``fn``, if only to those: its calls are
        counted under that field (:data:`ELEMENT`), not with every other call of a ``block``."""
        key = (info.path, fn.qualname)
        if key not in self._elements:
            flow = info.flows.get(fn.qualname)
            self._elements[key] = _element_bindings(flow.stmts) if flow is not None else {}
        return self._elements[key].get(name)

    def held_list(self, field: str) -> set[str] | None:
        """The names of the classes every store of a field named ``field`` builds a list of; None where
        some store of it is anything else (:func:`element_calls`)."""
        self._scanned()
        return self._lists[1].get(field)

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
            listed, held_lists, element_names = self._lists
            for info in self.index.infos:
                for flow in info.flows.values():
                    built: set[int] = set()  # statements whose call builds an object stored into a field
                    building: set[int] = set()  # statements that build a list of them stored into a field
                    for at, stmt in enumerate(flow.stmts):
                        if stmt[:1] != ("=",) or type(stmt[1]) is not tuple or stmt[1][:1] != ("a",):
                            continue
                        field, value = stmt[1][2], stmt[2]
                        built_list = constructed_list(value)
                        if held_lists.get(field, set()) is not None:
                            held_lists[field] = None if built_list is None else {
                                *held_lists.get(field, ()), *(last_name(c[1]) for c in built_list)}
                        if built_list is not None:
                            held[field] = None  # no instance itself: ``self.blocks(x)`` runs no element
                            for call in built_list:
                                listed.setdefault(last_name(call[1]), set()).add(field)
                            building.add(at)
                            before = at - 1  # the same calls, recorded as run just before
                            while before >= 0 and flow.stmts[before][:1] == ("e",) \
                                    and (flow.stmts[before][1] == value or flow.stmts[before][1] in built_list):
                                (building if flow.stmts[before][1] == value else built).add(before)
                                before -= 1
                        elif type(value) is tuple and value[:1] == ("c",) and last_name(value[1]):
                            stores.setdefault(last_name(value[1]), set()).add(field)
                            if held.get(field, set()) is not None:
                                held.setdefault(field, set()).add(last_name(value[1]))
                            built.add(at)
                            if at and flow.stmts[at - 1] == ("e", value):
                                built.add(at - 1)  # the same call, recorded as run just before
                        else:
                            held[field] = None
                    values: set[str] = set()
                    elements = _element_bindings(flow.stmts)
                    for at, stmt in enumerate(flow.stmts):
                        if stmt[:1] == ("=",) and type(stmt[1]) is tuple and stmt[1][:1] == ("n",) \
                                and stmt[1][1] in elements:
                            _walk(stmt[2][1][1], "base", reads, escaped, values)  # ``for b in self.blocks``
                            continue
                        _statement(stmt, "list" if at in building else at in built, reads, escaped, values)
                    if flow.cls and "self" in values:
                        selves.add(f"{info.path}:{flow.cls}")
                    for local, field in elements.items():
                        if not _only_called(flow.stmts, local):
                            escaped.add(field)  # an element handed on, not only called
                        else:
                            element_names.setdefault(field, set()).add(local)
            self._scan = (reads, stores, escaped, selves, held)
        return self._scan


def _statement(stmt: tuple, built: bool, reads: set[str], escaped: set[str], values: set[str]) -> None:
    """What one flow statement reads: class names into ``reads`` (``built``: the statement's call
    constructs what a field stores, its callee no read), field names read as a value into ``escaped``,
    plain names read as a value into ``values``."""
    tag = stmt[0] if stmt else None
    top = "list" if built == "list" else "built" if built else "value"
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
        if ctx == "list":  # ``nn.ModuleList([Block(...) ...])``: each element built, no read of its class
            if tag == "c":
                stack.extend((part, "list") for part in node[2])
            elif tag == "l":
                stack.extend((part, "built") for part in node[2])
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


def instance_calls(info, fn, expr: tuple, fields, index: Index, instances: InstanceCalls) -> list[tuple[str, str]]:
    """The ``forward`` s a call of an instance runs: of a field (``self.f(...)``) or a list's element."""
    return field_calls(info, fn, expr, fields, index, instances) or element_calls(info, fn, expr, fields, index, instances)


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


def constructed_list(value) -> tuple | None:
    """The constructions of ``[Cls(...) for _ in ...]``, ``[A(...), B(...)]`` or such a list in
    ``nn.ModuleList(...)``: every element a call of a named callee; else None."""
    if type(value) is tuple and value[:1] == ("c",) and last_name(value[1]) == "ModuleList" \
            and len(value[2]) == 1 and not value[3]:
        value = value[2][0]
    if type(value) is not tuple or value[:1] != ("l",) or value[3] or not value[2]:
        return None
    calls = value[2]
    return calls if all(type(c) is tuple and c[:1] == ("c",) and last_name(c[1]) for c in calls) else None


def _element_bindings(stmts) -> dict[str, str]:
    """Local -> list field, for the locals every binding of which is an element of a field's list
    (``for block in self.blocks:``)."""
    found: dict[str, str | None] = {}
    for stmt in stmts:
        if stmt[:1] != ("=",) or type(stmt[1]) is not tuple or stmt[1][:1] != ("n",):
            continue
        value, local = stmt[2], stmt[1][1]
        field = value[1][2] if type(value) is tuple and value[:1] == ("s",) and type(value[1]) is tuple \
            and value[1][:1] == ("a",) and len(value) == 2 else None
        found[local] = field if found.get(local, field) == field else None
    return {local: field for local, field in found.items() if field is not None}


def _only_called(stmts, local: str) -> bool:
    """Every read of ``local`` in the flow calls it (``block(x)``; ``block.attn(x)`` reads a field of it)."""
    name = ("n", local)
    stack = [part for stmt in stmts for part in (stmt[2:] if stmt[:1] == ("=",) and stmt[1] == name else stmt[1:])]
    while stack:
        node = stack.pop()
        if type(node) is not tuple or not node:
            continue
        if node == name:
            return False
        if node[0] == "c" and len(node) == 4 and node[1] == name:
            stack.extend((*node[2], *node[3]))
        elif node[0] == "a" and len(node) == 3 and node[1] == name:
            if node[2] in _CALLED:
                return False  # ``block.forward(x)``: a call under another name
        elif node[0] not in _SKIP:
            stack.extend(node[1:] if type(node[0]) is str else node)
    return True


def element_calls(info, fn, expr: tuple, fields, index: Index, instances: InstanceCalls) -> list[tuple[str, str]]:
    """``block(...)`` with ``block`` bound only to elements of ``self.blocks``: the ``forward`` (else
    ``__call__``) of each class the field's lists are built of, where those are all any field so named
    is ever given and each instance is called only through such names; else nothing."""
    flow = info.flows.get(fn.qualname)
    if expr[0] != "n" or not fn.cls or flow is None:
        return []
    field = _element_bindings(flow.stmts).get(expr[1])
    if field is None or any(stmt[2][1][1] != ("n", "self") for stmt in flow.stmts if stmt[:2] == ("=", expr)):
        return []  # ``for block in self.blocks``: the lists of this class's field
    out, names = set(), set()
    for owner_info, _, by_field in fields.methods(info, fn.cls):
        for value in by_field.get(field, ()):
            for call in constructed_list(value) or ():
                ref = fields.class_of(owner_info, call[1])
                hit = ref and (index.find_method(ref, "forward") or index.find_method(ref, "__call__"))
                if not hit or ELEMENT + field not in (instances.names((hit[0].path, hit[1])) or ()):
                    return []
                out.add((hit[0].path, hit[1]))
                names.add(ref[1].rsplit(".", 1)[-1])
    return sorted(out) if names and names == instances.held_list(field) else []
