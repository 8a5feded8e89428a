"""A fast, read-only child iterator for libcst trees.

``CSTNode.children`` and the visitor machinery rebuild nodes and dispatch through several
layers per node; for an analysis that only reads expressions a plain field walk that skips
whitespace and punctuation is several times cheaper. Children come in source order (``IfExp``
is the one libcst node whose fields are not), which the position mapping relies on.
"""

from __future__ import annotations

import dataclasses
from sys import intern
from typing import Iterator

import libcst as cst

SKIP_FIELDS = frozenset(
    "lpar rpar lbracket rbracket lbrace rbrace comma semicolon equal colon dot star operator "
    "leading_lines lines_after_decorators header footer indent asynchronous newline "
    "first_colon second_colon conversion start end prefix quote keyword asname "
    "whitespace_between trailing_whitespace leading_whitespace".split()
)
ORDER_OVERRIDES = {cst.IfExp: ("body", "test", "orelse"), cst.Attribute: ("value",)}

_fields_cache: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    names = _fields_cache.get(cls)
    if names is None:
        names = ORDER_OVERRIDES.get(cls) or tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _fields_cache[cls] = names
    return names


def concrete(*bases: type) -> frozenset[type]:
    """``bases`` and every class under them: ``type(n) in concrete(X)`` is ``isinstance(n, X)``
    without abc's per-call ``__instancecheck__`` (libcst's node classes are ABCs; all of them are
    defined when libcst is imported, and none is registered as a virtual subclass)."""
    out: set[type] = set()
    stack = list(bases)
    while stack:
        cls = stack.pop()
        if cls not in out:
            out.add(cls)
            stack.extend(cls.__subclasses__())
    return frozenset(out)


#: what ``isinstance(n, cst.BaseSmallStatement)`` / ``BaseExpression`` / ``BaseCompoundStatement`` ask
SMALL_STATEMENTS = concrete(cst.BaseSmallStatement)
EXPRESSIONS = concrete(cst.BaseExpression)
COMPOUND_STATEMENTS = concrete(cst.BaseCompoundStatement)

_is_node: dict[type, bool] = {}


