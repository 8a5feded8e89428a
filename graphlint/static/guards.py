"""Branches that never run in a captured decode step.

- ``if VERBOSE:`` / ``if self.debug:`` / ``if self._profile_detail:`` (and ``a if DEBUG else b``):
  the last name of the test (or the variable of ``os.environ.get("DEBUG")``) matches a guard
  pattern (``[tool.graphlint] guards``, case-insensitively); ``and`` with a guard guards too,
  ``not`` moves the guard to the ``else`` branch;
- prefill-only and training-only branches (``[tool.graphlint] prefill-guards``): ``if is_prefill:``,
  ``if ctx.is_prefill():``, ``if self.training:``, a mode compared with a prefill member
  (``if task.kind == TaskType.Prefill:``; ``!=`` selects the ``else``), a length compared with one token,
  ``if seqlen > 1:`` (also ``!= 1``, ``>= 2``, ``1 < seqlen``, and the ids' own length,
  ``input_ids.shape[1] > 1``: :mod:`.tokendims`) -- the decode step feeds one token per sequence,
  so those bodies run for the prompt only; same ``not``/``and`` logic;
- ``if not torch.cuda.is_current_stream_capturing():``: eager-only by construction; so is the
  rest of a block after ``if torch.cuda.is_current_stream_capturing(): return ...``, and the rest
  after ``if not self.verbose: return`` (a debug helper called from the step);
- ``if self._runner is None: self._runner = build()`` (also a constant-key slot,
  ``if self.state["mask"] is None: self.state["mask"] = ...``): lazy initialisation, which runs
  once, on the first (eager) step -- setup, not the step. Its calls are not hot (capture regions
  inside it are still checked);
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

from typing import Callable, Iterator, Sequence

import libcst as cst

from graphlint.static.cstwalk import last_statement, preorder, self_attr
from graphlint.static.names import name_matcher, resolve
from graphlint.static.params import POSITION_NAMES
from graphlint.static.refresh import disjuncts, refreshes_own_bound
from graphlint.static.tokendims import token_length

CAPTURING_PREDICATE = "torch.cuda.is_current_stream_capturing"
_POSITIONS = name_matcher(POSITION_NAMES)
ENV_READERS = ("os.environ.get", "os.getenv")


def guarded_branch(test: cst.BaseExpression, imports: dict[str, str], guards: Sequence[str],
                   prefill: Sequence[str] = ()) -> str | None:
    """Which branch of ``if test`` never runs in a captured step: "body", "orelse" or None."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = guarded_branch(test.expression, imports, guards, prefill)
        return {"body": "orelse", "orelse": "body"}.get(inner or "")
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        sides = (guarded_branch(test.left, imports, guards, prefill),
                 guarded_branch(test.right, imports, guards, prefill))
        return "body" if "body" in sides else None
    if type(test) is cst.Call and resolve(test.func, imports) == CAPTURING_PREDICATE:
        return "orelse"
    name = _guard_name(test, imports)
    if name is not None and _matches(name, guards):
        return "body"
    return _prefill_branch(test, prefill) if prefill else None


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
    if type(node) is cst.Attribute:
        return node.attr.value
    return node.value if type(node) is cst.Name else None


def _guard_name(test: cst.BaseExpression, imports: dict[str, str]) -> str | None:
    """What guard patterns are matched against (case-insensitively, so ``DEBUG_MODE`` is a
    ``*debug*`` guard): the last name of ``VERBOSE`` / ``self.debug``, or the variable read by
    ``os.environ.get("DEBUG")`` / ``os.getenv("DEBUG")``."""
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


def guarded_ifexp(node: cst.IfExp, imports: dict[str, str], guards: Sequence[str],
                  prefill: Sequence[str] = ()) -> Iterator[cst.CSTNode]:
    """``x.item() if DEBUG else 0``: the nodes of the branch that never runs in a captured step."""
    branch = guarded_branch(node.test, imports, guards, prefill)
    return preorder(node.body if branch == "body" else node.orelse) if branch else iter(())


