"""Guards that run once, or a fixed number of times, per generation: set-up, not the step.

Their own unit beside :mod:`.guards` (branches that never run in a captured step, by their test
alone) because each needs more than the test: what the body assigns, or, for a flag the class
arms elsewhere, what the class's methods write (decided when the class ends).

- ``if self._runner is None: self._runner = build()`` (also a constant-key slot,
  ``if self.state["mask"] is None: self.state["mask"] = ...``): lazy initialisation, which runs
  once, on the first (eager) step -- setup, not the step. Its calls are not hot (capture regions
  inside it are still checked);
- ``if self._first_pass: ...; self._first_pass = False``: a branch that clears its own flag;
- ``skip = 1`` ... ``if skip: ...; skip -= 1``: a countdown of a local bound only to literals;
- ``if not self._prepared:`` (also as one conjunct, ``if self.split and not self._filled:``): a one-time
  flag the class sets elsewhere, and a guard the branch disarms through a method of its object (lazy
  growth, ``if n > self.cached: self._grow(n)``; another object's flag: :mod:`.armedcalls`);
- ``if self.inited: return`` and the rest of the block sets the flag buffer ``self.inited`` in place
  (a codebook's lazy k-means init, ``self.inited.data.copy_(torch.Tensor([True]))``): the same,
  spelled as an exit.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphlint.static.classtests import conjuncts
from graphlint.static.cstwalk import called_name, none_compared, preorder, self_attr
from graphlint.static.growtables import grows_after
from graphlint.static.memoguards import miss_follows
from graphlint.static.refresh import disjuncts


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
    elif none_compared(test) is not None:
        attr = _self_slot(test.left, LAZY_OWNERS) or _getattr_self(test.left, "getattr")
    else:
        return False
    if attr is None:
        return False
    return any(
        (type(node) in (cst.AssignTarget, cst.AnnAssign) and _self_slot(node.target, LAZY_OWNERS) == attr)
        or _registered(node) == attr
        for node in preorder(stmt.body)
    )


def own_lazy_field(stmt: cst.If) -> bool:
    """Lazy initialisation of an object's own field (``self.x``), not a class-level cache: once per
    object (:mod:`.perstep` decides when that is every step)."""
    if not is_lazy_init(stmt):
        return False
    test = stmt.test
    owner = test.expression if type(test) is cst.UnaryOperation else test.left if type(test) is cst.Comparison else None
    return type(owner) is cst.Call or (owner is not None and _self_slot(owner) is not None)  # ``getattr(self, ...)``


#: ``self.register_buffer("x", t)``: binds ``self.x`` as an assignment does
REGISTERS = frozenset(("register_buffer", "register_parameter"))


def _registered(node: cst.CSTNode) -> str | None:
    """``self.register_buffer("x", ...)`` (``register_parameter``) or ``setattr(self, "x", ...)`` -> "x"."""
    if type(node) is not cst.Call:
        return None
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in REGISTERS and self_attr(func) is not None:
        name = node.args[0].value if node.args else None
        return name.raw_value if type(name) is cst.SimpleString else None
    return _getattr_self(node, "setattr")


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
    # ``if not self._prepared:``, or one conjunct of ``if self.split and not self._filled:``: the
    # conjunction runs only while the flag is unset, so setting it disarms the whole test
    for part in conjuncts(test):
        flag = _unset(part)
        if flag is not None:
            return flag
    # one attribute every disjunct tests (``self.cached is None or n > self.cached``), else none
    attrs = {_armed(part) for part in disjuncts(test)}
    attr = attrs.pop() if len(attrs) == 1 else None
    if attr is None:
        return None  # before the body's walk: asked of every ``if``, and most test no field
    methods = sorted({node.func.attr.value for node in preorder(stmt.body) if type(node) is cst.Call
                      and type(node.func) is cst.Attribute and self_attr(node.func) is not None})
    return f"{attr}@{'+'.join(methods)}" if methods else None


def _unset(test: cst.BaseExpression) -> str | None:
    """``not self.x`` / ``self.x == False`` / ``self.x is False`` -> "x"."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return self_attr(test.expression)
    if (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.Equal, cst.Is)
            and type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "False"):
        return self_attr(test.left)
    return None


