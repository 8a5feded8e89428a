"""Branches that never run in a captured decode step.

- ``if VERBOSE:`` / ``if self.debug:`` / ``if self._profile_detail:`` (and ``a if DEBUG else b``):
  the last name of the test (the key of ``cfg["debug"]``, the variable of ``os.environ.get("DEBUG")``;
  a count or size above zero stands for its own truth, ``if results["profiler_buf_size"] > 0:``) matches a guard
  pattern (``[tool.graphlint] guards``, case-insensitively); ``and`` with a guard guards too,
  ``not`` moves the guard to the ``else`` branch, and ``or`` with a side always true there guards
  the ``else`` branch (``if not x.requires_grad or ...: return``: the rest trains);
- a module's self-test, ``if __name__ == "__main__":`` inside a function (:func:`main_test`);
- ``if not __debug__:``: Python's own constant, true unless it runs with ``-O`` (so ``if __debug__:``
  is no debug switch: its body runs every step in a default run);
- prefill-only and training-only branches (``[tool.graphlint] prefill-guards``): ``if is_prefill:``,
  ``if ctx.is_prefill():``, ``if self.training:``, ``if x.requires_grad:`` (no activation needs a
  gradient in a decode step), a mode compared with a prefill member
  (``if task.kind == TaskType.Prefill:``; ``!=`` selects the ``else``), a length compared with one token,
  ``if seqlen > 1:`` (also ``!= 1``, ``>= 2``, ``1 < seqlen``, and the ids' own length,
  ``input_ids.shape[1] > 1``: :mod:`.tokendims`) -- the decode step feeds one token per sequence,
  so those bodies run for the prompt only; same ``not``/``and`` logic;
- ``if not torch.cuda.is_current_stream_capturing():``: eager-only by construction; so is the
  rest of a block after ``if torch.cuda.is_current_stream_capturing(): return ...`` (also beside a
  CUDA test, ``if q.is_cuda and ...capturing():``: a capture records CUDA work only), and the rest
  after ``if not self.verbose: return`` (a debug helper called from the step);
- ``if not torch.compiler.is_compiling():`` is no guard but a branch condition (:func:`compile_condition`):
  a compiled function's trace never takes it, an eager run or an uncompiled capture always does, so
  the link decides it per context from what reaches the function (:func:`.link.uncompiled_only`);
- lazy initialisation, one-time flags, countdowns and guards a method disarms run once per
  generation: :mod:`.runonce`;
- ``if self.extra is not None:`` where no analysed code ever gives ``extra`` a value (an option
  its class defaults to None and nothing sets): dead code here; its reports carry the flag
  "needs:extra" and the linker drops them once it knows every file's attribute writes (the
  class's family's ``self.extra = v`` and ``setattr(self, ...)``, any object's ``obj.extra = v``;
  a ``setattr(obj, name, v)`` with a computed name on another object is not followed);
- ``if cur_len == 1:`` / ``if step == self.max_steps - 1:``: a per-step position (named like one,
  ``params.POSITION_NAMES``, but not a step's token count, which is a prefill guard) equal to a
  value that holds no position: the body runs at one position of the generation, once, not every
  step -- like lazy initialisation.

A branch on a measurement switch that is off by default (``if benchmark:`` with ``--benchmark`` a
``store_true`` option) is not skipped: it may run every step when asked for, so what it does is
reported, at most as a warning (:mod:`.optin`).
"""

from __future__ import annotations

from typing import Iterator, Sequence

import libcst as cst

from graphlint.static.cstwalk import last_statement, none_compared, preorder, self_attr
from graphlint.static.memoguards import miss_builds
from graphlint.static.names import name_matcher, resolve
from graphlint.static.params import POSITION_NAMES
from graphlint.static.refresh import refreshes_own_bound
from graphlint.static.runonce import clears_own_flag, is_lazy_init
from graphlint.static.stopchecks import finishes_rows
from graphlint.static.tokendims import token_length

CAPTURING_PREDICATE = "torch.cuda.is_current_stream_capturing"
#: true while torch.compile traces (dynamo folds them to a constant): the condition :func:`compile_condition` gives
COMPILE_PREDICATES = frozenset(("torch.compiler.is_compiling", "torch._dynamo.is_compiling",
                                "torch.compiler.is_dynamo_compiling", "torch._utils.is_compiling"))
