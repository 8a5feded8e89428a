"""Batch stop checks and stop tests: the truth tests a per-token loop stops on (:mod:`.stepresult`,
:mod:`.hostreads`)."""

from __future__ import annotations

import re

import libcst as cst

from graphlint.static.cstwalk import called_name, names_in, preorder, top_small_statements
from graphlint.static.loopexits import leaves_at_end
from graphlint.static.oncebound import sole_assignments
from graphlint.static.refresh import disjuncts


#: a flag named for stopping (``stop``, ``done``, ``finished``, ``is_eos``): ``fresh = True`` is no stop
STOP_FLAG = re.compile(r"stop|done|finish|eos|end|terminat|complete|exit|halt", re.IGNORECASE)
#: reductions and membership tests: a truth test of one is a batch stop check (``if done.all():``)
STOP_REDUCTIONS = frozenset(("all", "any", "isin"))
#: a value that ends a sequence (``self.EOS``, ``eos_token_id``, ``stop_ids``, ``im_end_id``)
END_VALUE = re.compile(r"eos|stop|(^|_)end(_|$)|terminat", re.IGNORECASE)


def stop_check(anchor: cst.CSTNode) -> bool:
    """``done.all()``, ``any(flags)``, ``torch.isin(t, stops)``, ``eos in ids``: one bit the engine
    could keep on the device or test every few steps, not the step's data the host consumes."""
    for node in preorder(anchor):
        if type(node) is cst.Call:
            func = node.func
            name = called_name(func)
            if name in STOP_REDUCTIONS:
                return True
        elif type(node) is cst.ComparisonTarget and type(node.operator) in (cst.In, cst.NotIn):
            return True
    return False


def exits_loop(stmt: cst.CSTNode) -> bool:
    """A loop's exit test: ``while t:`` or ``if t: break`` / ``return`` (the body's first statement):
    the host decides there whether to run the next step at all."""
    if type(stmt) is cst.While:
        return True
    if type(stmt) is not cst.If or stmt.orelse is not None:
        return False
    body = stmt.body.body
    first = body[0] if body else None
    if type(first) is cst.SimpleStatementLine:
        first = first.body[0] if first.body else None
    return type(first) in (cst.Break, cst.Return)


def stops_loop(stmt: cst.CSTNode) -> bool:
    """A loop's stop test: an exit test (:func:`exits_loop`), or an ``if t:`` whose arm breaks or
    returns further down, or sets a flag named for stopping (``stop = True``) that the loop tests later."""
    if exits_loop(stmt):
        return True
    if type(stmt) is not cst.If:
        return False
    for small in top_small_statements(stmt.body):
        if type(small) in (cst.Break, cst.Return):
            return True
        if type(small) is cst.Assign and type(small.value) is cst.Name and small.value.value == "True" \
                and all(type(t.target) is cst.Name and STOP_FLAG.search(t.target.value) for t in small.targets):
            return True
    return False


def exits_at_end(stmt: cst.CSTNode) -> bool:
    """``if t: <log the lengths>; break``: an exit test whose body leaves the loop at its end, with
    no ``continue`` in it (:func:`.loopexits.leaves_at_end`) -- a batch stop check there is taken
    for the step loop's exit only where it sits in the step loop itself, not in a loop nested in it
    or in a function it calls (:mod:`.stepresult`, :meth:`.contexts.Placement.loop_exit`)."""
    return type(stmt) is cst.If and stmt.orelse is None and not exits_loop(stmt) and leaves_at_end(stmt.body)


def finishes_rows(stmt: cst.CSTNode, fn=None) -> bool:
    """``if eos in tokens:`` / ``if (tokens == eos).any():`` (each disjunct such a test) whose arm
    neither leaves the loop nor sets its stop flag (:func:`stops_loop`): it runs on the steps a row
    reaches its end -- the finished rows' bookkeeping, their removal from the batch -- once per
    row, not per token. The test itself is still the step's. With ``fn`` (the function's tensor
    facts) the test's names are followed to what the function binds them to (:func:`_ends`):
    ``is_eos = tok == eos; finished = ~retired & (is_eos | is_full)`` then ``if finished.any():``."""
    if type(stmt) is not cst.If or stops_loop(stmt):
        return False
    fn = fn if fn is not None and getattr(fn, "defn", None) is not None else None
    return all(_end_test(part, fn) for part in disjuncts(stmt.test))


def _end_test(test: cst.BaseExpression, fn=None) -> bool:
    """``end in x`` or ``any``/``.any()`` of ``x == end``, ``end`` a value named for ending."""
    if type(test) is cst.Comparison:
        return len(test.comparisons) == 1 and type(test.comparisons[0].operator) is cst.In \
            and _names_end(test.left)
    if type(test) is not cst.Call or called_name(test.func) != "any":
        return False
    operand = test.func.value if type(test.func) is cst.Attribute else test.args[0].value if test.args else None
    if fn is not None:
        return operand is not None and _ends(operand, fn, frozenset())
    return type(operand) is cst.Comparison and len(operand.comparisons) == 1 \
        and type(operand.comparisons[0].operator) is cst.Equal \
        and (_names_end(operand.left) or _names_end(operand.comparisons[0].comparator))


