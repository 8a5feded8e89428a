"""A constant staged again every step: the host step's pinned upload of data that never changes.

Pinned ``non_blocking`` staging is the right way to feed a replay (:mod:`.staging`) and stays
silent in the host step -- for the step's data. ``temps = [temperature] * len(reqs);
torch.tensor(temps, pin_memory=True).cuda(non_blocking=True)`` in a sampler-preparing helper the
step loop calls with the request's temperature and batch builds a pinned tensor and a device
tensor every token from values that are the same on every token: a constant that belongs in a
buffer made once per request (the same shape as an engine's constant eos-id list).

Two halves, both facts of the summaries:

- **The staging (walker, per function).** A candidate flagged ``pinned`` whose rule asks
  (``restaged: true``) and whose data (the call's first argument) is built, in straight-line code
  before it, only from literals, the function's own parameters, ``self`` fields only ``__init__``
  binds, and builtins of those (``len``, ``[p] * n``), gets the flag ``restaged:<params>``: the
  parameters it depends on. Not inside a loop of its own function (each iteration may stage
  something else), and a local bound from anything else (a call, a loop target) ends the search.
- **The call sites (walker, per caller).** ``CallSite.same``: the argument slots that are the same
  on every iteration of the loops around the call -- built from names no statement of those loops
  binds or mutates (``x = ``, ``x += ``, ``for x``, ``x.append()``, ``x[i] =``, ``x.a =``), literals,
  steady ``self`` fields and builtins of those.

**The rule (linking, :func:`same_params`).** A host-step function's parameter is the same on every
step when every call of it from the host step passes it so: a call in the step loop's body through
a slot in ``CallSite.same``, a call from a function run once per step through a slot
:mod:`.steadyargs` calls steady (the same on every call of its caller). A ``restaged`` candidate
whose parameters are all the same on every step is reported in the host step (a warning): a
constant rebuilt every token. A call from outside the host step (the prompt's pass) runs once.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import STATEMENT_PARENTS, bound_names, name_children, preorder
from graphlint.static.steadyargs import NOT_STEADY, SOURCE, Deps

FuncId = tuple[str, str]
#: methods that change a container in place: its length or contents differ afterwards
MUTATORS = frozenset("append extend insert pop remove clear update add discard setdefault popitem sort reverse".split())
LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
FLAG = "restaged:"


class ParamDeps(Deps):
    """:class:`.steadyargs.Deps` where the function's parameters are sources too: a value computed
    from them is the same wherever the callers pass the same."""

    def __init__(self, oracle, rebound: set[str], params: set[str]) -> None:
        super().__init__(oracle, rebound)
        self.params = params

    def of(self, node: cst.BaseExpression):
        if type(node) is cst.Name and node.value in self.params:
            return {SOURCE}
        return super().of(node)


def declared(stmt: cst.FunctionDef) -> set[str]:
    params = stmt.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in preorder(node) if type(n) is cst.Name}


def mark_restaged_calls(pending: list, raws: list, start: int, stmt: cst.FunctionDef, oracle, steady) -> None:
    """At a function's end (``steady``: the walk's :class:`.SteadyArgs`): both halves' facts."""
    if not pending and len(raws) == start:
        return
    rebound = steady.rebound() if oracle.cls is not None else set()
    mark_loop_same(pending, stmt, oracle, rebound)
    mark_restaged(raws, start, stmt, oracle, rebound)


# -- the staging --------------------------------------------------------------------------------
def mark_restaged(raws: list, start: int, stmt: cst.FunctionDef, oracle, rebound: set[str]) -> None:
    """Flag ``raws[start:]``'s pinned staging of data built from parameters and constants only."""
    mine = [r for r in raws[start:] if "pinned" in r.flags and r.rule.params.get("restaged")
            and type(r.anchor) is cst.Call and r.anchor.args and r.anchor.args[0].keyword is None
            and not r.anchor.args[0].star]
    if not mine:
        return
    params = declared(stmt)
    deps = ParamDeps(oracle, rebound, params)
    order: dict[int, int] = {}
    bindings: dict[str, list[tuple[int, cst.BaseExpression | None]]] = {}
    looped: set[int] = set()
    _bindings(stmt.body, order, bindings, looped, False)
    for raw in mine:
        at = order.get(id(raw.anchor))
        if at is None or id(raw.anchor) in looped:
            continue
        used: set[str] = set()
        if _built_from_params(raw.anchor.args[0].value, at, deps, bindings, params, used, set()):
            raw.flags = raw.flags | {FLAG + ",".join(sorted(used))}