def _armed(test: cst.BaseExpression) -> str | None:
    """``n > self.cached`` / ``self.cached < n`` / ``self.table is None`` -> the attribute."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
        return self_attr(right)
    if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
        return self_attr(test.left)
    if isinstance(op, cst.Is) and isinstance(right, cst.Name) and right.value == "None":
        return self_attr(test.left)
    return None


def disarmed(raw: list, functions: dict, cls: str, writes: dict[str, set[str]],
             aliases: dict[str, str] | None = None) -> set[str]:
    """The "attr@methods" flags (:func:`once_flag`) of ``cls``'s reports and calls whose branch
    calls a method of the class (or of a base in its file) that assigns ``self.attr`` -- or the
    field a property of that name reads (``aliases``, :func:`property_fields`: ``if self.step_index
    is None: self._init_step_index(t)`` where ``step_index`` returns ``self._step_index`` and
    ``_init_step_index`` assigns it)."""
    mine = {q for q, fn in functions.items() if fn.cls == cls}
    flags = {f[5:] for r in raw if r.function in mine for f in r.flags if f.startswith("once:") and "@" in f}
    flags |= {c.once for q in mine for c in functions[q].calls if "@" in c.once}
    out = set()
    for flag in flags:
        attr, _, methods = flag.partition("@")
        field = (aliases or {}).get(attr, attr)
        if any(attr in writes.get(m, ()) or field in writes.get(m, ()) for m in methods.split("+")):
            out.add(flag)
    return out


def property_fields(body: cst.BaseSuite) -> dict[str, str]:
    """``{"step_index": "_step_index"}`` for each ``@property`` of a class body whose getter only
    returns a field of ``self`` (a docstring aside): reading the property reads that field, so a
    method that assigns the field sets what a test of the property sees."""
    out: dict[str, str] = {}
    for stmt in body.body:
        if type(stmt) is not cst.FunctionDef or len(stmt.decorators) != 1 \
                or called_name(stmt.decorators[0].decorator) != "property":
            continue
        lines = [s for s in stmt.body.body if not _docstring(s)] if type(stmt.body) is cst.IndentedBlock else []
        if len(lines) == 1 and type(lines[0]) is cst.SimpleStatementLine and len(lines[0].body) == 1 \
                and type(lines[0].body[0]) is cst.Return:
            field = self_attr(lines[0].body[0].value)
            if field is not None and field != stmt.name.value:
                out[stmt.name.value] = field
    return out


def _docstring(stmt: cst.BaseStatement) -> bool:
    return type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and type(stmt.body[0]) is cst.Expr \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def rest_is_setup(stmt: cst.If, rest: tuple, fn) -> str:
    """The rest of the block after an ``if`` without ``else`` is set-up: it refreshes a table
    (:mod:`.growtables`) or fills a memo (:mod:`.memoguards`): "setup"; it arms the ``self`` flag the
    ``if`` returns on: "lazy", once per object (per step for an object built every step, :mod:`.perstep`);
    else ""."""
    if stmt.orelse is not None:
        return ""
    if armed_after(stmt, rest):
        return "lazy"
    return "setup" if grows_after(stmt, rest) or miss_follows(stmt, rest, fn) else ""


#: in-place writes that set a flag tensor (``self.inited.data.copy_(torch.Tensor([True]))``)
FLAG_WRITES = frozenset(("copy_", "fill_"))


def armed_after(stmt: cst.If, rest: tuple) -> bool:
    """``if self.inited: return`` with the rest of the block setting the flag tensor ``self.inited``
    true in place (``self.inited.data.copy_(torch.Tensor([True]))`` / ``.fill_(1)``: a module's
    buffer, state that lives across steps): lazy initialisation spelled as an early exit -- the
    rest runs until it sets the flag, once. A plain ``self.done = True`` flag is left alone: the
    object may be one the step builds anew (a cache view's ``if self._built: return``), and the
    class-building facts (:mod:`.perstep`) do not reach every such builder."""
    attr = self_attr(stmt.test)
    if attr is None or stmt.orelse is not None or len(stmt.body.body) != 1 \
            or type(stmt.body.body[0]) is not cst.SimpleStatementLine \
            or not all(type(s) is cst.Return and s.value is None for s in stmt.body.body[0].body):
        return False
    for node in (n for s in rest for n in preorder(s)):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in FLAG_WRITES \
                and len(node.args) == 1 and _truthy(node.args[0].value):
            target = node.func.value
            if type(target) is cst.Attribute and target.attr.value == "data":
                target = target.value
            if self_attr(target) == attr:
                return True
    return False


#: tensors built from the data they are given (not ``torch.zeros(1)``, whose argument is a size)
DATA_BUILDERS = frozenset(("tensor", "Tensor", "as_tensor", "BoolTensor", "ByteTensor", "IntTensor", "LongTensor",
                           "FloatTensor"))


def _truthy(value: cst.BaseExpression) -> bool:
    """``True``, a nonzero integer, or a tensor built of them alone (``torch.Tensor([True])``)."""
    leaves = [n for n in preorder(value) if type(n) in (cst.Name, cst.Integer)]
    if type(value) is cst.Call:
        if called_name(value.func) not in DATA_BUILDERS:
            return False
        leaves = [n for a in value.args for n in preorder(a.value) if type(n) in (cst.Name, cst.Integer, cst.Float)]
    return bool(leaves) and all((type(n) is cst.Name and n.value == "True")
                                or (type(n) is cst.Integer and n.evaluated_value != 0) for n in leaves)
