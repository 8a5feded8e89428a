"""What a loop's statements read and bind, as the loop tracker (:mod:`.loops`) names them: ``self.x``
is one name of the loop's state, and an element the loop's own target picks reads nothing the loop
carries."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import bound_names, children, preorder


def self_attr(node: cst.CSTNode) -> str | None:
    """``self.ids`` -> "self.ids": an attribute of ``self`` is one name of the loop's state."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return "self." + node.attr.value
    return None


def names_read(node: cst.CSTNode, elements: set[str] | frozenset = frozenset()) -> set[str]:
    """The names an expression reads; ``self.x`` as one name, ``state.items`` as ``state``.
    With ``elements`` (a loop's targets), an element the loop target picks (``layers[i]``,
    ``layers[i].mlp.up``) reads nothing the loop carries: see :func:`own_element`."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is cst.Name:
            out.add(n.value)
        elif kind is cst.Attribute and type(n.value) is cst.Name and n.value.value == "self":
            out.add("self." + n.attr.value)
        elif elements and kind is cst.Subscript and own_element(n, elements):
            continue
        else:
            stack.extend(children(n))  # an attribute's child is its object, not the attribute's name
    return out


def own_element(node: cst.Subscript, elements: set[str] | frozenset) -> bool:
    """``xs[i]`` where ``i`` is the loop's own target: this iteration's element. A store into it
    (``layers[i].q = patch(layers[i].q)``) and a read of it in the next iteration are of two
    different elements, so a call that reads only its own element carries nothing from one
    iteration to the next: a map over a collection (patching, loading or quantizing each layer),
    not a decode loop. A read of another element (``tokens[cur - 1]``, ``tokens[:, prev:cur]``)
    still reads what an earlier iteration stored."""
    if len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    return isinstance(index, cst.Index) and type(index.value) is cst.Name and index.value.value in elements


def bound_targets(target: cst.BaseExpression) -> list[str]:
    """The names an assignment target binds, ``self.x`` among them (a rebinding of that state)."""
    attr = self_attr(target)
    if attr is not None:
        return [attr]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in bound_targets(el.value)]
    if isinstance(target, cst.StarredElement):
        return bound_targets(target.value)
    return bound_names(target)


def base_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        attr = self_attr(node)
        if attr is not None:
            return attr
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def yields(body: cst.CSTNode) -> bool:
    """Whether a loop body yields: a generator's loop hands each iteration's result to a consumer
    that pulls them (a stream of images or tokens), so what it runs per step is the consumer's
    loop's business, not the generator's own -- no serving loop (a per-token generator is judged
    by its feedback)."""
    return any(type(n) is cst.Yield for n in preorder(body))


def is_range(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "range"


#: iterables that count steps, not items: ``range(n)``, ``itertools.count()`` (a loop left by ``break``)
STEP_ITERABLES = frozenset(("range", "count", "trange"))


def eligible(stmt: cst.For | cst.While, steps: set[str] | frozenset = frozenset()) -> bool:
    """A ``while`` loop, or a ``for`` over steps: ``range(...)``, ``itertools.count()``, or such an
    iterable wrapped by a call that passes its items on (``tqdm(range(n))``, ``enumerate(range(n))``),
    sliced (``list(range(n))[::-1]``: a diffusion sampler's steps counted down) or first bound to a
    local of ``steps`` (``indices = list(range(n))[::-1]; for i in tqdm(indices):``)."""
    if isinstance(stmt, cst.While):
        return True
    return counts_steps(stmt.iter, steps)


def counts_steps(it: cst.BaseExpression, steps: set[str] | frozenset = frozenset(), depth: int = 0) -> bool:
    """Whether ``it`` iterates steps (see :func:`eligible`); ``steps``: the locals bound to such an iterable."""
    if depth > 3:
        return False
    if type(it) is cst.Subscript:  # ``list(range(n))[::-1]``: the same steps, reordered or cut
        return counts_steps(it.value, steps, depth + 1)
    if type(it) is cst.Name:
        return it.value in steps
    if not isinstance(it, cst.Call):
        return False
    func = it.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    if name in STEP_ITERABLES:
        return True
    first = next((a.value for a in it.args if a.keyword is None and not a.star), None)
    return first is not None and counts_steps(first, steps, depth + 1)


def bind_steps(step_locals: dict[int, set[str]], key: int, targets: list[cst.BaseExpression],
               value: cst.BaseExpression | None, augmented: bool) -> None:
    """Keep ``step_locals[key]`` (a function's locals bound to steps, :func:`counts_steps`) up to date
    with one assignment: a name bound to steps joins it, any other binding of it leaves it."""
    names = [t.value for t in targets if type(t) is cst.Name]
    if not names:
        return
    steps = step_locals.setdefault(key, set())
    if value is not None and not augmented and counts_steps(value, steps):
        steps.update(names)
    else:
        steps.difference_update(names)


#: a container's own methods: ``out.append(tok)`` read later feeds back, but says nothing of a model step
MUTATING_METHODS = frozenset(("append", "extend", "insert", "add", "update"))


def feeds_back_a_call(loops: list, loop_id: int) -> bool:
    """The loop (a :class:`.facts.LoopInfo` of ``loops``) feeds the output of a call back into it
    that is not a container's own method."""
    return any(info.id == loop_id and any(not container_call(e) for e in info.exprs) for info in loops)


def container_call(expr: tuple) -> bool:
    """``out.append(tok)``: a call of a container's own mutating method (flow IR)."""
    return expr[0] == "a" and expr[2] in MUTATING_METHODS


#: calls that run the callable they are handed on another thread and hand back its result to the
#: caller that awaits it: the caller's own step, run elsewhere (:func:`pool_task`)
POOL_TASKS = {"to_thread": 0, "run_in_executor": 1, "submit": 0}


def pool_task(call: cst.Call, sites) -> tuple[tuple, cst.BaseExpression, list[cst.BaseExpression]] | None:
    """``await asyncio.to_thread(self.step, ids)``, ``await loop.run_in_executor(None, self.step,
    ids)``, ``pool.submit(step, ids).result()``: the handed callable (the callee of its reference
    site among ``sites``, the function's call sites so far -- the same IR object, which the linker
    knows -- and as written: ``self.x`` or a name) and the arguments it is called with: an async
    loop's model step, run in a thread. None for any other call."""
    func = call.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    at = POOL_TASKS.get(name)
    if at is None or len(call.args) <= at or any(a.keyword is not None or a.star for a in call.args[: at + 1]):
        return None
    handed = call.args[at].value
    attr = self_attr(handed)
    ir = ("n", handed.value) if type(handed) is cst.Name else ("a", ("n", "self"), attr[5:]) if attr else None
    expr = next((s.expr for s in reversed(sites) if s.reference and s.expr == ir), None) if ir else None
    return (expr, handed, [a.value for a in call.args[at + 1:]]) if expr is not None else None



def condition_calls_nothing(test: cst.BaseExpression) -> bool:
    """``while True:`` / ``while self.running:``: the loop runs until a flag set elsewhere (or a ``break``)
    stops it. A test that calls (``while self.step(): pass``, an interpreter's loop) is itself the
    step whose result ends the loop: no server's loop."""
    return not any(isinstance(node, cst.Call) for node in preorder(test))