def _built_from_params(expr, at: int, deps: ParamDeps, bindings: dict, params: set[str], used: set[str],
                       seen: set[str]) -> bool:
    found = deps.of(expr)
    if found is NOT_STEADY:
        return False
    used.update(_names(expr) & params)
    for name in found - {SOURCE}:
        before = [(i, value) for i, value in bindings.get(name, ()) if i < at]
        if not before or name in seen:
            return False  # a global, a closure's name, or a binding that reads itself
        for i, value in before:  # every earlier binding may reach it (a branch's too): each must be one
            if value is None or not _built_from_params(value, i, deps, bindings, params, used, seen | {name}):
                return False
    return True


def _bindings(node: cst.CSTNode, order: dict, bindings: dict, looped: set, in_loop: bool) -> None:
    """Preorder ordinals of the nodes, each local's bindings (the ordinal after its statement, when
    the name holds the value; the value, or None: not a plain assignment outside a loop), and the
    calls inside a loop of the function."""
    stack: list = [(node, in_loop, False)]
    count = 0
    while stack:
        current, inside, done = stack.pop()
        count += 1
        if done:  # the whole statement evaluated: its targets hold the value from here on
            _bind(current, inside, count, bindings)
            continue
        kind = type(current)
        if kind in SCOPES:
            continue
        order[id(current)] = count
        if inside and kind is cst.Call:
            looped.add(id(current))
        if kind in BINDERS or kind is cst.Del or (kind is cst.Call and type(current.func) is cst.Attribute
                                                   and current.func.attr.value in MUTATORS):
            stack.append((current, inside, True))
        loop = inside or kind in LOOPS
        stack.extend((child, loop, False) for child in reversed(name_children(current)))


#: the nodes that bind a local
BINDERS = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.WithItem)


def _bind(current: cst.CSTNode, inside: bool, at: int, bindings: dict) -> None:
    kind = type(current)
    changed: set[str] = set()  # objects changed in place: ``x.append(v)``, ``x[i] = v``, ``x.a = v``, ``del x[i]``
    if kind is cst.Call:
        changed = _stored_base(current.func)
    elif kind is cst.Del:
        changed = _names(current.target)
    elif kind in (cst.Assign, cst.AugAssign, cst.AnnAssign):
        for t in [t.target for t in current.targets] if kind is cst.Assign else [current.target]:
            changed |= _stored_base(t) if type(t) in (cst.Subscript, cst.Attribute) else set()
    for name in changed:
        bindings.setdefault(name, []).append((at, None))
    if kind is cst.Assign:
        plain = len(current.targets) == 1 and type(current.targets[0].target) is cst.Name
        for t in current.targets:
            for name in bound_names(t.target):
                bindings.setdefault(name, []).append((at, current.value if plain and not inside else None))
        return
    if kind in (cst.Call, cst.Del):
        return
    target = (current.asname.name if current.asname is not None else None) if kind is cst.WithItem else current.target
    value = current.value if kind is cst.AnnAssign and not inside else None
    for name in bound_names(target) if target is not None else ():
        bindings.setdefault(name, []).append((at, value))


# -- the call sites -----------------------------------------------------------------------------
def mark_loop_same(pending: list, stmt: cst.FunctionDef, oracle, rebound: set[str]) -> None:
    """``CallSite.same`` for the sites of ``pending`` ((site, call) pairs) made in loops."""
    if not any(site.loops for site, _ in pending):
        return
    changed: dict[int, set[str]] = {}
    _loop_changes(stmt.body, changed)
    deps = ParamDeps(oracle, rebound, declared(stmt))
    by_site: dict[int, list] = {}
    for site, call in pending:
        by_site.setdefault(id(site), [site]).append(call)
    for site, *calls in by_site.values():
        if not site.loops:
            continue
        slots: set | None = None
        for call in calls:
            bound = changed.get(id(call))
            if bound is None or any(a.star for a in call.args):
                slots = set()
                break
            own = set()
            for i, arg in enumerate(call.args):
                found = deps.of(arg.value)
                if found is not NOT_STEADY and not (_names(arg.value) & bound):
                    own.add(i if arg.keyword is None else arg.keyword.value)
            slots = own if slots is None else slots & own
        if slots:
            site.same = tuple(sorted(slots, key=str))