COMPILING = ("compiling",)
_POSITIONS = name_matcher(POSITION_NAMES)
ENV_READERS = ("os.environ.get", "os.getenv")


def guarded_branch(test: cst.BaseExpression, imports: dict[str, str], guards: Sequence[str],
                   prefill: Sequence[str] = ()) -> str | None:
    """Which branch of ``if test`` never runs in a captured step: "body", "orelse" or None."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = guarded_branch(test.expression, imports, guards, prefill)
        return {"body": "orelse", "orelse": "body"}.get(inner or "")
    if type(test) is cst.BooleanOperation:
        sides = (guarded_branch(test.left, imports, guards, prefill),
                 guarded_branch(test.right, imports, guards, prefill))
        if type(test.operator) is cst.And:  # ``x.is_cuda and capturing()``: a capture runs on CUDA only
            cuda = [s == "orelse" or on_cuda(t, imports) for s, t in zip(sides, (test.left, test.right))]
            if "orelse" in sides and all(cuda):
                return "orelse"
            return "body" if "body" in sides else None
        # ``a or not x.requires_grad``: one side always true makes the test true; both false, false
        return "orelse" if "orelse" in sides else "body" if sides == ("body", "body") else None
    if type(test) is cst.Call and resolve(test.func, imports) == CAPTURING_PREDICATE:
        return "orelse"
    if type(test) is cst.Name and test.value == "__debug__":  # the interpreter's constant, True without -O
        return "orelse"
    name = _guard_name(test, imports)
    if name is not None and _matches(name, guards):
        return "body"
    return _prefill_branch(test, prefill) if prefill else None


def on_cuda(test: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """``x.is_cuda`` / ``torch.cuda.is_available()`` / ``x.device.type == "cuda"``: true in every captured step
    (a CUDA graph records CUDA work only), so beside the capturing test it leaves the ``else`` eager-only."""
    if type(test) is cst.Attribute:
        return test.attr.value == "is_cuda"
    if type(test) is cst.Call:
        return not test.args and resolve(test.func, imports) == "torch.cuda.is_available"
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.comparisons[0].operator) is cst.Equal:
        sides = (test.left, test.comparisons[0].comparator)
        return any(type(a) is cst.Attribute and a.attr.value == "type" and type(b) is cst.SimpleString
                   and b.evaluated_value == "cuda" for a, b in (sides, sides[::-1]))
    return False


def compile_condition(test: cst.BaseExpression, imports: dict[str, str]) -> tuple | None:
    """``torch.compiler.is_compiling()`` -> :data:`COMPILING`, ``not ...`` -> its negation: a branch condition
    the link decides per context (a compiled function's trace never takes ``if not is_compiling():``,
    an eager or captured-uncompiled run always does: :func:`.link.uncompiled_only`)."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = compile_condition(test.expression, imports)
        return ("not", inner) if inner is not None else None
    if type(test) is cst.Call and not test.args and resolve(test.func, imports) in COMPILE_PREDICATES:
        return COMPILING
    return None


