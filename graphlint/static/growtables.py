"""Tables grown on demand, tested against their own size.

:mod:`.refresh` takes ``if n > self.cached: self.cached = n; ...`` for a refresh that raises its
own bound. Two more shapes of the same set-up were reported as per-step work:

- the table's own size is the bound: ``if n > self.table.size(1): self.table = build(n)`` (also
  ``self.table.shape[1]``, ``len(self.table)``, ``self.table.numel()``);
- the refresh is what follows a return taken while the table covers the request::

      if self.table is not None:
          if self.table.size(1) >= n:
              ...
              return
      self.table = build(n)

  The code after the ``if`` runs only while the table is unset or too short, and it stores the
  table, sized by the request: once it has run, the early return is taken until a request
  outgrows the table again -- set-up amortised over a generation (as :mod:`.refresh` says), not a
  per-step cost. A rest that stores the table without the request (``self.rows =
  torch.cat(...)`` until a cap) grows it every step, and a plain bound must be stored as the
  request itself (``self.count = self.count + 1`` under ``self.count >= limit`` is a counter).
- the table is a keyed slot of a cache object, not a field (:func:`keyed_grows_after`)::

      if (sin := cache.get("sin")) is not None and sin.shape[-2] >= n:
          return sin[:, :, :n]
      sin = build(n)
      cache["sin"] = sin

  the same refresh, with the slot ``cache["sin"]`` read through the name its test binds.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from graphlint.static.cstwalk import ends_in_jump, last_statement, none_compared, preorder, self_attr

_SIZE_METHODS = ("size", "numel")
_TESTS = (cst.Comparison, cst.BooleanOperation)  # what such an early return's test can be


def sized_attr(node: cst.BaseExpression) -> str | None:
    """``self.t.size(k)`` / ``self.t.size()[k]`` / ``self.t.shape[k]`` / ``len(self.t)`` /
    ``self.t.numel()`` -> "t"; a plain ``self.n`` (a recorded length) -> "n"."""
    plain = self_attr(node)
    if plain is not None:
        return plain
    if type(node) is cst.Subscript and len(node.slice) == 1:
        node = node.value  # ``.shape[k]`` / ``.size()[k]``
        if type(node) is cst.Attribute and node.attr.value == "shape":
            return self_attr(node.value)
    if type(node) is cst.Call:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in _SIZE_METHODS:
            return self_attr(func.value)
        if type(func) is cst.Name and func.value == "len" and len(node.args) == 1:
            return self_attr(node.args[0].value)
    return None


def _ordered(test: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression, bool] | None:
    """``a >= b`` / ``a > b`` -> (a, b, True); ``a <= b`` / ``a < b`` -> (a, b, False); else None."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return None
    op = type(test.comparisons[0].operator)
    if op not in (cst.GreaterThan, cst.GreaterThanEqual, cst.LessThan, cst.LessThanEqual):
        return None
    return test.left, test.comparisons[0].comparator, op in (cst.GreaterThan, cst.GreaterThanEqual)


def _compared(test: cst.BaseExpression) -> tuple[str, bool, cst.BaseExpression, bool] | None:
    """``size(self.t) >= n`` -> ("t", True, n, False): the table covers the request ``n``;
    ``n > size(self.t)`` -> ("t", False, n, False): it is outgrown. The last item says the bound is
    a plain ``self.n`` (a recorded length), not a table's size. Only one side may name the table."""
    pair = _ordered(test)
    if pair is None:
        return None
    left, right, bigger = pair
    mine, other = sized_attr(left), sized_attr(right)
    if (mine is None) == (other is None):
        return None
    if mine is not None:
        return mine, bigger, right, self_attr(left) is not None
    return other, not bigger, left, self_attr(right) is not None


def outgrown(test: cst.BaseExpression, body: cst.BaseSuite) -> str | None:
    """``n > self.t.size(1)`` (``self.t.shape[1] < n``, ...) -> "t", when ``body`` sizes something
    by the request ``n`` (the rebuilt table; a body that only appends to the table until it reaches
    a cap is per-step growth, not a refresh)."""
    found = _compared(test)
    if found is None or found[1] or found[3]:
        return None
    return found[0] if _mentions(body, found[2]) else None


def own_size_test(test: cst.BaseExpression) -> bool:
    """The test half of :func:`outgrown`, asked before any walk of the body."""
    found = _compared(test)
    return found is not None and not found[1] and not found[3]


def _mentions(tree: cst.CSTNode, expr: cst.BaseExpression) -> bool:
    return any(type(node) is type(expr) and node.deep_equals(expr) for node in preorder(tree))


def _set(test: cst.BaseExpression) -> str | None:
    """``self.t is not None`` -> "t"."""
    left = none_compared(test, cst.IsNot)
    return self_attr(left) if left is not None else None


