"""Where the analysed code stores values into fields: what :mod:`.argvalues` gives a
configuration field (``config.x``, ``self.x``). Recorded by the walker per file
(``ModuleInfo.field_stores``), cached with the summary."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor, on_host
from graphlint.static.cstwalk import called_name, constant_name, preorder
from graphlint.static.names import dotted_name, resolve
from graphlint.static.oncebound import sole_assignments
from graphlint.static.valueatoms import literal


def _store(info, attr: str, value: tuple | None) -> None:
    found = info.field_stores.setdefault(attr, [])
    if None in found or value in found:
        return
    found[:] = [None] if value is None or len(found) >= 8 else [*found, value]


def _own(info, attr: str, owner: tuple | None, value: tuple | None) -> None:
    """The store again, with the object it stores into (``owned_stores``, :mod:`.selffields` reads
    them): ``("self", class, first)`` for ``self.x = v`` in a method of ``class`` (``first``: a
    statement of its ``__init__`` that always runs, :func:`_always`), ``("new", name)`` for a keyword
    of a class construction, ``("fill",)`` for a ``setattr`` under ``if not hasattr(...)`` of the
    same object and name (it adds a field the object lacks, never changes one it has), None for any
    other object. ``(None, None)``: something unknown stored into any object."""
    found = info.owned_stores.setdefault(attr, [])
    if (None, None) in found or (owner, value) in found:
        return
    found[:] = [(None, None)] if (value is None and owner is None) or len(found) >= 32 else [*found, (owner, value)]


def _self_owner(walker, receiver: cst.BaseExpression) -> tuple | None:
    """``("self", class, first)`` where ``receiver`` is ``self`` in a method (see :func:`_own`)."""
    if not (type(receiver) is cst.Name and receiver.value == "self" and walker.class_stack
            and walker.func.qualname != "<module>"):
        return None
    cls = walker.class_stack[-1].qualname
    return ("self", cls, walker.func.qualname == f"{cls}.__init__" and _always(walker))


def _always(walker) -> bool:
    """Whether the statement being walked sits directly in its function's body, after no statement
    that may return (it runs on every call that returns)."""
    body = walker.values.body
    if body is None or walker.values.cond or walker.values.in_try:
        return False
    for line in getattr(body, "body", ()):
        if type(line) is cst.SimpleStatementLine and any(small is walker.stmt for small in line.body):
            return True
        if any(type(node) is cst.Return for node in preorder(line)):
            return False
    return False


def lacked_attrs(test: cst.BaseExpression) -> tuple[tuple[str, str], ...]:
    """``if not hasattr(obj, name):`` (or such a conjunct of an ``and``) -> ((obj, name),), each
    spelled as :func:`_spelled` does: what a ``setattr`` in the body only adds."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return lacked_attrs(test.left) + lacked_attrs(test.right)
    if not (type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Call):
        return ()
    call = test.expression
    if not (type(call.func) is cst.Name and call.func.value == "hasattr" and len(call.args) == 2):
        return ()
    pair = (_spelled(call.args[0].value), _spelled(call.args[1].value))
    return (pair,) if all(pair) else ()


def _spelled(node: cst.BaseExpression) -> str:
    """A name, a dotted attribute chain of one or a string literal, as text; "" for anything else."""
    if type(node) is cst.SimpleString:
        return repr(literal(node)[1]) if literal(node) else ""
    return dotted_name(node) or ""


def _qualified(walker, node: cst.BaseExpression | None) -> tuple | None:
    """A stored value, a parameter qualified by its function (its callers give its values)."""
    value = walker.values.value(node) if node is not None else None
    if value is None or value[0] == "self":
        return None
    return ("p", walker.func.qualname, value[1]) if value[0] == "p" else value


#: stored values :mod:`.fieldkinds` reads besides the others (both "some object", as ``("o",)``, to
#: :mod:`.argvalues`): a tensor on the host (:mod:`.cputensors`), and the same-named field of an
#: object, or a slice or element of it (``self.key = self.key[n:]``, ``node.key = self.key[:n]``)
HOST_STORE = ("o", "host")
SAME_STORE = ("o", "same")
#: where a field's first ``None`` is its initial value, not a reset (import-time code included)
CONSTRUCTORS = frozenset(("__init__", "__post_init__", "__new__", "<module>"))


def _hosted(walker, attr: str, value: cst.BaseExpression | None) -> tuple | None:
    if value is None:
        return None
    inner = value
    while isinstance(inner, cst.Subscript):
        inner = inner.value
    if isinstance(inner, cst.Attribute) and inner.attr.value == attr:
        return SAME_STORE
    return HOST_STORE if is_cpu_tensor(value, walker.oracle) else None


