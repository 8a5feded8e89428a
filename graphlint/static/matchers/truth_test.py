"""``if t:`` / ``while t > 0:`` / ``assert t.all()`` / ``a if t else b`` on a tensor.

Python needs a host bool, so the tensor is read back: a sync that fails capture. Each operand
of ``and``/``or``/``not`` is checked on its own, so ``if self.use_cache and x is None`` is fine.
A tensor known to live on the host (:mod:`graphlint.static.cputensors`) is no sync. A call of an
object (``if self.stop(ids, scores):``, a module-like attribute built from a class) is presumed a
tensor here and flagged ``object-call:<callee>``: the linker drops it when every ``__call__`` the
call graph gives it returns a Python value (``any(...)``, ``len(...)``: see ``ArgValues.returns_number``).
``eos_id in ids`` with ``ids`` a device tensor is one too: ``Tensor.__contains__`` computes
``(ids == eos_id).any()`` on the device and reads it back to answer Python's ``in``; so is ``tok in
stop_ids`` with ``tok`` a device tensor and ``stop_ids`` a Python list or tuple: ``list.__contains__``
asks ``bool(tok == x)`` of each element in turn, one read per element until one matches (a set
hashes the tensor by identity instead, reading nothing). A comparison with ``None`` or a string
literal (``backend == "vllm"``, an unannotated setting presumed a tensor) reads nothing, and neither
does an operand run only where a type test said its name holds a Python value (``isinstance(m, int) and
m < 0``: :mod:`graphlint.static.pynarrow`).
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from graphlint.static.acceptance import acceptance
from graphlint.static.compound import tested_operands
from graphlint.static.cputensors import is_cpu_tensor
from graphlint.static.cstwalk import preorder
from graphlint.static.hostparams import py_flags
from graphlint.static.params import object_method
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.pynarrow import narrow, operand_names, widen


def operands(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation):
        yield from operands(test.left)
        yield from operands(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from operands(test.expression)
    else:
        yield test


WHERE = {"If": "if", "While": "while", "Assert": "assert", "IfExp": "a if t else b", "CompIf": "comprehension if"}


class TruthTest(Matcher):
    kind = "truth-test"
    node_types = ("If", "While", "Assert", "IfExp", "CompIf")

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        values = getattr(ctx, "values", None)
        shapes = ctx.oracle.fn.shapes if values is not None else set()
        typed = operand_names(node.test, ctx.imports)  # ``isinstance(m, int) and m < 0`` (:mod:`.pynarrow`)
        for operand, extra in tested_operands(values, node.test, shapes):
            if none_test(operand) or str_test(operand):
                continue  # ``t == None`` / ``t == "vllm"``: no tensor answers these, Python answers a bool
            if guarded_object(node, operand, ctx.oracle.fn):
                continue  # ``cache.get(i) if cache else None``: the arm it guards says ``cache`` is an object
            if self._reads(operand, ctx, typed.get(id(operand), ())):
                raw = ctx.defer(self.rule, operand, WHERE[type(node).__name__])
                if raw is not None and extra:  # a right operand runs only where the left lets it
                    raw.cond = raw.cond + extra
                if raw is not None and isinstance(operand, cst.Call) and ctx.oracle.is_module_call(operand.func):
                    raw.flags = raw.flags | {f"object-call:{ctx.callee_ir(operand)!r}"}
                if raw is not None:  # a parameter presumed a tensor: what every hot caller passes (:mod:`..truthkinds`)
                    raw.flags = raw.flags | set(py_flags(operand, ctx.oracle.fn))
                if raw is not None and acceptance(operand, ctx.oracle.fn, ctx.imports, ctx.oracle.cls):
                    raw.flags = raw.flags | {"acceptance"}  # a rejection sampler's by-design read
                ctx.emit(raw)
                return


    @staticmethod
    def _reads(operand: cst.BaseExpression, ctx: MatchContext, python: frozenset[str]) -> bool:
        """Whether testing ``operand`` reads a device tensor, with ``python`` holding Python values."""
        taken = narrow(ctx.oracle.fn, python) if python else {}
        try:
            return (ctx.oracle.is_tensor(operand) or searches_tensor(operand, ctx) or sought_in_list(operand, ctx)) \
                and not is_cpu_tensor(operand, ctx.oracle)
        finally:
            widen(ctx.oracle.fn, taken)


def guarded_object(node: cst.CSTNode, operand: cst.BaseExpression, fn) -> bool:
    """``cache.get(i) if cache else None`` / ``if cache: cache.update(i, kv)``: the parameter tested is
    presumed a tensor only because a hot function left it unannotated, and the code the test guards
    calls a method no tensor has on it (:func:`.params.object_method`): it holds an object -- the
    package's cache class, a dict -- whose truth test Python answers on the host."""
    if type(operand) is not cst.Name or operand.value not in fn.presumed or operand.value not in fn.params \
            or type(node) not in (cst.IfExp, cst.If):
        return False
    names = {operand.value}
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and object_method(n.func, names)
               for n in preorder(node.body))


def none_test(test: cst.BaseExpression) -> bool:
    """``x == None`` / ``x != None`` (either side): a tensor compared with ``None`` gives Python's
    identity answer, a host bool, without reading the tensor."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    c = test.comparisons[0]
    return type(c.operator) in (cst.Equal, cst.NotEqual) and any(
        type(side) is cst.Name and side.value == "None" for side in (test.left, c.comparator))


def str_test(test: cst.BaseExpression) -> bool:
    """``backend == "vllm"`` / ``mode != "eager"`` (either side a string literal): a setting compared
    with a name, a host bool -- a tensor compared with a str reads nothing either (``Tensor.__eq__``
    of a str is NotImplemented, and Python answers by identity)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    c = test.comparisons[0]
    return type(c.operator) in (cst.Equal, cst.NotEqual) and any(
        type(side) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString) for side in (test.left, c.comparator))


def searches_tensor(test: cst.BaseExpression, ctx: MatchContext) -> bool:
    """``x in t`` / ``x not in t`` with ``t`` a device tensor: ``Tensor.__contains__`` reads back.
    A string sought (``f"layer_{i}" in embeds``) reads nothing whatever holds it: a dict's
    ``__contains__`` hashes the key, and ``Tensor.__contains__`` refuses a ``str`` before any read."""
    if not isinstance(test, cst.Comparison):
        return False
    sought = [test.left] + [c.comparator for c in test.comparisons]
    return any(isinstance(c.operator, (cst.In, cst.NotIn)) and not _is_text(key) and ctx.oracle.is_tensor(c.comparator)
               and not is_cpu_tensor(c.comparator, ctx.oracle) for key, c in zip(sought, test.comparisons))


def _is_text(node: cst.BaseExpression) -> bool:
    """A string literal, an f-string or a ``+`` of them: a ``str`` at run time."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Add:
        return _is_text(node.left) and _is_text(node.right)
    return type(node) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def sought_in_list(test: cst.BaseExpression, ctx: MatchContext) -> bool:
    """``t in xs`` / ``t not in xs`` with ``t`` a device tensor and ``xs`` a Python list or tuple."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 \
            or not isinstance(test.comparisons[0].operator, (cst.In, cst.NotIn)):
        return False
    seq = test.comparisons[0].comparator
    listed = (type(seq) is cst.Tuple and bool(seq.elements)) or ctx.oracle.is_list_value(seq)
    return listed and ctx.oracle.is_tensor(test.left) and not is_cpu_tensor(test.left, ctx.oracle)