def _loop_changes(node: cst.CSTNode, changed: dict) -> None:
    """Per call inside loops, the names the loops around it bind or mutate (iterative: an
    expression may nest deeper than Python's recursion allows). Only the loops' own subtrees are
    walked node by node: a call outside every loop gets nothing (about half of what this walk cost
    on torch's files was the code around them)."""
    stack = [(loop, frozenset()) for loop in _outer_loops(node)]
    while stack:
        current, around = stack.pop()
        kind = type(current)
        if kind in SCOPES:
            continue
        if kind in LOOPS:
            around = around | _changed_in(current)
        elif kind is cst.Call and around:
            changed[id(current)] = around
        stack.extend((child, around) for child in name_children(current))


#: what holds statements, and no loop (or other scope) itself: a loop is a statement, and no
#: expression holds one (a lambda's body is another scope's)
_BLOCKS = STATEMENT_PARENTS - {cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.Assign, *LOOPS, *SCOPES}


def _outer_loops(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The loops under ``node`` (not itself) inside no other loop and no nested scope."""
    out, blocks = [], list(name_children(node))
    while blocks:
        current = blocks.pop()
        kind = type(current)
        if kind in LOOPS:
            out.append(current)
        elif kind in _BLOCKS:
            blocks.extend(name_children(current))
    return out


def _changed_in(loop: cst.CSTNode) -> frozenset:
    out: set[str] = set()
    for node in preorder(loop):
        kind = type(node)
        if kind in (cst.Assign, cst.AugAssign, cst.AnnAssign):
            targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
            for t in targets:
                out.update(bound_names(t))
                out.update(_stored_base(t))
        elif kind in (cst.For, cst.CompFor):
            out.update(bound_names(node.target))
        elif kind is cst.NamedExpr:
            out.update(bound_names(node.target))
        elif kind is cst.WithItem and node.asname is not None:
            out.update(bound_names(node.asname.name))
        elif kind is cst.Del:
            out.update(_names(node.target))
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in MUTATORS:
            out.update(_stored_base(node.func))
        elif kind in (cst.Global, cst.Nonlocal):
            out.update(n.name.value for n in node.names)
    return frozenset(out)


def _stored_base(target: cst.BaseExpression) -> set[str]:
    """``x[i] = v``, ``x.a = v``, ``x.append(v)``: the local whose object changes."""
    while type(target) in (cst.Subscript, cst.Attribute):
        target = target.value
    return {target.value} if type(target) is cst.Name and target.value != "self" else set()


# -- linking -------------------------------------------------------------------------------------
def same_params(calls: dict, host: dict, host_loops: dict, flows) -> dict[FuncId, set[str]]:
    """Per host-step function, the parameters every call from the host step passes the same value
    on every step (see the module docstring). ``flows(fid)``: the callee's :class:`.ScopeFlow`."""
    found: dict[FuncId, set[str] | None] = {}
    for caller, edges in calls.items():
        body = host_loops.get(caller)
        if caller not in host and body is None:
            continue
        for callee, site in edges:
            if callee not in host or site.reference:
                continue
            if body is not None:
                if not site.loops & body:
                    continue  # the step loop's function, outside the loop: once per decode
                slots = site.same
            else:
                kinds = site.kinds
                slots = kinds[2] if kinds is not None and len(kinds) > 2 else ()
            flow = flows(callee)
            if flow is None:
                found[callee] = None
                continue
            params = list(flow.params)
            if flow.cls and flow.fkind in ("m", "c") and params:
                params = params[1:]
            names = {params[s] if isinstance(s, int) else s for s in slots if not isinstance(s, int) or s < len(params)}
            known = found.get(callee, names)
            found[callee] = None if known is None else known & names
    return {fid: names for fid, names in found.items() if names is not None}


def same_slots(a, b) -> tuple:
    """One edge for two call sites of a callee: the slots both pass the same on every iteration of
    their loops (a site outside loops -- the prompt's pass before the step loop -- adds no constraint)."""
    if not a.loops or not b.loops:
        return a.same if a.loops else b.same
    return tuple(slot for slot in a.same if slot in b.same)


def restaged_params(flags) -> set[str] | None:
    """The parameters a ``restaged`` candidate's data depends on (None: not one)."""
    for flag in flags:
        if flag.startswith(FLAG):
            return set(filter(None, flag[len(FLAG):].split(",")))
    return None
