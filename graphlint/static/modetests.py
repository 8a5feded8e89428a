"""A captured forward's mode branches: enum members, the objects a capture builds with them, and
the small methods that test them (:mod:`.argvalues`, :mod:`.capturedvalues`).

A model forward that also serves prefill keeps its prefill-only work behind a test of its batch's
mode (``if not batch.mode.is_decode():``, ``if batch.mode.is_decode(): <decode kernel> else:
<extend path>``). The capture builds that batch itself, ``Batch(mode=Mode.DECODE, ...)``, and
``is_decode()`` is a method of the enum returning ``self == Mode.DECODE``. The walker's half (in
:mod:`.valuefacts`' IR): ``("e", cls, name)`` an enum member spelled ``Cls.NAME``; ``("new", cls,
((field, value), ...))`` a class built with keyword fields (literals and members kept); ``("at",
value, attr)`` a field of a local or parameter, read as a method's receiver or compared with a
member; ``("mc", value, method, fallback)`` ``value.method()`` with no arguments (``fallback``: what
the call is without this module); ``FunctionInfo.returns_test``: a method whose body is one
``return`` of a test of ``self`` against members (``==``, ``is``, ``in``, ``not``, ``and``, ``or``,
another such method of ``self``).

The link's half decides only what holds for certain: a member equals a member of the same enum
by name only when the enum (a project class deriving ``Enum``/``IntEnum``/``StrEnum``, its name
unique in the project) gives each member its own value (``auto()`` or distinct literals: no
alias); a member against a literal is unknown (an ``IntEnum`` equals its int). A built object's
field is what its construction passed only when the class is a project dataclass with that field
and no code stores into a field of that name on an object (``obj.x = v``, a ``setattr``) or on
``self`` in that class or one of its bases.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphlint.static.cstwalk import bound_names, every_child, statement_nodes
from graphlint.static.literalops import OBJECT
from graphlint.static.names import dotted_name

ENUM_BASES = frozenset(("Enum", "IntEnum", "StrEnum"))
SELF = "\0self"  # the key of a method's receiver in :meth:`.argvalues.ArgValues.truths`' env


@dataclass(frozen=True)
class Member:
    """An enum member by its spelling: ``Mode.DECODE`` -> ``Member("Mode", "DECODE")``."""
    cls: str
    name: str


@dataclass(frozen=True)
class Built:
    """An object built as ``Cls(field=v, ...)``: each known field with its values."""
    cls: str
    fields: tuple  # ((field, frozenset of values), ...)


@dataclass(frozen=True)
class Holds:
    """An object a branch tested: ``(field, method, result)`` facts (``if b.mode.is_decode():``
    calls ``f(b)``: ``b`` is an object whose ``mode.is_decode()`` is True)."""
    facts: tuple


@dataclass(frozen=True)
class Tested:
    """A field of a :class:`Holds`: ``(method, result)`` facts."""
    facts: tuple


# -- the walker's half --------------------------------------------------------------------------
def member(node: cst.BaseExpression | None) -> tuple | None:
    """``Mode.DECODE`` / ``mod.Mode.DECODE``: ``("e", "Mode", "DECODE")`` (a capitalised class, an
    upper-case member); None for anything else."""
    if type(node) is not cst.Attribute:
        return None
    name, owner = node.attr.value, node.value
    cls = owner.attr.value if type(owner) is cst.Attribute else owner.value if type(owner) is cst.Name else ""
    if not (name.isupper() and name[:1].isalpha() and cls[:1].isupper() and not cls.isupper()):
        return None
    return ("e", cls, name)


def member_const(node: cst.BaseExpression | None):
    found = member(node)
    return Member(found[1], found[2]) if found is not None else None


def built(values, node: cst.Call, cls: str) -> tuple:
    """``Cls(a=Mode.X, n=4, ids=t)``: ``("new", cls, (("a", ("e", ...)), ("n", ("c", 4))))``; what
    a splat or positional argument sets stays unknown (not recorded)."""
    fields = []
    for arg in node.args:
        if arg.star:
            return ("o",)
        if arg.keyword is not None:
            found = values.value(arg.value)
            if found is not None and found[0] in ("c", "e"):
                fields.append((arg.keyword.value, found))
    return ("new", cls, tuple(fields)) if fields else ("o",)


def receiver(values, node: cst.BaseExpression, depth: int = 0) -> tuple | None:
    """A method's receiver or a value compared with a member: a local, a parameter, ``self``, a
    member, or a field of a local or parameter (``("at", value, attr)``; :mod:`.modetests`)."""
    if type(node) is cst.Name:
        found = values.value(node)
        return found if found is not None and found[0] in ("p", "l", "self", "new", "e") else None
    found = member(node)
    if found is not None or type(node) is not cst.Attribute or depth > 2:
        return found
    inner = receiver(values, node.value, depth + 1)
    return ("at", inner, node.attr.value) if inner is not None and inner[0] not in ("self", "e") else None


def member_test(values, left, op, right, against) -> tuple:
    """``batch.mode == Mode.DECODE``, ``self is Mode.X``: a value against an enum member."""
    value = receiver(values, right if member_const(left) is not None else left)
    if value is None or value[0] == "e":
        return ("?",)
    base = ("is" if type(op) in (cst.Is, cst.IsNot) else "eq", value, against)
    return ("not", base) if type(op) in (cst.IsNot, cst.NotEqual) else base


def member_literal(node: cst.BaseExpression) -> tuple | None:
    found = member_const(node)
    return ("c", found) if found is not None else None


def closure_values(assigns: dict, body: cst.CSTNode) -> dict[str, tuple]:
    """What a nested function reads of its enclosing one's names: each bound once in the enclosing
    body (no ``nonlocal`` / ``global`` rebinding it), unconditionally, to a literal, a member or a
    class built with them (:attr:`ValueFacts.closure`)."""
    one = {name: known[0][0] for name, known in assigns.items()
           if known and len(known) == 1 and not known[0][1] and known[0][0] is not None
           and known[0][0][0] in ("c", "e", "new")}
    if not one:
        return {}
    counts: dict[str, int] = {}
    for node in statement_nodes(body, _CLOSURE_BINDERS):
        if type(node) in (cst.Nonlocal, cst.Global):
            names = [n.name.value for n in node.names] * 2
        elif type(node) is cst.WithItem:
            names = bound_names(node.asname.name) if node.asname is not None else []
        else:
            names = bound_names(node.target)
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return {name: v for name, v in one.items() if counts.get(name, 0) == 1}


_CLOSURE_BINDERS = frozenset((cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.Nonlocal, cst.Global,
                              cst.WithItem))


def enum_members(stmt: cst.ClassDef) -> tuple[str, ...]:
    """The members of an enum class body when each has its own value (``auto()`` or a literal no
    other member has); () when one may alias another or the body is not plain."""
    names, seen = [], set()
    for line in stmt.body.body:
        if type(line) is not cst.SimpleStatementLine:
            continue
        for small in line.body:
            if type(small) is not cst.Assign:
                continue
            if len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
                return ()
            name, value = small.targets[0].target.value, small.value
            if name.startswith("_"):
                continue
            if type(value) is cst.Call and (dotted_name(value.func) or "").rsplit(".", 1)[-1] == "auto" and not value.args:
                key = ("auto", name)
            elif type(value) in (cst.Integer, cst.SimpleString):
                key = ("v", value.evaluated_value)
            else:
                return ()
            if key in seen:
                return ()
            seen.add(key)
            names.append(name)
    kinds = {k[0] for k in seen}
    return tuple(names) if len(kinds) <= 1 else ()  # ``auto()`` beside literals may meet one


def self_test(c: tuple, depth: int = 0) -> bool:
    """Whether a condition tests only ``self`` against members (what ``returns_test`` keeps)."""
    kind = c[0]
    if kind in ("eq", "is"):
        return c[1] == ("self",) and isinstance(c[2], Member)
    if kind == "in":
        return c[1] == ("self",) and bool(c[2]) and all(isinstance(x, Member) for x in c[2])
    if kind == "not":
        return self_test(c[1], depth)
    if kind in ("and", "or"):
        return self_test(c[1], depth) and self_test(c[2], depth)
    if kind == "t":
        v = c[1]
        return v is not None and v[0] == "mc" and v[1] == ("self",) and depth < 3
    return False


def returns_test(values, stmt: cst.FunctionDef) -> tuple[tuple | None, bool]:
    """A method whose body is one ``return`` (a docstring allowed): (its test of ``self`` against
    members, or None; whether it is a query -- it calls nothing but ``self``'s own methods, so
    asking it twice of an unchanged receiver answers the same)."""
    body = [line for line in stmt.body.body if not _docstring(line)] if type(stmt.body) is cst.IndentedBlock else []
    if len(body) != 1 or type(body[0]) is not cst.SimpleStatementLine or len(body[0].body) != 1:
        return None, False
    ret = body[0].body[0]
    if type(ret) is not cst.Return or ret.value is None:
        return None, False
    test = values.condition(ret.value, set())
    return (test if self_test(test) else None), _query(ret.value)


def _query(node: cst.CSTNode) -> bool:
    for kid in every_child(node):  # not libcst's ``children``: the same nodes; every one must pass
        if type(kid) in (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda):
            return False
        if type(kid) is cst.Call and not (not kid.args and type(kid.func) is cst.Attribute
                                          and type(kid.func.value) is cst.Name and kid.func.value.value == "self"):
            return False
        if not _query(kid):
            return False
    return True


def _docstring(line) -> bool:
    return (type(line) is cst.SimpleStatementLine and len(line.body) == 1 and type(line.body[0]) is cst.Expr
            and type(line.body[0].value) in (cst.SimpleString, cst.ConcatenatedString))


# -- the link's half ----------------------------------------------------------------------------
class Modes:
    """The project's enums and dataclasses by name, and which fields code stores into."""

    def __init__(self, infos: list) -> None:
        by_name: dict[str, list] = {}
        for info in infos:
            for qual, klass in info.classes.items():
                by_name.setdefault(qual.rpartition(".")[2], []).append((info, qual, klass))
        self.enums: dict[str, tuple[frozenset, dict]] = {}
        self.dataclasses: dict[str, frozenset] = {}
        self._bases: dict[str, tuple] = {}
        for name, found in by_name.items():
            if len(found) != 1:
                continue  # two classes of one name: a spelling names neither for certain
            info, qual, klass = found[0]
            bases = tuple(_base_name(b) for b in klass.bases)
            self._bases[name] = bases
            if klass.members and ENUM_BASES.intersection(bases):
                methods = {q.rpartition(".")[2]: fn.returns_test for q, fn in info.functions.items()
                           if q.rpartition(".")[0] == qual and fn.returns_test}
                self.enums[name] = (frozenset(klass.members), methods)
            if klass.dataclass:
                self.dataclasses[name] = frozenset(klass.fields)
        self.late = {a for info in infos for klass in info.classes.values() for a in klass.late_writes}
        writes = {w for info in infos for w in info.attr_writes}
        self.any_write = {w for w in writes if ":" not in w}
        self.self_writes = {(w.partition(":")[0].rpartition(".")[2], w.partition(":")[2]) for w in writes if ":" in w}

    def equal(self, a, b) -> bool | None:
        """``a == b`` (or ``is``) where one side is a member: None when not known for certain."""
        if isinstance(a, Member) and isinstance(b, Member) and a.cls == b.cls and a.cls in self.enums:
            members = self.enums[a.cls][0]
            if a.name in members and b.name in members:
                return a.name == b.name
        return None

    def stable(self, attr: str) -> bool:
        """No code rebinds ``attr`` on an object after building it (``obj.x = v``, a method other
        than ``__init__`` storing ``self.x``, a ``setattr``)."""
        return attr not in self.any_write and attr not in self.late and not any(w[1] == "*" for w in self.self_writes)

    def answer(self, values, m, method: str) -> frozenset | None:
        """What ``m.method()`` returns: a member's test decided, a tested field's known answer."""
        if isinstance(m, Tested):
            found = frozenset(want for name, want in m.facts if name == method)
            return found or None
        test = self.method_test(m, method)
        return None if test is None else values.truths(test, ("", ""), {SELF: frozenset((m,))})

    def method_test(self, m, method: str) -> tuple | None:
        """The test ``method`` of ``m``'s enum returns, when ``m`` is a known member."""
        if not isinstance(m, Member) or m.cls not in self.enums or m.name not in self.enums[m.cls][0]:
            return None
        return self.enums[m.cls][1].get(method)

    def field(self, obj, attr: str):
        """The values ``obj.attr`` holds (a frozenset), or None when not known for certain."""
        if isinstance(obj, Holds):
            sets = [want for a, method, want in obj.facts if a == attr and method is None]
            if sets:  # the members the tested method answered so far
                return frozenset.intersection(*sets)
            facts = tuple((method, want) for a, method, want in obj.facts if a == attr)
            return frozenset((Tested(facts),)) if facts else None
        if not isinstance(obj, Built) or attr not in self.dataclasses.get(obj.cls, ()) or attr in self.any_write \
                or (obj.cls, "*") in self.self_writes:
            return None
        if any((c, attr) in self.self_writes or (c, "*") in self.self_writes for c in self._family(obj.cls)):
            return None
        return dict(obj.fields).get(attr)

    def _family(self, name: str) -> set[str]:
        seen, todo = {name}, [name]
        while todo:
            for base in self._bases.get(todo.pop(), ()):
                if base and base not in seen:
                    seen.add(base)
                    todo.append(base)
        return seen


