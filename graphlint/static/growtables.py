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
  table: once it has run, the early return is taken until a request outgrows the table again --
  set-up amortised over a generation (as :mod:`.refresh` says), not a per-step cost.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from graphlint.static.cstwalk import ends_in_jump, preorder, self_attr

_SIZE_METHODS = ("size", "numel")


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


def _compared(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """``size(self.t) >= n`` -> ("t", True): the table covers the request; ``n > size(self.t)`` ->
    ("t", False): it is outgrown. Only one side may name the table."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return None
    left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
    mine, other = sized_attr(left), sized_attr(right)
    if (mine is None) == (other is None):
        return None
    bigger = type(op) in (cst.GreaterThan, cst.GreaterThanEqual)
    if not bigger and type(op) not in (cst.LessThan, cst.LessThanEqual):
        return None
    return (mine, bigger) if mine is not None else (other, not bigger)


def outgrown(test: cst.BaseExpression) -> str | None:
    """``n > self.t.size(1)`` (``self.t.shape[1] < n``, ...) -> "t"."""
    found = _compared(test)
    return found[0] if found is not None and not found[1] else None


def _covers(test: cst.BaseExpression) -> str | None:
    found = _compared(test)
    return found[0] if found is not None and found[1] else None


def _set(test: cst.BaseExpression) -> str | None:
    """``self.t is not None`` -> "t"."""
    if (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) is cst.IsNot
            and type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "None"):
        return self_attr(test.left)
    return None


def returns_when_covered(stmt: cst.CSTNode) -> str | None:
    """The table ``stmt`` returns early for while it covers the request: ``if cover(t): ...;
    return`` (no ``else``), ``if self.t is not None and cover(t): return``, or such an ``if`` as
    the last statement of ``if self.t is not None:``."""
    if type(stmt) is not cst.If or stmt.orelse is not None:
        return None
    test = stmt.test
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And and _set(test.left) is not None:
        test = test.right if _covers(test.right) == _set(test.left) else test
    table = _covers(test)
    if table is not None:
        return table if _returns(stmt.body) else None
    table = _set(test)
    body = stmt.body.body
    if table is None or not body:
        return None
    return table if returns_when_covered(body[-1]) == table else None


def _returns(suite: cst.BaseSuite) -> bool:
    if not ends_in_jump(suite):
        return False
    last = suite.body[-1]
    return type(last.body[-1] if type(last) in (cst.SimpleStatementLine, cst.SimpleStatementSuite) else last) \
        is cst.Return


def grows_after(stmt: cst.CSTNode, rest: Sequence[cst.CSTNode]) -> bool:
    """Whether ``rest`` (what follows ``stmt`` in its block) is the refresh of a table ``stmt``
    returns early for while it covers the request: some statement of it stores ``self.t``."""
    table = returns_when_covered(stmt)
    return table is not None and any(stores(node, table) for line in rest for node in preorder(line))


def stores(node: cst.CSTNode, attr: str) -> bool:
    """``self.attr = ...`` (one of the targets)."""
    return type(node) is cst.Assign and any(self_attr(t.target) == attr for t in node.targets)