def main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` inside a function: a module's self-test, never run when an engine
    imports it (at a module's top level it is the script's entry point: :mod:`.tokenloops`)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 \
            or type(test.comparisons[0].operator) is not cst.Equal:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(type(a) is cst.Name and a.value == "__name__" and type(b) is cst.SimpleString
               and b.evaluated_value == "__main__" for a, b in (sides, sides[::-1]))


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return name_matcher(tuple(patterns), ignore_case=True).match(name) is not None


def _prefill_branch(test: cst.BaseExpression, patterns: Sequence[str]) -> str | None:
    """``is_prefill`` / ``ctx.is_prefill()`` / ``self.training``: "body"; ``seqlen > 1``: "body";
    ``seqlen == 1``: "orelse" (its else is the multi-token branch)."""
    if type(test) is cst.Call and not test.args:
        test = test.func  # ``forward_mode.is_extend()``
    name = _last_name(test)
    if name is not None:
        return "body" if _matches(name, patterns) else None
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return None
    left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
    mode = _prefill_member(left, right, op, patterns)
    if mode is not None:
        return mode
    if type(left) is cst.Integer:  # ``1 < seqlen`` -> ``seqlen > 1``
        left, right = right, left
        op = {cst.LessThan: cst.GreaterThan(), cst.GreaterThan: cst.LessThan(), cst.LessThanEqual: cst.GreaterThanEqual(),
              cst.GreaterThanEqual: cst.LessThanEqual()}.get(type(op), op)
    name = _last_name(left)
    if type(right) is not cst.Integer or not (token_length(left)
                                               or name is not None and _matches(name, patterns)):
        return None
    bound = right.evaluated_value
    if (type(op) is cst.GreaterThan and bound == 1) or (type(op) is cst.GreaterThanEqual and bound == 2):
        return "body"
    if type(op) is cst.NotEqual and bound == 1:
        return "body"
    if type(op) is cst.Equal and bound == 1:
        return "orelse"
    return None


def _prefill_member(left: cst.BaseExpression, right: cst.BaseExpression, op: cst.BaseCompOp,
                    patterns: Sequence[str]) -> str | None:
    """``task.kind == TaskType.Prefill`` / ``mode is Mode.PREFILL``: "body"; ``!=`` / ``is not``:
    "orelse". Only an attribute (an enum member, a class constant) counts: ``x == seqlen`` compares
    two lengths."""
    member = next((side for side in (right, left) if isinstance(side, cst.Attribute)
                   and _matches(side.attr.value, patterns)), None)
    if member is None:
        return None
    if isinstance(op, (cst.Equal, cst.Is)):
        return "body"
    return "orelse" if isinstance(op, (cst.NotEqual, cst.IsNot)) else None


def _last_name(node: cst.BaseExpression) -> str | None:
    """``x.name`` / ``name``, or ``getattr(x, "name")`` / ``getattr(x, "name", default)``."""
    if type(node) is cst.Attribute:
        return node.attr.value
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "getattr" \
            and len(node.args) in (2, 3) and type(node.args[1].value) is cst.SimpleString:
        return str(node.args[1].value.evaluated_value)
    return node.value if type(node) is cst.Name else None


def predicates(module: cst.Module) -> dict[str, cst.BaseExpression]:
    """Function name -> the test it returns, for each name the module defines once (a method or a
    function) with a body that is one ``return <test>`` (a docstring aside): ``def _is_decode(self,
    batch): return batch.max_query_len == 1``. A branch on a call of one is a branch on its test
    (:meth:`Guards.branch`): the batch's mode tested through a helper, as written inline."""
    found: dict[str, list] = {}
    for node in preorder(module):
        if type(node) is not cst.FunctionDef:
            continue
        body = [st for st in getattr(node.body, "body", ()) if not _docstring(st)]
        one = body[0].body[0] if len(body) == 1 and type(body[0]) is cst.SimpleStatementLine \
            and len(body[0].body) == 1 else None
        found.setdefault(node.name.value, []).append(one.value if type(one) is cst.Return else None)
    return {name: tests[0] for name, tests in found.items() if len(tests) == 1 and tests[0] is not None}


def _docstring(stmt: cst.CSTNode) -> bool:
    return type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and type(stmt.body[0]) is cst.Expr \
        and type(stmt.body[0].value) in (cst.SimpleString, cst.ConcatenatedString)


def inline(test: cst.BaseExpression, tests: dict[str, cst.BaseExpression], depth: int = 0) -> cst.BaseExpression:
    """``test`` with each call of a predicate (``self.is_decode(b)``, ``is_decode(b)``) replaced by
    the test it returns (under ``not``/``and``/``or`` too; a predicate calling another, twice over)."""
    if depth > 2 or not tests:
        return test
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return test.with_changes(expression=inline(test.expression, tests, depth))
    if type(test) is cst.BooleanOperation:
        return test.with_changes(left=inline(test.left, tests, depth), right=inline(test.right, tests, depth))
    if type(test) is cst.Call:
        func = test.func
        name = func.value if type(func) is cst.Name else \
            func.attr.value if type(func) is cst.Attribute and self_attr(func) is not None else None
        if name in tests and not any(a.star for a in test.args):
            return inline(tests[name], tests, depth + 1)
    return test


def _guard_name(test: cst.BaseExpression, imports: dict[str, str]) -> str | None:
    """What guard patterns are matched against (case-insensitively, so ``DEBUG_MODE`` is a
    ``*debug*`` guard): the last name of ``VERBOSE`` / ``self.debug``, the key of
    ``cfg["debug"]``, or the variable read by ``os.environ.get("DEBUG")`` / ``os.getenv("DEBUG")``;
    a count or size above zero is its switch's truth (``if results["profiler_buf_size"] > 0:``,
    ``if self.debug_level >= 1:``: the buffer or level exists only when profiling or debugging is on)."""
    test = _above_zero(test)
    if type(test) is cst.Subscript and len(test.slice) == 1 and type(test.slice[0].slice) is cst.Index \
            and type(test.slice[0].slice.value) is cst.SimpleString:
        key = test.slice[0].slice.value.evaluated_value
        return key if isinstance(key, str) else None  # ``msg[b"debug"]``: bytes match no pattern
    if type(test) is cst.Attribute:
        return test.attr.value
    if type(test) is cst.Name:
        return test.value
    if (
        type(test) is cst.Call
        and resolve(test.func, imports) in ENV_READERS
        and test.args
        and type(test.args[0].value) is cst.SimpleString
    ):
        return test.args[0].value.raw_value
    return None


def needed_attrs(test: cst.BaseExpression) -> tuple[str, ...]:
    """``if self.x is not None:`` (or such a conjunct of an ``and``) -> ("x",)."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return needed_attrs(test.left) + needed_attrs(test.right)
    if (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) is cst.IsNot and _is_none(test.comparisons[0].comparator)):
        attr = self_attr(test.left)
        return (attr,) if attr is not None else ()
    return ()


def written_attrs(target: cst.BaseExpression, value: cst.BaseExpression | None, cls: str) -> Iterator[str]:
    """An attribute this code gives a value (``v`` not None, tuple targets too): ``self.x = v`` in
    class ``cls`` -> "cls:x" (that class's own), ``obj.x = v`` -> "x" (an object of any class)."""
    if type(target) in (cst.Tuple, cst.List):
        for el in target.elements:
            yield from written_attrs(el.value, None, cls)
    elif type(target) is cst.Attribute and not _is_none(value):
        yield f"{cls}:{target.attr.value}" if cls and self_attr(target) else target.attr.value


def _is_none(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def one_step(test: cst.BaseExpression, tensors: set[str], prefill: Sequence[str] = ()) -> bool:
    """``if cur_len == 1:``: a position (named like one, not like a step's token count, and no
    tensor) equal to a value that holds no position: true at one step of the generation."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    named = [isinstance(side, cst.Name) and _POSITIONS.match(side.value) is not None for side in sides]
    if named.count(True) != 1:
        return False
    name, other = sides if named[0] else sides[::-1]
    if name.value in tensors or _matches(name.value, prefill):
        return False
    return not any(type(n) is cst.Name and _POSITIONS.match(n.value) for n in preorder(other))


#: the condition kind of a :func:`fills_default` branch, ``(GIVEN, ("is", p, None))``: taken only where
#: the values reaching ``p`` are known and hold ``None`` (:meth:`.argvalues.ArgValues.truths`)
GIVEN = "given"


def fills_default(stmt: cst.If, optional: set[str]) -> bool:
    """``if position_ids is None: position_ids = ...`` for a parameter defaulting to ``None``: the
    default for an argument the decode loop passes (``generate()`` always passes position ids);
    computing it is a caller's fallback, not the step -- unless a hot caller is seen to leave it out
    or pass ``None`` (``plan=None`` handed on by a mode that plans nothing ahead): the walker tags the
    branch's condition :data:`GIVEN` and the link decides it from the values reaching ``p``."""
    left = none_compared(stmt.test)
    if not (stmt.orelse is None and type(left) is cst.Name and left.value in optional):
        return False
    name = left.value
    return any(isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name) and node.target.value == name
               for node in preorder(stmt.body))


def fills_field_default(stmt: cst.If, test: tuple) -> bool:
    """``state = self._state`` then ``if state is None: state = self._init_state(n)``: a local read
    from a field (``test``, :mod:`.valuefacts`' condition: its one binding is the field) and filled
    in only when the field is unset. The field holds what a start method keeps there (a stream's
    state, a cache); the branch is the fallback for a call outside it (a non-streaming forward),
    as :func:`fills_default` is for a parameter the decode loop always passes."""
    if not (stmt.orelse is None and isinstance(stmt.test, cst.Comparison) and isinstance(stmt.test.left, cst.Name)
            and test[:1] == ("is",) and test[2] is None and isinstance(test[1], tuple) and test[1][:1] == ("l",)):
        return False
    bindings = test[1][1]
    if not (len(bindings) == 1 and isinstance(bindings[0][0], tuple) and bindings[0][0][:1] == ("f",)):
        return False
    name = stmt.test.left.value
    return any(isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name) and node.target.value == name
               for node in preorder(stmt.body))


def returns_when_capturing(stmt: cst.CSTNode, imports: dict[str, str], guards: Sequence[str] = (),
                           prefill: Sequence[str] = ()) -> bool:
    """``if torch.cuda.is_current_stream_capturing(): return ...``, ``if not self.verbose: return``,
    ``if seqlen == 1: return decode(...)`` (no else): what follows runs only eagerly, only with
    the guard on, or only for the prompt."""
    if type(stmt) is not cst.If or stmt.orelse is not None:
        return False
    if guarded_branch(stmt.test, imports, guards, prefill) != "orelse":
        return False
    return type(last_statement(stmt.body)) in (cst.Return, cst.Raise)


class Guards:
    """The walker's one handle on guards: its imports and the configured patterns."""

    def __init__(self, imports: dict[str, str], guards: Sequence[str], prefill: Sequence[str]):
        self.imports, self.guards, self.prefill = imports, tuple(guards), tuple(prefill)
        self.tests: dict[str, cst.BaseExpression] = {}  # the module's :func:`predicates`

    def branch(self, test: cst.BaseExpression) -> str | None:
        return guarded_branch(inline(test, self.tests), self.imports, self.guards, self.prefill)

    def compiling(self, test: cst.BaseExpression) -> tuple | None:
        return compile_condition(test, self.imports)

    def runs_once(self, stmt: cst.If, fn) -> bool:
        """Its body is setup, not the step: lazy initialisation, a branch that clears its own flag,
        a branch true at one step (``fn``: the function's tensor facts), a cache refresh that raises
        its own bound (:mod:`.refresh`), a memo's miss (:mod:`.memoguards`), a branch a row takes once,
        on the step it ends (:func:`.stopchecks.finishes_rows`)."""
        return (is_lazy_init(stmt) or clears_own_flag(stmt) or miss_builds(stmt, fn)
                or one_step(stmt.test, fn.tensors, self.prefill) or refreshes_own_bound(stmt) or finishes_rows(stmt, fn))

    def skipped_ifexp(self, node: cst.IfExp) -> Iterator[cst.CSTNode]:
        """``x.item() if DEBUG else 0``: the nodes of the branch that never runs in a captured step."""
        branch = self.branch(node.test)
        return preorder(node.body if branch == "body" else node.orelse) if branch else iter(())

    def ends_block(self, stmt: cst.CSTNode) -> bool:
        if type(stmt) is cst.If and self.tests:
            stmt = stmt.with_changes(test=inline(stmt.test, self.tests))
        return returns_when_capturing(stmt, self.imports, self.guards, self.prefill)


def _above_zero(test: cst.BaseExpression) -> cst.BaseExpression:
    """``n > 0`` / ``n != 0`` / ``n >= 1`` / ``0 < n`` -> ``n``, the value whose truth the test is; else ``test``."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return test
    left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
    if type(left) is cst.Integer and type(op) is cst.LessThan and left.value == "0":
        return right
    if type(right) is cst.Integer and (type(op) in (cst.GreaterThan, cst.NotEqual) and right.value == "0"
                                       or type(op) is cst.GreaterThanEqual and right.value == "1"):
        return left
    return test