def _self_slot(node: cst.BaseExpression, owners: tuple[str, ...] = ("self",)) -> str | None:
    """``self.x`` -> "x"; ``self.x["k"]`` (a constant key) -> "x['k']"; ``cls.x`` too if ``owners`` says."""
    if (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
            and isinstance(node.slice[0].slice.value, cst.SimpleString)):
        attr = self_attr(node.value, owners)
        return f"{attr}[{node.slice[0].slice.value.raw_value!r}]" if attr is not None else None
    return self_attr(node, owners)


def _getattr_self(node: cst.BaseExpression, func: str) -> str | None:
    """``getattr(self, "x", ...)`` / ``hasattr(self, "x")`` -> "x"."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == func):
        return None
    args = node.args
    if len(args) < 2 or not (isinstance(args[0].value, cst.Name) and args[0].value.value == "self"):
        return None
    return args[1].value.raw_value if isinstance(args[1].value, cst.SimpleString) else None


LAZY_OWNERS = ("self", "cls")


def is_lazy_init(stmt: cst.If) -> bool:
    """``if self.x is None:`` (or ``getattr(self, "x", None) is None``, ``not hasattr(self, "x")``)
    whose body assigns ``self.x``; also a class-level cache, ``if cls._buf is None: cls._buf = ...``."""
    test = stmt.test
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        attr = _getattr_self(test.expression, "hasattr")
    elif (
        type(test) is cst.Comparison
        and len(test.comparisons) == 1
        and type(test.comparisons[0].operator) is cst.Is
        and type(test.comparisons[0].comparator) is cst.Name
        and test.comparisons[0].comparator.value == "None"
    ):
        attr = _self_slot(test.left, LAZY_OWNERS) or _getattr_self(test.left, "getattr")
    else:
        return False
    if attr is None:
        return False
    return any(
        type(node) in (cst.AssignTarget, cst.AnnAssign) and _self_slot(node.target, LAZY_OWNERS) == attr
        for node in preorder(stmt.body)
    )


def clears_own_flag(stmt: cst.If) -> bool:
    """``if self._first_pass: ...; self._first_pass = False``: a branch that switches itself off
    runs on the first call after its flag is set (the prompt pass of a per-call model wrapper),
    not every step."""
    attr = self_attr(stmt.test)
    return attr is not None and any(
        isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "False"
        and any(self_attr(t.target) == attr for t in node.targets)
        for node in preorder(stmt.body))


def note_constant(known: dict[tuple[str, str], bool], function: str, stmt: cst.Assign | cst.AnnAssign) -> None:
    """Records, per (function, local), whether every assignment so far binds it to a literal."""
    value = stmt.value
    literal = type(value) is cst.Integer or (type(value) is cst.Name and value.value in ("True", "False"))
    targets = [t.target for t in stmt.targets] if type(stmt) is cst.Assign else [stmt.target]
    for target in targets:
        if type(target) is cst.Name:
            key = (function, target.value)
            known[key] = known.get(key, True) and literal


def counts_down(stmt: cst.If, constant: Callable[[str], bool]) -> bool:
    """``skip = 1`` ... ``if skip: ...; skip -= 1`` (or ``skip = 0``): a branch on a local that the
    function binds only to literals (``constant(name)``, so far in its body) and that the branch
    switches off or counts down runs a fixed number of times per call -- the first frames of a
    stream -- never once per step. A budget bound from an argument (``left = max_new_tokens``) is
    no constant: its countdown may be the step itself."""
    if not isinstance(stmt.test, cst.Name) or not constant(stmt.test.value):
        return False
    name = stmt.test.value
    for node in preorder(stmt.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, (cst.Name, cst.Integer)) \
                and node.value.value in ("False", "0", "None") \
                and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
            return True
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.SubtractAssign) \
                and isinstance(node.target, cst.Name) and node.target.value == name:
            return True
    return False


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


def fills_default(stmt: cst.If, optional: set[str]) -> bool:
    """``if position_ids is None: position_ids = ...`` for a parameter defaulting to ``None``: the
    default for an argument the decode loop passes (``generate()`` always passes position ids);
    computing it is a caller's fallback, not the step."""
    test = stmt.test
    if not (stmt.orelse is None and isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Is) and isinstance(test.left, cst.Name)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
            and test.left.value in optional):
        return False
    name = test.left.value
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