def _tensor_store(walker, attr: str, value: cst.BaseExpression | None, placeholder: bool = False) -> None:
    """Note whether a store into ``attr`` is a tensor not known to be on the host (``obj.pos =
    counter[:1]``, ``self.mask = torch.zeros(n, device=d)``); a literal ``None`` (``placeholder``,
    ``obj.f = None``) says nothing, anything else -- a parameter no annotation types, a number, an
    unknown value -- makes the field no tensor field."""
    if placeholder or type(value) is cst.Name and value.value == "None":
        return
    oracle = walker.oracle
    tensor = value is not None and (oracle.is_tensor(value) or _device_constant(oracle, value)) \
        and not on_host(value, oracle) and not (type(value) is cst.Name and value.value in oracle.fn.presumed)
    stores = walker.info.tensor_stores
    stores[attr] = stores.get(attr, True) and tensor


def _device_constant(oracle, value: cst.BaseExpression) -> bool:
    """``KV_LEN[:n]`` where the function binds ``KV_LEN`` only to ``torch.zeros(..., device=d)``: an
    UPPER_CASE local is no tensor to the walk (a kernel's meta-parameter by convention), but one a
    torch factory places on a device, sliced into an object's field, is that device tensor."""
    while type(value) is cst.Subscript:
        value = value.value
    defn = oracle.fn.defn
    if not (type(value) is cst.Name and constant_name(value) and defn is not None):
        return False
    found = sole_assignments(oracle.fn, value.value)
    return bool(found) and all(
        type(v) is cst.Call and (resolve(v.func, oracle.imports) or "").startswith("torch.") and any(
            a.keyword is not None and a.keyword.value == "device" and not on_host(v, oracle) for a in v.args)
        for v in found)


def tensor_fields(infos) -> tuple[set[str], set[str]]:
    """(field names every store of which anywhere in the project is a tensor not known to be on the
    host, a literal ``None`` aside; the classes whose methods ``setattr(self, name, v)`` with a
    computed name, whose objects may hold anything). By name, over every object, as
    :func:`number_fields` and :meth:`.fieldkinds.FieldKinds.host_everywhere` decide
    (:mod:`.fieldkinds` asks it only of a project class whose bases are the project's, when nothing
    else says what the field holds). A computed ``setattr`` on any other object: no field is one."""
    marks: dict[str, bool] = {}
    for info in infos:
        for attr, tensor in info.tensor_stores.items():
            marks[attr] = marks.get(attr, True) and tensor
    if "*" in marks:
        return set(), set()
    return {a for a, tensor in marks.items() if tensor and a[:1] != "*"}, {a[1:] for a in marks if a[:1] == "*"}


