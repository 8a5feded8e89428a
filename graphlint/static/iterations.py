"""Which iterations of a loop a statement runs in, recorded while walking.

Two facts the eager per-token loop's read-back (:mod:`.stepresult`) and the placement of findings
(:mod:`.contexts`) need about loops, one function at a time:

- **A first-iteration guard**: ``for i in range(n): ... if i == 0: <body>`` runs ``<body>`` on the
  loop's first iteration only. When the loop is a per-token loop (decided when linking), that body
  runs once per decode, like the prompt's pass before the loop, not once per token: what it does
  is no per-step cost (``no_speech = probs[:, k].tolist()`` on the first step only). A candidate in
  it carries ``first-iter:<loop id>``. The loop's *counter* is the target of ``for ... in
  range(...)`` (its first value: ``range``'s start, else 0), the index of ``enumerate(xs[,
  start])`` or of ``itertools.count([start])``, and ``step`` of ``step = 0`` before a loop whose
  body advances it with ``step += 1`` at its own level (:func:`stepped_counters`); the guard is
  ``counter == <first value>`` (either side), ``not counter`` for a first value of 0, or such a
  test among the conjuncts of an ``and`` (``if i == 0 and tokenizer.no_speech is not None:``). Only
  the ``if`` body: its ``else`` runs on every other iteration. A call made there is a call site of
  its own (``CallSite.first_iter``): the per-token loop does not make what it runs hot.
- **Loops that can stop early** (``FunctionInfo.loop_exits``): a ``break`` in a loop's own body
  (not in a loop nested in it) or a ``return`` anywhere in it. A loop with no way out visits every
  element whatever the data says -- every row of a batch, every beam -- so a read-back in it is one
  transfer per element where one transfer of the whole would do; a loop that stops at the first
  rejected draft token decides element by element (:mod:`.stepresult`).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts
from graphlint.static.cstwalk import bound_names, called_name, every_child, preorder
from graphlint.static.facts import CallSite
from graphlint.static.loopexits import leaves_at_end

EXITS = (cst.Break, cst.Return)
#: a loop's counter: (loop id, its name, its first value as a key: ("int", n) or ("name", id))
Counter = tuple[int, str, tuple]


def _first_key(node: cst.BaseExpression | None) -> tuple | None:
    if node is None:
        return ("int", 0)
    if type(node) is cst.Integer:
        try:
            return ("int", int(node.value, 0))
        except ValueError:
            return None
    if type(node) is cst.Name:
        return ("name", node.value)
    return None


def loop_counter(stmt: cst.For, loop_id: int) -> Counter | None:
    """The counter of ``for i in range(a, b)``, ``for i, x in enumerate(xs, s)``, ``for i in count(s)``."""
    it, target = stmt.iter, stmt.target
    if type(it) is not cst.Call:
        return None
    name, args = called_name(it.func), [a for a in it.args if a.keyword is None]
    if name == "range" and type(target) is cst.Name and 1 <= len(args) <= 3:
        first = _first_key(args[0].value if len(args) >= 2 else None)
        return (loop_id, target.value, first) if first else None
    if name == "count" and type(target) is cst.Name and len(args) <= 1:
        start = args[0].value if args else next((a.value for a in it.args if a.keyword and a.keyword.value == "start"), None)
        first = _first_key(start)
        return (loop_id, target.value, first) if first else None
    if name == "enumerate" and type(target) is cst.Tuple and len(target.elements) == 2 \
            and type(target.elements[0].value) is cst.Name and args:
        start = args[1].value if len(args) > 1 else next(
            (a.value for a in it.args if a.keyword and a.keyword.value == "start"), None)
        first = _first_key(start)
        return (loop_id, target.elements[0].value.value, first) if first else None
    return None


def stepped_counters(stmt: cst.For | cst.While, loop_id: int, assigns: dict,
                     counter: Counter | None = None) -> list[Counter]:
    """Counters advanced by hand: ``step = 0`` before the loop (``assigns``: the walker's bindings on
    this path, :class:`.valuefacts.ValueFacts`) and, as a statement of the loop's own body, so on
    every iteration that runs to its end, ``step += k`` / ``step = step + k`` (``k`` a positive
    literal) or ``prev = cur``, the loop's own counter (``counter``: ``prev_pos = 0; for cur_pos in
    range(start, total): ...; prev_pos = cur_pos``). Such a name never takes its first value again
    (``prev`` takes each value of ``range`` once: when the range starts at ``prev``'s first value,
    the second iteration sees it too, still once per loop, not per token). Not when anything else
    in the loop binds the name (``step = 0`` resets it) nor when a ``continue`` before the advance
    can skip it; one advanced under a branch is no counter either (``n += 1`` per accepted token
    says nothing about the first iteration). Flags the loop only clears come with them
    (:func:`cleared_flags`)."""
    out = cleared_flags(stmt, loop_id, assigns)
    body = stmt.body.body
    for at, line in enumerate(body):
        for small in line.body if type(line) is cst.SimpleStatementLine else ():
            name = _advanced(small, counter)
            if name is None:
                continue
            bound = assigns.get(name)
            if bound and len(bound) == 1 and not bound[0][1] and bound[0][0][0] == "c" \
                    and type(bound[0][0][1]) is int \
                    and _binders(stmt, name) == 1 and not any(_continues(b) for b in body[:at]):
                out.append((loop_id, name, ("int", bound[0][0][1])))
    return out


def cleared_flags(stmt: cst.For | cst.While, loop_id: int, assigns: dict) -> list[Counter]:
    """Flags the loop can only clear: ``fresh = True`` before it (``assigns``, as for
    :func:`stepped_counters`) and every binding of ``fresh`` in the loop a falsy literal (``fresh =
    False``). A branch on such a flag that clears it itself runs once per loop (:func:`flag_loop`)."""
    truthy = [name for name, bound in assigns.items() if bound and len(bound) == 1 and not bound[0][1]
              and bound[0][0][0] == "c" and bound[0][0][1]]
    if not truthy:
        return []
    cleared, other = _loop_bindings(stmt)
    # flags every iteration clears (at the loop's own level): after the first, false for good
    each = set(_cleared_at_level(stmt.body.body))
    return [(loop_id, name, ("flag", name in each)) for name in truthy if name in cleared and name not in other]


def _cleared_at_level(body) -> list[str]:
    """Names bound to a falsy literal (``fresh = False``) by a statement of ``body``'s own level with
    no ``continue`` before it, in order: every pass through ``body`` clears them."""
    out = []
    for at, line in enumerate(body):
        for small in line.body if type(line) is cst.SimpleStatementLine else ():
            if type(small) is cst.Assign and _falsy(small.value) and not any(_continues(b) for b in body[:at]):
                out.extend(t.target.value for t in small.targets if type(t.target) is cst.Name)
    return out


def _loop_bindings(stmt: cst.For | cst.While) -> tuple[set[str], set[str]]:
    """(names the loop binds only as ``name = <falsy literal>``, names it binds otherwise too)."""
    cleared: set[str] = set()
    other: set[str] = set(bound_names(stmt.target)) if isinstance(stmt, cst.For) else set()
    for node in preorder(stmt.body):
        if type(node) is cst.Assign:
            for t in node.targets:
                names = bound_names(t.target)
                (cleared if type(t.target) is cst.Name and _falsy(node.value) else other).update(names)
        elif isinstance(node, _BINDERS) and type(node) is not cst.AssignTarget:
            other.update(bound_names(node.name if isinstance(node, cst.AsName) else node.target))
    return cleared, other


def _falsy(node: cst.BaseExpression) -> bool:
    return (type(node) is cst.Name and node.value in ("False", "None")) or (type(node) is cst.Integer and node.value == "0")


def flag_loop(stmt: cst.If, counters: list[Counter]) -> int | None:
    """The loop whose flag (:func:`cleared_flags`) ``if fresh [and ...]:`` tests and its body clears
    (``fresh = False`` as a statement of the body's own level, no ``continue`` before it): the body
    runs at most once per loop, like ``if i == 0:``; so does any branch on a flag the loop clears
    on every iteration (``fresh = False`` at the loop's own level, :func:`cleared_flags`)."""
    flags = {c[1]: c for c in counters if c[2][0] == "flag"}
    if not flags:
        return None
    tested = [t.value for t in conjuncts(stmt.test) if type(t) is cst.Name and t.value in flags]
    every = next((flags[name][0] for name in tested if flags[name][2][1]), None)
    if every is not None:
        return every
    body = stmt.body.body if type(stmt.body) is cst.IndentedBlock else [stmt.body]
    return next((flags[name][0] for name in _cleared_at_level(body) if name in tested), None)


def _advanced(small: cst.BaseSmallStatement, counter: Counter | None) -> str | None:
    """The name ``small`` moves forward: ``n += k``, ``n = n + k`` (``k`` > 0), ``prev = <counter>``."""
    if type(small) is cst.AugAssign:
        if type(small.operator) is cst.AddAssign and type(small.target) is cst.Name and _positive(small.value):
            return small.target.value
        return None
    if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
        return None
    name, value = small.targets[0].target.value, small.value
    if type(value) is cst.BinaryOperation and type(value.operator) is cst.Add and type(value.left) is cst.Name \
            and value.left.value == name and _positive(value.right):
        return name
    if counter is not None and type(value) is cst.Name and value.value == counter[1] and name != counter[1]:
        return name
    return None


def _positive(node: cst.BaseExpression) -> bool:
    try:
        return type(node) is cst.Integer and int(node.value, 0) > 0
    except ValueError:
        return False


def _binders(stmt: cst.For | cst.While, name: str) -> int:
    """How many statements of the loop (its target included) bind ``name``, but for those in a block
    that leaves the loop at its end (``if done: step = 0; break``): no later iteration sees them."""
    found = name in bound_names(stmt.target) if isinstance(stmt, cst.For) else 0
    for node in _staying(stmt.body):
        if isinstance(node, _BINDERS):
            target = node.name if isinstance(node, cst.AsName) else node.target
            found += name in bound_names(target)
    return found


def _staying(node: cst.CSTNode, nested: bool = False):
    """The nodes under ``node`` but those of an ``if``/``else`` block of this loop (not of a loop
    nested in it) that leaves it at its end (:func:`.loopexits.leaves_at_end`)."""
    yield node
    for child in every_child(node):  # not libcst's ``children``: the same nodes, and the caller counts
        if not nested and type(child) is cst.IndentedBlock and type(node) in (cst.If, cst.Else) \
                and leaves_at_end(child):
            continue
        yield from _staying(child, nested or type(child) in (cst.For, cst.While, cst.FunctionDef, cst.ClassDef))


def advanced_names(stmt: cst.For | cst.While) -> set[str]:
    """Names the loop's body advances: ``n += k`` / ``n -= k`` / ``n = n + k`` anywhere in it (under a
    branch too: ``if upto is not None: upto += 1``). Such a name is
    carried round the loop and differs from one iteration to the next: when the loop is a per-token
    loop, what it passes a callee is a per-step int (:func:`.valuekinds.step_kind`). So is
    ``prev = cur`` with ``cur`` the loop's own ``range`` counter (``prev_pos = cur_pos``: the
    position the next step starts at, handed to the model as ``start_pos``)."""
    out: set[str] = set()
    counter = stmt.target.value if type(stmt) is cst.For and type(stmt.target) is cst.Name \
        and type(stmt.iter) is cst.Call and type(stmt.iter.func) is cst.Name and stmt.iter.func.value == "range" else None
    for node in preorder(stmt.body):
        kind = type(node)
        if kind is cst.AugAssign:
            if type(node.target) is cst.Name and type(node.operator) in (cst.AddAssign, cst.SubtractAssign):
                out.add(node.target.value)
        elif kind is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            value, name = node.value, node.targets[0].target.value
            if type(value) is cst.BinaryOperation and type(value.operator) in (cst.Add, cst.Subtract) \
                    and type(value.left) is cst.Name and value.left.value == name:
                out.add(name)
            elif counter is not None and type(value) is cst.Name and value.value == counter:
                out.add(name)
    return out


def first_iteration_loop(test: cst.BaseExpression, counters: list[Counter]) -> int | None:
    """The loop whose first iteration alone ``if <test>:`` runs its body in, if any."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return first_iteration_loop(test.left, counters) or first_iteration_loop(test.right, counters)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Name:
        return next((c[0] for c in reversed(counters) if c[1] == test.expression.value and c[2] == ("int", 0)), None)
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) is cst.Equal):
        return None
    sides = (test.left, test.comparisons[0].comparator)
    for name, other in (sides, sides[::-1]):
        if type(name) is cst.Name:
            key = _first_key(other)
            for loop_id, counter, first in reversed(counters):
                if counter == name.value:  # the innermost loop binding that name
                    return loop_id if key is not None and key == first else None
    return None


#: conditions (:mod:`.valuefacts`) a counter's test takes from its loop's second iteration on
NEVER, ALWAYS = ("t", ("c", False)), ("t", ("c", True))


def past_first(test: cst.BaseExpression, past: dict[str, tuple]) -> tuple | None:
    """What ``test`` is from the second iteration on of the loop whose counters ``past`` maps to
    their first value (a :data:`Counter`'s key): ``step == 0`` (``!=``, either side) never holds
    again, ``step`` itself is true for a first value of 0, a flag every iteration clears
    (:func:`cleared_flags`) false. A call passing ``images if step == 0 else None`` hands the
    callee ``None`` on every later step, so what only ``images`` selects runs once per decode, as
    ``if step == 0:`` in the loop does (:func:`first_iteration_loop`). None: not such a test."""
    if type(test) is cst.Name:
        first = past.get(test.value)
        return ALWAYS if first == ("int", 0) else NEVER if first == ("flag", True) else None
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.Equal, cst.NotEqual)):
        return None
    sides = (test.left, test.comparisons[0].comparator)
    for name, other in (sides, sides[::-1]):
        if type(name) is cst.Name and name.value in past and past[name.value][0] != "flag" \
                and _first_key(other) == past[name.value]:
            return NEVER if type(test.comparisons[0].operator) is cst.Equal else ALWAYS
    return None


def first_operands(test: cst.BooleanOperation, counters: list[Counter]) -> list[tuple[cst.BaseExpression, int]]:
    """(``b``, loop) for each ``a and b`` in ``test`` whose ``a`` holds on ``loop``'s first iteration
    alone (:func:`first_iteration_loop`): ``b`` is evaluated only there (``if i == 0 and done.any():``).
    Not ``b or c`` nor ``not``: their operands run whenever the left one does not decide."""
    out, stack = [], [test]
    while stack:
        node = stack.pop()
        if type(node) is not cst.BooleanOperation:
            continue
        loop = first_iteration_loop(node.left, counters) if type(node.operator) is cst.And else None
        if loop is not None:
            out.append((node.right, loop))
        else:
            stack.append(node.right)
        stack.append(node.left)
    return out


def note_exit(func, loop_ids: list[int], stmt: cst.BaseSmallStatement) -> None:
    """``break`` leaves the innermost loop; ``return`` every enclosing one."""
    if not loop_ids:
        return
    if type(stmt) is cst.Break:
        exits = loop_ids[-1:]
    elif type(stmt) is cst.Return:
        exits = loop_ids
    else:
        return
    for loop_id in exits:
        if loop_id not in func.loop_exits:
            func.loop_exits.append(loop_id)


# -- values carried round a loop ---------------------------------------------------------------
_BINDERS = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.AsName)
_OWN_SCOPE = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)


def carried_literals(stmt: cst.For | cst.While, literal) -> dict[str, tuple]:
    """Names the loop's body leaves bound to a literal for the next iteration: ``image = None`` as a
    statement of the body's own level after the call that used the image. From the second
    iteration on such a name holds that literal, so a branch that tests it (here, or in a callee it
    is passed to: :mod:`.argvalues`) may run on the first iteration only -- the same category as
    ``if i == 0:``. Only when every binding of the name in the loop is such a statement (one under a
    branch, in a nested loop or a ``try`` may or may not run) and no ``continue`` of this loop can
    skip it; the last one wins. ``literal``: :func:`.valueatoms.literal`."""
    body = stmt.body.body
    last: dict[str, tuple] = {}
    own: set[int] = set()
    for line in body:
        for small in line.body if type(line) is cst.SimpleStatementLine else ():
            if type(small) is cst.Assign and all(type(t.target) is cst.Name for t in small.targets):
                value = literal(small.value)
                if value is not None:
                    own.update(id(t) for t in small.targets)
                    last.update((t.target.value, value) for t in small.targets)
    if not last or _continues(stmt.body):
        return {}
    skip = set(bound_names(stmt.target)) if isinstance(stmt, cst.For) else set()
    for node in preorder(stmt.body):
        if isinstance(node, _BINDERS) and id(node) not in own:
            target = node.name if isinstance(node, cst.AsName) else node.target
            skip.update(bound_names(target))
    return {name: value for name, value in last.items() if name not in skip}


def _continues(node: cst.CSTNode) -> bool:
    """A ``continue`` of this loop (not of a loop nested in it)."""
    if type(node) is cst.Continue:
        return True
    return any(not isinstance(child, _OWN_SCOPE) and _continues(child) for child in every_child(node))


def later_args(site: CallSite, loops: frozenset[int] | None) -> tuple | None:
    """The site's argument spellings, each as the loops in ``loops`` pass it from their second
    iteration on (``CallSite.later``)."""
    if not loops or not site.later or site.args is None:
        return site.args
    swap = {spelling: later for spelling, loop_id, later in site.later if loop_id in loops}
    return tuple(swap.get(s, s) for s in site.args) if swap else site.args
