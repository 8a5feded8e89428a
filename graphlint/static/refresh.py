"""A cache refresh that raises its own bound: ``if n > self.cached: self.cached = n; ...``.

:func:`.runonce.once_flag` already takes lazy growth through a method of the object
(``if seq_len > self.cached_len: self._grow(seq_len)``) for set-up amortised over a generation.
The same refresh written inline -- the body records the new length itself, often beside a test
that the cached tables still sit on the requested device and dtype -- was reported as per-step
work (a rotary cache's ``torch.arange(seqlen)`` under ``seqlen > self._seq_len_cached or
self._cos_cached.device != device``). Once the body has run, every disjunct is false until the
length outgrows the cache again or the tables move: not a per-step cost. So is a refresh whose bound is the table's own size
(``if n > self.t.size(1): self.t = ...``, :mod:`.growtables`), and one that only moves its
tables (``if self.t.device != d: self.t = self.t.to(d)``): once moved, the test fails until the
device or dtype asked for changes, which a generation does not do.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder, self_attr
from graphlint.static.growtables import outgrown, own_size_test

_KEPT = ("device", "dtype")  # what a refresh recomputes its tables for, besides their length


def refreshes_own_bound(stmt: cst.If) -> bool:
    """Whether ``stmt`` (no ``else``) is such a refresh: its test an ``or`` of growth tests
    ``x > self.a`` (``>=``, or ``self.a < x``), ``x > self.t.size(k)`` and ``self.t.device != d`` /
    ``self.t.dtype != d`` tests, and its body assigns ``self.a = x`` for every growth test and
    ``self.t`` for every table test."""
    if stmt.orelse is not None:
        return False
    tests = [(test, _growth(test)) for test in disjuncts(stmt.test)]
    if any(growth is None and _moved(test) is None and not own_size_test(test) for test, growth in tests):
        return False  # before the body's walk: asked of every ``if`` without ``else``
    stores = _self_stores(stmt.body)
    for test, growth in tests:
        if growth is not None:
            attr, value = growth
            if not any(v is not None and v.deep_equals(value) for v in stores.get(attr, ())):
                return False
            continue
        table = outgrown(test, stmt.body)  # ``n > self.t.size(1)``: the table's own size is the bound
        if table is not None and table in stores:
            continue
        table = _moved(test)
        if table is None or table not in stores:
            return False
    return True


def disjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``a or b or c`` -> [a, b, c]; anything else -> [itself]."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.Or:
        return disjuncts(test.left) + disjuncts(test.right)
    return [test]


def _growth(test: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
    """``x > self.a`` (``x >= self.a``, ``self.a < x``, ``self.a <= x``) -> ("a", x)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)) and self_attr(right) and not self_attr(test.left):
        return self_attr(right), test.left
    if isinstance(op, (cst.LessThan, cst.LessThanEqual)) and self_attr(test.left) and not self_attr(right):
        return self_attr(test.left), right
    return None


def _moved(test: cst.BaseExpression) -> str | None:
    """``self.t.device != d`` (or ``dtype``) -> "t"."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.NotEqual)):
        return None
    for side in (test.left, test.comparisons[0].comparator):
        if isinstance(side, cst.Attribute) and side.attr.value in _KEPT and self_attr(side.value):
            return self_attr(side.value)
    return None


def _self_stores(body: cst.BaseSuite) -> dict[str, list[cst.BaseExpression | None]]:
    """``self.a = v`` anywhere in the body: attribute -> the values (None for a tuple target's part)."""
    out: dict[str, list] = {}
    for node in preorder(body):
        if type(node) is cst.Assign:
            for target in node.targets:
                attr = self_attr(target.target)
                if attr is not None:
                    out.setdefault(attr, []).append(node.value)
                elif type(target.target) in (cst.Tuple, cst.List):
                    for el in target.target.elements:
                        if self_attr(el.value) is not None:
                            out.setdefault(self_attr(el.value), []).append(None)
    return out