def record_stores(walker, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
    """``obj.x = v`` anywhere, ``x = v`` in a class body (a class attribute or a dataclass field's
    default: ``("k", class, value)``, unknown once the class is built from ``**kwargs``)."""
    info = walker.info
    if type(target) in (cst.Tuple, cst.List):
        for el in target.elements:
            record_stores(walker, el.value, None)
    elif type(target) is cst.Attribute:
        _tensor_store(walker, target.attr.value, value)
        stored = _hosted(walker, target.attr.value, value) or _qualified(walker, value)
        _store(info, target.attr.value, stored)
        _own(info, target.attr.value, _self_owner(walker, target.value), stored)
        if walker.func.name not in CONSTRUCTORS and not (type(value) is cst.Name and value.value == "True"):
            info.field_resets.add("!" + target.attr.value)  # a flag armed again (:mod:`.lazyfields`)
            if type(value) is cst.Name and value.value == "None":
                info.field_resets.add(target.attr.value)
    elif type(target) is cst.Name and walker.class_stack and walker.func.qualname == "<module>":
        const = literal(value) if value is not None else None
        stored = ("k", walker.class_stack[-1].qualname, const[1]) if const else None
        _tensor_store(walker, target.value, value, const is not None and const[1] is None)
        _store(info, target.value, stored)
        _own(info, target.value, None, stored)


def record_construction(walker, call: cst.Call) -> None:
    """``Config(attn="eager")``: a keyword argument of a class construction is a store into that
    field; ``Config(**d)`` / ``cls(**d)`` makes every class-level default of the class unknown."""
    func = call.func
    name = called_name(func)
    if name == "cls" and walker.class_stack:
        name = walker.class_stack[-1].qualname.rpartition(".")[2]
    if not name[:1].isupper() and name != "cls":
        return
    for arg in call.args:
        if arg.star == "**":
            _store(walker.info, "**", ("k", name, None))
        elif arg.keyword is not None:
            _tensor_store(walker, arg.keyword.value, arg.value)
            stored = _qualified(walker, arg.value)
            _store(walker.info, arg.keyword.value, stored)
            _own(walker.info, arg.keyword.value, ("new", name), stored)


def store_field(walker, key: str, value: cst.BaseExpression | None, owner: cst.BaseExpression | None = None,
                name: cst.BaseExpression | None = None) -> None:
    """``setattr(obj, "x", v)`` stores into ``x``; ``setattr(obj, name, v)`` with a computed name
    (key "*") into any field: every field is unknown then (:mod:`.argvalues`). What :mod:`.fieldkinds`
    may still say of such a store is :func:`computed_store`'s."""
    stored = _qualified(walker, value) if key != "*" else computed_store(walker, value, owner, name)
    if key != "*":
        _tensor_store(walker, key, value)
    else:  # ``setattr(self, name, v)`` in class C stores into C's objects only
        mine = _self_owner(walker, owner) if owner is not None else None
        _tensor_store(walker, f"*{mine[1]}" if mine else "*", None)
    _store(walker.info, key, stored)
    filling = owner is not None and name is not None and (_spelled(owner), _spelled(name)) in walker.lacking
    _own(walker.info, key, _self_owner(walker, owner) or (("fill",) if filling else None), stored)


#: a computed-name ``setattr`` (key "*"): ``("o", "setattr", "")`` stores a literal (``[]``, ``0``:
#: no tensor, no object); ``("o", "setattr", name)`` stores into a parameter annotated with class
#: ``name`` (``layer: nn.Module``) or a tensor one (``weight: Tensor``: ``"Tensor"``); ``COPIED``
#: copies each field from the same-named field of another object (``setattr(self, f, getattr(src, f,
#: None))``: a clone by field name, as ``self.key = src.key`` is :data:`SAME_STORE`)
COPIED = ("o", "setattr", "=")


def computed_store(walker, value: cst.BaseExpression | None, owner: cst.BaseExpression | None,
                   name: cst.BaseExpression | None = None) -> tuple | None:
    if value is not None and (literal(value) is not None or (
            type(value) in (cst.List, cst.Dict, cst.Set, cst.Tuple) and not value.elements)):
        return ("o", "setattr", "")
    if _same_named(value, name):
        return COPIED
    if type(owner) is not cst.Name:
        return None
    facts = walker.oracle.fn
    if owner.value in facts.tensors and owner.value in facts.params and owner.value not in facts.presumed:
        return ("o", "setattr", "Tensor")
    named = facts.param_classes.get(owner.value)
    return ("o", "setattr", named) if named else None


def number_fields(stores: dict[str, list], project: set[str]) -> set[str]:
    """Field names every store of which anywhere in the project (``obj.f = v``, ``self.f = v``, a
    class-body name, a constructor's keyword: ``stores``, name -> [(module, value)]) is a number
    literal or ``None``, at least one a number (``f += v`` records an unknown store). By name, over
    every object: what an object of a project class whose bases are the project's holds there,
    whatever else the receiver may be (:mod:`.fieldkinds`). A computed-name ``setattr`` may store
    into any field, unless it stores a literal or into a parameter annotated with a class no project
    class (``project``: their names) is named as -- the annotation trusted, as receivers' are."""
    if not computed_elsewhere(stores, project):
        return set()
    return {attr for attr, values in stores.items()
            if all(_number(v) or v == ("c", None) for _, v in values) and any(_number(v) for _, v in values)}


def _same_named(value: cst.BaseExpression | None, name: cst.BaseExpression | None) -> bool:
    """``getattr(src, f)`` / ``getattr(src, f, <literal>)`` read under the name ``f`` stores into."""
    if type(value) is not cst.Call or type(name) is not cst.Name or not (
            type(value.func) is cst.Name and value.func.value == "getattr" and len(value.args) in (2, 3)):
        return False
    args = [a.value for a in value.args]
    return not any(a.keyword or a.star for a in value.args) and type(args[1]) is cst.Name \
        and args[1].value == name.value and (len(args) == 2 or literal(args[2]) is not None)


def computed_elsewhere(stores: dict[str, list], project: set[str], copies: bool = False) -> bool:
    """Every computed-name ``setattr`` stores a literal or into a parameter annotated with a class
    no project class is named as (``weight: Tensor``): none stores into a project object's field
    anything new; with ``copies``, a field-by-field copy between objects (:data:`COPIED`) is none
    either (for a question every same-named store answers alike: a host tensor everywhere)."""
    return all(type(v) is tuple and len(v) == 3 and v[:2] == ("o", "setattr")
               and (v[2] == "=" if v == COPIED else v[2] not in project) and (copies or v != COPIED)
               for _, v in stores.get("*", ()))


def _number(value) -> bool:
    """A stored number literal: ``("c", 16)``, or a class-body ``("k", class, 16)``; not a bool."""
    const = value[-1] if type(value) is tuple and value and value[0] == "k" else \
        value[1] if type(value) is tuple and len(value) == 2 and value[0] == "c" else None
    return type(const) in (int, float)