#: a bound a row's length reaches when it must end (``max_len``, ``self.max_kv_cache``, ``limit``)
LENGTH_BOUND = re.compile(r"(^|_)max(_|$)|limit", re.IGNORECASE)
#: what reaches it: a row's length or position (``lengths``, ``kv_cache_len + k``, ``pos``, ``n_steps``)
ROW_LENGTH = re.compile(r"len|pos|step|count", re.IGNORECASE)


def _ends(node: cst.BaseExpression, fn, seen: frozenset) -> bool:
    """Whether an element-wise mask is true only for rows ending on this step: ``x == end``, a
    length or position at its bound (``lengths >= max_len``), ``a & b`` with either side such a mask, ``a | b`` with
    both, a name every binding of the function makes such a mask (not a flag kept across steps:
    ``done |= x`` or ``done = zeros(...)`` rebinds it otherwise, and a parameter comes from outside).
    A name the test itself spells (``seen`` empty) must be named for ending rows: ``finished``, not
    ``need_resample = keep & (tok == eos)`` (rows that drew an end token too early draw again), alone
    or in ``(need_resample & valid).any()``; the names its bindings use are vouched for by it."""
    kind = type(node)
    if kind is cst.Comparison:
        if len(node.comparisons) != 1:
            return False
        op, left, right = node.comparisons[0].operator, node.left, node.comparisons[0].comparator
        if type(op) is cst.Equal:
            return _names_end(left) or _names_end(right)
        if type(op) in (cst.GreaterThan, cst.GreaterThanEqual):
            return _names_bound(right) and _counts_length(left)
        return type(op) in (cst.LessThan, cst.LessThanEqual) and _names_bound(left) and _counts_length(right)
    if kind is cst.BinaryOperation:
        if type(node.operator) is cst.BitAnd:
            return _ends(node.left, fn, seen) or _ends(node.right, fn, seen)
        return type(node.operator) is cst.BitOr and _ends(node.left, fn, seen) and _ends(node.right, fn, seen)
    if kind is cst.Name and node.value not in seen:
        if not seen and not STOP_FLAG.search(node.value):
            return False
        values = sole_assignments(fn, node.value)
        return bool(values) and all(_ends(v, fn, seen | {node.value}) for v in values)
    return False


def _names_end(node: cst.BaseExpression) -> bool:
    name = node.value if type(node) is cst.Name else node.attr.value if type(node) is cst.Attribute else ""
    return bool(END_VALUE.search(name))


def _counts_length(node: cst.BaseExpression) -> bool:
    """Whether a side mentions a row's length or position by name (``bucket.kv_cache_len + k``)."""
    return any(ROW_LENGTH.search(n.value if type(n) is cst.Name else n.attr.value)
               for n in preorder(node) if type(n) in (cst.Name, cst.Attribute))


def _names_bound(node: cst.BaseExpression) -> bool:
    name = node.value if type(node) is cst.Name else node.attr.value if type(node) is cst.Attribute else ""
    return bool(LENGTH_BOUND.search(name))


def mark_stop_reads(raws: list, start: int, body: cst.CSTNode) -> None:
    """Flag ``stop-test`` a read bound to a name that a stop test of the same block uses first
    (``tok = nxt.item()`` then ``if tok in eos_ids: break``, nothing using ``tok`` between):
    the read that test needs, as ``if nxt.item() in eos_ids: break`` is -- in an eager loop a sync
    of its own, never the one read by design (:mod:`.stepresult`)."""
    blocks: dict[int, tuple] | None = None
    for raw in raws[start:]:
        stmt = raw.stmt
        if "bound" not in raw.flags or "stop-test" in raw.flags or type(stmt) is not cst.Assign \
                or not all(type(t.target) is cst.Name for t in stmt.targets):
            continue
        if blocks is None:  # each simple statement -> the statements after its line in its block
            blocks = {id(small): (node.body, i) for node in preorder(body) if type(node) is cst.IndentedBlock
                      for i, line in enumerate(node.body) if type(line) is cst.SimpleStatementLine
                      for small in line.body}
        where = blocks.get(id(stmt))
        if where is not None and _tested_next(where[0][where[1] + 1:], {t.target.value for t in stmt.targets}):
            raw.flags = raw.flags | {"stop-test"}


def _tested_next(following, bound: set[str]) -> bool:
    """Whether the first statement of ``following`` that mentions a name of ``bound`` is a stop test
    of it. One that uses the value first (``out.append(tok)``, then ``if tok == eos: break``) reads
    it for the host's output, the step's one read, which the test then reuses for free."""
    for line in following:
        if stops_loop(line) and bound.intersection(names_in(line.test)):
            return True
        if type(line) is not cst.SimpleStatementLine or any(bound.intersection(names_in(small)) for small in line.body):
            return False  # used, rebound, or a block that may do either
    return False