def is_node(value: object) -> bool:
    """isinstance(value, CSTNode) without the ABC machinery's per-call cost."""
    cls = type(value)
    known = _is_node.get(cls)
    if known is None:
        known = _is_node[cls] = isinstance(value, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if type(value) in (list, tuple):
            for item in value:
                if is_node(item):
                    yield item
        elif is_node(value):
            yield value


def preorder(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (itself first), depth first, children in :func:`children`'s
    order. The walker's every expression goes through here: each class's children are read by
    a function made for its fields (:func:`_kids_of`), not a loop over field names."""
    stack = [node]
    pop, extend, kids_of = stack.pop, stack.extend, _kids.get
    while stack:
        current = pop()
        yield current
        kids = (kids_of(type(current)) or _kids_of(type(current)))(current)
        if kids:
            kids.reverse()
            extend(kids)


#: the nodes a statement sits in (blocks, compound statements and their clauses, functions and
#: classes) and ``Assign``, which holds its targets: Python puts no statement inside an expression
STATEMENT_PARENTS = frozenset((cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine, cst.If, cst.Else,
                               cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.ExceptHandler,
                               cst.ExceptStarHandler, cst.Finally, cst.Match, cst.MatchCase, cst.FunctionDef,
                               cst.ClassDef, cst.Assign))
BINDERS = frozenset((cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For))


def statement_binders(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The ``AssignTarget``, ``AnnAssign``, ``AugAssign`` and ``For`` nodes under ``node`` (itself
    included): :func:`preorder`'s, in another order, without walking any expression."""
    return statement_nodes(node, BINDERS)


def statement_nodes(node: cst.CSTNode, kinds: frozenset) -> Iterator[cst.CSTNode]:
    """The nodes of ``kinds`` under ``node`` (itself included) that statements hold (every
    ``Assign``, a loop's binders), found without walking any expression."""
    stack = [node]
    pop, extend, kids_of = stack.pop, stack.extend, _kids.get
    while stack:
        current = pop()
        kind = type(current)
        if kind in kinds:
            yield current
        if kind in STATEMENT_PARENTS:
            extend((kids_of(kind) or _kids_of(kind))(current))


_kids: dict[type, object] = {}
_every: dict[type, object] = {}


#: leaves :func:`names_in` does not look into
NAME_LEAVES = (cst.SimpleString, cst.Integer, cst.Float)


def names_in(node: cst.CSTNode | None) -> tuple[str, ...]:
    """The local names an expression reads: not attribute names, keywords or ``self`` (``self.x``
    is one name of its own). A field of a local object is read as the object and as the field
    (``session.done`` reads ``session`` and ``session.done``: a store into the field,
    ``session.done[i] = True``, binds ``session.done``), a method called on it as the object only."""
    if node is None:
        return ()
    out: dict[str, None] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is cst.Name:
            if n.value != "self":
                out[intern(n.value)] = None  # one string object per name: the pickle writes it once
        elif kind is cst.Attribute and type(n.value) is cst.Name:
            owner = n.value.value
            if owner == "self":
                out[intern("self." + n.attr.value)] = None  # state on ``self`` is one name, like a local
            else:
                out[intern(owner)] = None
                out[intern(owner + "." + n.attr.value)] = None
        elif kind is cst.Call and type(n.func) is cst.Attribute and type(n.func.value) is cst.Name \
                and n.func.value.value != "self":
            func = n.func
            out[intern(func.value.value)] = None  # ``x.tolist()``, ``torch.cat(...)``: the object, no field
            stack.extend(c for c in children(n) if c is not func)
        elif kind not in NAME_LEAVES:
            stack.extend(children(n))  # an attribute's child is its object, not the attribute's name
    return tuple(out)


def every_child(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes libcst's ``node.children`` gives (whitespace and punctuation included), for
    callers that collect a set: field by field, not in libcst's lexical order. ``children``
    runs libcst's visitor machinery per call; a name collector over it was a tenth of a worker
    (measured on torch's files). Every field of every node class holds what libcst visits
    (``tests/static/test_static_cstwalk_children.py`` compares them)."""
    cls = type(node)
    kids = _every.get(cls)
    if kids is None:
        kids = _kids_of(cls, _every, tuple(f.name for f in dataclasses.fields(cls)))
    return kids(node)


_named: dict[type, object] = {}
#: fields that hold only whitespace and punctuation nodes (or strings): no name is read there
TOKEN_FIELDS = SKIP_FIELDS - {"keyword", "asname"}


def name_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """:func:`every_child` without the fields of :data:`TOKEN_FIELDS` and ``whitespace*``: for
    collecting the names an expression reads (about half a tree's nodes are whitespace)."""
    cls = type(node)
    kids = _named.get(cls)
    if kids is None:
        kids = _kids_of(cls, _named, tuple(f.name for f in dataclasses.fields(cls) if f.name not in TOKEN_FIELDS
                                           and not f.name.startswith("whitespace")))
    return kids(node)


def _kids_of(cls: type, cache: dict = _kids, fields: tuple[str, ...] | None = None):
    """A function giving a node of ``cls`` its children, in :func:`children`'s order: each field
    of :func:`child_fields` (or ``fields``) read directly, a list or tuple's nodes in order, a node
    itself, and nothing else (None, ``MaybeSentinel``, strings)."""
    lines = ["def kids(n):", "    out = []"]
    for name in child_fields(cls) if fields is None else fields:
        lines += [f"    v = n.{name}",
                  "    if type(v) in SEQ:",
                  "        out.extend([x for x in v if known(type(x)) or (known(type(x)) is None and is_node(x))])",
                  "    elif known(type(v)) or (known(type(v)) is None and is_node(v)):",
                  "        out.append(v)"]
    lines.append("    return out")
    names = {"SEQ": (list, tuple), "known": _is_node.get, "is_node": is_node}
    exec("\n".join(lines), names)
    cache[cls] = names["kids"]
    return names["kids"]


def operands(node: cst.BinaryOperation) -> list[cst.BaseExpression]:
    """The operands of a chain of binary operations, in source order (``a + b * c`` -> a, b, c):
    an expression's facts are decided over them once, not again at every level of a 1,000-term
    sum (which made a question about it quadratic)."""
    out: list[cst.BaseExpression] = []
    stack: list[cst.BaseExpression] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.BinaryOperation:
            stack.append(current.right)
            stack.append(current.left)
        else:
            out.append(current)
    return out


def bound_names(target: cst.BaseExpression) -> list[str]:
    """The names an assignment target binds: ``a``, ``a, (b, *c)``; not ``x[i]`` or ``self.a``
    (a subscript store mutates its base and only *reads* its index expressions)."""
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        return [n for el in target.elements for n in bound_names(el.value)]
    if type(target) is cst.StarredElement:
        return bound_names(target.value)
    return []


def self_attr(node: cst.BaseExpression | None, owners: tuple[str, ...] = ("self",)) -> str | None:
    """``self.x`` -> "x" (or an attribute of another of ``owners``); None for anything else."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value in owners:
        return node.attr.value
    return None


SHAPE_METHODS = frozenset(("size", "dim", "numel", "nelement", "ndimension"))


def shape_only(node: cst.BaseExpression | None, shapes: set[str]) -> bool:
    """A number read from tensor shapes alone (``x.numel()``, ``x.shape[-1] * 2``, a name in
    ``shapes`` bound from one): the same on every replay of a graph captured for those shapes."""
    if type(node) is cst.Name:
        return node.value in shapes
    if type(node) is cst.Call:
        return type(node.func) is cst.Attribute and node.func.attr.value in SHAPE_METHODS
    if type(node) is cst.Subscript:
        return type(node.value) is cst.Attribute and node.value.attr.value == "shape"
    if type(node) is cst.Attribute:
        return node.attr.value == "ndim"
    if type(node) is cst.UnaryOperation:
        return shape_only(node.expression, shapes)
    if type(node) is cst.BinaryOperation:
        leaves = operands(node)
        return all(type(leaf) is cst.Integer or shape_only(leaf, shapes) for leaf in leaves) and any(
            type(leaf) is not cst.Integer for leaf in leaves)
    return False


JUMPS = (cst.Break, cst.Continue, cst.Return, cst.Raise)


def last_statement(suite: cst.BaseSuite) -> cst.CSTNode | None:
    """The block's last statement: the last small statement of its last line (or of a one-line
    block), else its last compound statement; None for an empty block."""
    body = suite.body
    if not body:
        return None
    last = body[-1]
    if type(last) is cst.SimpleStatementLine:
        return last.body[-1] if last.body else None
    return last


def ends_in_jump(suite: cst.BaseSuite) -> bool:
    """A block whose last statement is ``break``/``continue``/``return``/``raise`` (one-line blocks
    such as ``if done: break`` included): the code after its ``if`` is never reached from it, so what
    it binds does not flow there."""
    return type(last_statement(suite)) in JUMPS


#: the children :func:`jumps_out` looks into: blocks, statements and their clauses
_BLOCKS = concrete(cst.BaseSuite, cst.BaseStatement, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
                   cst.MatchCase)


def jumps_out(stmt: cst.CSTNode) -> bool:
    """A statement with a ``return``/``raise``/``break``/``continue`` among its statements at any depth
    (not in a nested ``def`` or ``class``): what follows it in its block may not run."""
    kind = type(stmt)
    if kind in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
        return any(type(small) in JUMPS for small in stmt.body)
    if kind in (cst.FunctionDef, cst.ClassDef):
        return False
    # every_child, not libcst's ``children`` (a visitor run per call; asked for every ``if`` of every
    # block: 0.35 -> 0.06 CPU-s on a fifth of torch's first 600 files): the same nodes, any order
    return any(jumps_out(child) for child in every_child(stmt) if type(child) in _BLOCKS)


def last_returns(suite: cst.BaseSuite) -> bool:
    """The block's last statement is a ``return`` or ``raise``: the function does not go on past it."""
    return type(last_statement(suite)) in (cst.Return, cst.Raise)


def top_small_statements(suite: cst.BaseSuite) -> Iterator[cst.BaseSmallStatement]:
    """The small statements at the top level of a block, in order: those of its simple lines, or
    the whole body of a one-line block (``if t: stop = True``)."""
    if type(suite) is cst.SimpleStatementSuite:
        yield from suite.body
        return
    for line in suite.body:
        if type(line) is cst.SimpleStatementLine:
            yield from line.body


# Argument readers shared by analyzers and matchers (kept here, below both, so neither imports the other).

def called_name(func: cst.BaseExpression) -> str:
    """The name a call is spelled with: ``m`` of ``obj.m(...)``, ``f`` of ``f(...)``; else ``""``."""
    return func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    """The values passed by position, ``*args`` left out."""
    return [a.value for a in call.args if a.keyword is None and not a.star]


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The value passed as ``name=``, else None."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def number(node: cst.BaseExpression | None) -> float | None:
    """The value of a number literal (``0``, ``-1``, ``2.5``), else None."""
    sign = 1
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        sign, node = (-sign if isinstance(node.operator, cst.Minus) else sign), node.expression
    if isinstance(node, (cst.Integer, cst.Float)):
        return sign * node.evaluated_value
    return None


def none_compared(test: cst.BaseExpression, operator: type = cst.Is) -> cst.BaseExpression | None:
    """``x is None`` -> ``x`` (``x is not None`` with ``operator=cst.IsNot``); None for any other test."""
    if (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) is operator
            and type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "None"):
        return test.left
    return None


def none_fallback(node: cst.IfExp) -> tuple[str, cst.BaseExpression] | None:
    """``d if p is None else p`` / ``p if p is not None else d``: (p, d), an override of a setting.
    An unannotated parameter presumed a tensor takes the kind of the setting it overrides: the
    caller's ``causal`` replaces ``self.causal``, a Python bool (the parameter's own kind is a guess)."""
    test = node.test
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name):
        return None
    comp = test.comparisons[0]
    if not (type(comp.comparator) is cst.Name and comp.comparator.value == "None"):
        return None
    name = test.left.value
    given, default = (node.orelse, node.body) if type(comp.operator) is cst.Is else (
        (node.body, node.orelse) if type(comp.operator) is cst.IsNot else (None, None))
    if type(given) is cst.Name and given.value == name:
        return name, default
    return None


def constant_name(target: cst.BaseExpression) -> bool:
    """``BLOCK_SEQ``, ``HEAD_DIM``: SCREAMING_SNAKE_CASE (``Q``, ``KV`` may well be tensors)."""
    return type(target) is cst.Name and target.value.isupper() and "_" in target.value.strip("_")


def bool_literal(node: cst.BaseExpression | None) -> bool:
    """``True``, ``False``, or a conditional choosing between them (``True if use_cache else False``):
    a Python bool whatever the test reads."""
    if type(node) is cst.IfExp:
        return bool_literal(node.body) and bool_literal(node.orelse)
    return type(node) is cst.Name and node.value in ("True", "False")


def returns_value(suite: cst.CSTNode) -> bool:
    """A ``return <value>`` in ``suite``, nested functions aside: the block computes its caller's result."""
    stack = [suite]
    while stack:
        node = stack.pop()
        if type(node) is cst.Return and node.value is not None:
            return True
        if type(node) not in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            stack.extend(node.children)
    return False