def returns_when_covered(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression, bool] | None:
    """The table ``stmt`` returns early for while it covers the request (with the request, and
    whether the bound is a plain ``self.n``): ``if cover(t): ...; return`` (no ``else``),
    ``if self.t is not None and cover(t): return``, or such an ``if`` as the last statement of
    ``if self.t is not None:``."""
    if type(stmt) is not cst.If or stmt.orelse is not None:
        return None
    test = stmt.test
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And and _set(test.left) is not None:
        found = _compared(test.right)
        test = test.right if found is not None and found[0] == _set(test.left) else test
    found = _compared(test)
    if found is not None:
        return (found[0], found[2], found[3]) if found[1] and _returns(stmt.body) else None
    table = _set(test)
    body = stmt.body.body
    if table is None or not body:
        return None
    inner = returns_when_covered(body[-1])
    return inner if inner is not None and inner[0] == table else None


def _returns(suite: cst.BaseSuite) -> bool:
    return ends_in_jump(suite) and type(last_statement(suite)) is cst.Return


def grows_after(stmt: cst.CSTNode, rest: Sequence[cst.CSTNode]) -> bool:
    """Whether ``rest`` (what follows ``stmt`` in its block) is the refresh of a table ``stmt``
    returns early for while it covers the request: it stores ``self.t`` and sizes something by the
    request (a plain bound: it stores ``self.n = request`` itself). A rest that stores the table
    without the request (``self.hist = torch.cat(...)`` until a cap) grows it every step."""
    found = returns_when_covered(stmt) if type(stmt.test) in _TESTS else None
    if found is None:
        return keyed_grows_after(stmt, rest) if type(stmt.test) in _TESTS else False
    table, request, plain = found
    stored = [node.value for line in rest for node in preorder(line) if stores(node, table)]
    if plain:
        return any(value.deep_equals(request) for value in stored)
    return bool(stored) and any(_mentions(line, request) for line in rest)


def stores(node: cst.CSTNode, attr: str) -> bool:
    """``self.attr = ...`` (one of the targets)."""
    return type(node) is cst.Assign and any(self_attr(t.target) == attr for t in node.targets)


def _slot(node: cst.BaseExpression) -> str | None:
    """``c.get("k")`` / ``c["k"]`` (``c`` a name or a field) -> its spelling, one per slot."""
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "get" \
            and len(node.args) == 1 and type(node.args[0].value) is cst.SimpleString:
        owner, key = node.func.value, node.args[0].value
    elif type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index \
            and type(node.slice[0].slice.value) is cst.SimpleString:
        owner, key = node.value, node.slice[0].slice.value
    else:
        return None
    if type(owner) is not cst.Name and self_attr(owner) is None:
        return None
    return f"{cst.Module([]).code_for_node(owner)}[{key.raw_value!r}]"


def _sized_name(node: cst.BaseExpression) -> str | None:
    """``t.shape[k]`` / ``t.size(k)`` / ``len(t)`` / ``t.numel()`` of a local name -> "t"."""
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.value) is cst.Attribute \
            and node.value.attr.value == "shape":
        node = node.value.value
        return node.value if type(node) is cst.Name else None
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in _SIZE_METHODS:
        return node.func.value.value if type(node.func.value) is cst.Name else None
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "len" and len(node.args) == 1:
        return node.args[0].value.value if type(node.args[0].value) is cst.Name else None
    return None


def _keyed_cover(stmt: cst.If) -> tuple[set[str], list[cst.BaseExpression]] | None:
    """(the slots, the requests) of ``if (t := c.get("k")) is not None and t.shape[-2] >= n ...:
    return ...``: every operand tests a slot set or one it bound covering the request."""
    if stmt.orelse is not None or not _returns(stmt.body):
        return None
    operands, test = [], stmt.test
    while type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        operands.insert(0, test.right)
        test = test.left
    aliases: dict[str, str] = {}
    slots: set[str] = set()
    requests: list[cst.BaseExpression] = []
    for operand in [test, *operands]:
        held = none_compared(operand, cst.IsNot)
        if held is not None:
            bound = held if type(held) is cst.NamedExpr else None
            slot = _slot(bound.value if bound is not None else held)
            if slot is None:
                return None
            slots.add(slot)
            if bound is not None and type(bound.target) is cst.Name:
                aliases[bound.target.value] = slot
            continue
        pair = _ordered(operand)
        if pair is None:
            return None
        left, right, covers = pair
        mine, other = _sized_name(left), _sized_name(right)
        name, request = (mine, right) if covers else (other, left)
        if name not in aliases:
            return None
        requests.append(request)
    return (slots, requests) if slots and requests else None


def keyed_grows_after(stmt: cst.If, rest: Sequence[cst.CSTNode]) -> bool:
    """Whether ``rest`` refreshes the keyed slots ``stmt`` returns early for while they cover the
    request: it stores one of them (``c["k"] = ...``) and sizes something by a request."""
    found = _keyed_cover(stmt)
    if found is None:
        return False
    slots, requests = found
    stored = any(type(node) is cst.Assign and any(_slot(t.target) in slots for t in node.targets)
                 for line in rest for node in preorder(line))
    return stored and any(_mentions(line, request) for line in rest for request in requests)