def once_flag(stmt: cst.If) -> str | None:
    """``if not self._prepared:`` (``== False``, ``is False``) -> "_prepared": a one-time step, if
    the class sets the flag to ``True`` somewhere (decided when the class ends: the setter is often
    a method written later). (``if self._first_pass: ...; self._first_pass = False`` clears itself:
    :func:`clears_own_flag` makes it set-up before this is asked.)

    A guard the branch disarms through a method of its own object -> "attr@m1+m2" (the ``self.m()``
    calls of the body): lazy growth, ``if seq_len > self.cached_len: self._grow(seq_len)``, and lazy
    initialisation by a helper, ``if self.table is None: self._build()`` -- or both on one attribute,
    ``if self.cached_len is None or seq_len > self.cached_len:``. Once ``_grow`` raises
    ``cached_len`` (or ``_build`` sets ``table``) the test fails on every later step until the
    sequence outgrows the cache again: set-up amortised over a generation, not a per-step cost
    (:func:`disarmed` decides it when the class ends, from what its methods assign)."""
    test = stmt.test
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return self_attr(test.expression)
    if (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.Equal, cst.Is)
            and type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "False"):
        return self_attr(test.left)
    # one attribute every disjunct tests (``self.cached is None or n > self.cached``), else none
    attrs = {_armed(part) for part in disjuncts(test)}
    attr = attrs.pop() if len(attrs) == 1 else None
    if attr is None:
        return None  # before the body's walk: asked of every ``if``, and most test no field
    methods = sorted({node.func.attr.value for node in preorder(stmt.body) if type(node) is cst.Call
                      and type(node.func) is cst.Attribute and self_attr(node.func) is not None})
    return f"{attr}@{'+'.join(methods)}" if methods else None


def _armed(test: cst.BaseExpression) -> str | None:
    """``n > self.cached`` / ``self.cached < n`` / ``self.table is None`` -> the attribute."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
        return self_attr(right)
    if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
        return self_attr(test.left)
    if isinstance(op, cst.Is) and _is_none(right):
        return self_attr(test.left)
    return None


def disarmed(raw: list, functions: dict, cls: str, writes: dict[str, set[str]]) -> set[str]:
    """The "attr@methods" flags (:func:`once_flag`) of ``cls``'s reports and calls whose branch
    calls a method of the class (or of a base in its file) that assigns ``self.attr``."""
    mine = {q for q, fn in functions.items() if fn.cls == cls}
    flags = {f[5:] for r in raw if r.function in mine for f in r.flags if f.startswith("once:") and "@" in f}
    flags |= {c.once for q in mine for c in functions[q].calls if "@" in c.once}
    out = set()
    for flag in flags:
        attr, _, methods = flag.partition("@")
        if any(attr in writes.get(m, ()) for m in methods.split("+")):
            out.add(flag)
    return out


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

    def branch(self, test: cst.BaseExpression) -> str | None:
        return guarded_branch(test, self.imports, self.guards, self.prefill)

    def runs_once(self, stmt: cst.If, fn) -> bool:
        """Its body is setup, not the step: lazy initialisation, a branch that clears its own flag,
        the default of an argument the loop passes (``fn``: the function's tensor facts), a branch
        true at one step, a cache refresh that raises its own bound (:mod:`.refresh`)."""
        return (is_lazy_init(stmt) or clears_own_flag(stmt) or fills_default(stmt, fn.optional)
                or one_step(stmt.test, fn.tensors, self.prefill) or refreshes_own_bound(stmt))

    def skipped_ifexp(self, node: cst.IfExp) -> Iterator[cst.CSTNode]:
        return guarded_ifexp(node, self.imports, self.guards, self.prefill)

    def ends_block(self, stmt: cst.CSTNode) -> bool:
        return returns_when_capturing(stmt, self.imports, self.guards, self.prefill)