def _base_name(desc) -> str:
    """A base class's descriptor as its last name."""
    text = desc if isinstance(desc, str) else next((p for p in reversed(desc) if isinstance(p, str)), "") \
        if isinstance(desc, tuple) else ""
    return text.rpartition(".")[2]


# -- values and truths, for :class:`.argvalues.ArgValues` ---------------------------------------
MODE_KINDS = frozenset(("e", "new", "at", "mc"))
_BOTH = frozenset((True, False))


def mode_value(values, v: tuple, fid, env):
    """The values of one of :data:`MODE_KINDS` (a frozenset), or None when unknown."""
    kind, modes = v[0], values.modes
    if kind == "e":
        return frozenset((Member(v[1], v[2]),))
    if kind == "new":
        known = []
        for name, part in v[2]:
            found = values.value(part, fid, env)
            if found is not None:
                known.append((name, found))
        return frozenset((Built(v[1], tuple(known)),)) if v[1] in modes.dataclasses else frozenset((OBJECT,))
    if kind == "at":
        objs = values.value(v[1], fid, env)
        if objs is None or not objs:
            return objs
        out: set = set()
        for obj in objs:
            found = modes.field(obj, v[2])
            if found is None:
                return None
            out |= found
        return frozenset(out)
    recv = values.value(v[1], fid, env)  # "mc"
    out = set()
    for m in recv or ():
        found = modes.answer(values, m, v[2])
        if found is None:
            return values.value(v[3], fid, env)
        out |= found
    return frozenset(out) if out else values.value(v[3], fid, env)


def mode_truths(modes: Modes, kind: str, found: frozenset, const) -> frozenset | None:
    """``is`` / ``==`` / ``in`` / truth over values where a member or a built object takes part;
    None where none does (the plain literal rules decide)."""
    consts = const if kind == "in" else (const,)
    if not any(isinstance(x, (Member, Built)) for x in found) and not any(isinstance(c, Member) for c in consts):
        return None
    if kind not in ("t", "is", "eq", "in") or any(isinstance(x, Built) for x in found) and kind != "is":
        return _BOTH
    out = set()
    for x in found:
        if isinstance(x, Built):
            out.add(False)  # a built object is no literal nor member
            continue
        each = [modes.equal(x, c) for c in consts]
        if kind == "in" and True in each:
            out.add(True)
        elif None in each:
            return _BOTH
        else:
            out.add(any(each))
    return frozenset(out)
