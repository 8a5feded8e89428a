"""Per-function facts for the eager result read-back (:mod:`.stepresult`), and the host step's
step data (:func:`mark_step_data`), recorded while walking.

An eager engine must read each step's result back once to stop, print or append it; which read is
that one is decided when linking, from how values flow inside the functions the per-token loop
runs. What that needs of one function, flow-insensitive like the rest of the analyzer:

- ``FunctionInfo.derives``: ``(order, target, sources)`` -- ``target`` is bound from an expression
  reading ``sources`` (``tok = sample(logits)``; unpacking binds each name; ``for t in toks``;
  augmented assignment; ``lst.append(v)``, ``lst.extend(v)`` and ``lst[i] = v`` make ``lst`` hold
  ``v``). A name bound from a call derives from its arguments: a helper's result is computed from
  what it was given. ``self.x`` is one name, like a local (``self.last = sample(logits)``);
  ``self`` itself is never a source or a target (it would join every value).
- ``FunctionInfo.arg_calls``: :class:`ArgCall` per call that passes something and may run project
  code, in each place it is made (``CallSite`` keeps only the first place of a callee): its
  statement ordinal and path, its loops, its callee IR, the names each argument reads, and whether
  its result is dropped.
- ``FunctionInfo.implicit_reads``: ``(order, path, loops, names)`` of a slice bounded by a device
  tensor (``x[:, :n + 1]``): a read-back no rule reports, which a later read of the result follows.
- ``Candidate.reads`` / ``Candidate.branch``: the names a read-back candidate reads (a rule marked
  ``result_readback`` or ``eager_result``), and its statement path (:func:`.stmtpaths.encode_path`);
  ``discarded`` in its flags when its value is dropped (``x.item()`` as a statement, or bound to a
  name the function never mentions again): a read-back nothing uses is never the one the host
  needs (``returned`` when the function returns it: unused when its caller drops the result);
  ``bound`` when an assignment binds the value read itself (``top = probs.max().item()``);
  ``not-the-result`` when it reads one all the same but is never the read the host needs: a stop
  check over a reduction or membership (:func:`.stopchecks.stop_check`), or a rule marked ``eager_result:
  false`` (``nonzero``: the host learns a size, not the step's tokens).

Kept small, because every summary is cached and most functions are no part of it: derives and
calls are noted as nodes and turned into facts only when the function ends and only for one that
loops (its loops' calls), reads something back (the calls passing what derives from its
parameters) or passes a parameter on as it is (those calls: a wrapper between a loop and a
reader); nothing at module level.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphlint.static.cstwalk import names_in, preorder
from graphlint.static.facts import Compact
from graphlint.static.loopnames import pool_task
from graphlint.static.readshapes import binds_read
from graphlint.static.stepdata import mark_step_data
from graphlint.static.stmtpaths import encode_path
from graphlint.static.stopchecks import mark_stop_reads

#: container methods that store their arguments into the receiver (``ids.append(tok)``)
STORING_METHODS = frozenset(("append", "extend", "insert", "add", "update", "appendleft"))


@dataclass
class ArgCall(Compact):
    order: int  # statement ordinal of this call
    path: tuple  # its statement path (:func:`.stmtpaths.encode_path`)
    loops: frozenset[int]  # the loops it sits in
    expr: tuple  # the callee, in flow IR (matched against ``CallSite.expr`` when linking)
    args: tuple[tuple[str, ...], ...]  # names each positional argument reads ("*" for a starred one)
    kwargs: tuple[tuple[str, tuple[str, ...]], ...]  # (keyword, names it reads)
    dropped: bool = False  # a statement of its own: what it returns is thrown away


def _targets(target: cst.BaseExpression) -> list[str]:
    """Plain names an assignment target binds; a store into ``lst[i]`` binds ``lst``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _targets(el.value)]
    if isinstance(target, cst.StarredElement):
        return _targets(target.value)
    if isinstance(target, cst.Subscript):
        target = target.value
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):  # ``self.x``, ``session.done``
        return [target.value.value + "." + target.attr.value]
    return [target.value] if isinstance(target, cst.Name) and target.value != "self" else []


def note_assignment(func, order: int, targets: list[cst.BaseExpression], value: cst.BaseExpression | None,
                    augmented: bool = False, advanced: set[str] | None = None, in_loop: bool = False) -> None:
    """Kept as nodes until the function ends (:func:`finish_function`): most functions need none of
    it. ``advanced``: the file's attributes advanced in place (``cache.seq_len += n``): per-step state."""
    if augmented and advanced is not None:
        advanced.update(t.attr.value for t in targets if type(t) is cst.Attribute)
    if func.qualname != "<module>" or in_loop:  # import-time code is a step only in a script's loop
        _pending(func).append((order, targets, value, augmented))


def note_call(func, order: int, path: list, loops: list[int], call: cst.Call, expr: tuple | None,
              stmt: cst.CSTNode | None = None, is_tensor=None) -> None:
    """Only calls that pass something and may run project code: ``x.view(n)`` on a tensor runs none."""
    if (func.qualname == "<module>" and not loops) or not call.args:
        return
    fn = call.func
    task = pool_task(call, func.calls)
    if task is not None:  # ``await asyncio.to_thread(self.step, x)``: the step's call, run in a thread
        expr = task[0]
    if expr is None and not (type(fn) is cst.Attribute and fn.attr.value in STORING_METHODS):
        return
    if is_tensor is not None and type(fn) is cst.Attribute and is_tensor(fn.value):
        return
    _pending(func).append((order, encode_path(path), frozenset(loops), call, expr, type(stmt) is cst.Expr and stmt.value is call))


#: id(function facts) -> (those facts, their pending derivations): kept beside the facts, not in
#: them (slotted: no instance dict), so never pickled with the summary; the facts are held too, so
#: an id is never reused while its entry lives; cleared after every file (:func:`forget_pending`)
_PENDING: dict[int, tuple[object, list]] = {}


def forget_pending() -> None:
    """Called after each file: what a walk abandoned mid-function (a budget error) left behind."""
    _PENDING.clear()


def _pending(func) -> list:
    entry = _PENDING.get(id(func))
    if entry is None or entry[0] is not func:
        entry = _PENDING[id(func)] = (func, [])
    return entry[1]


def derived(seeds: set[str], derives: list[tuple]) -> set[str]:
    """``seeds`` and every name bound, anywhere in the function, from one of them (to a fixpoint)."""
    out, changed = set(seeds), bool(seeds)
    while changed:
        changed = False
        for _, target, sources in derives:
            if target not in out and out.intersection(sources):
                out.add(target)
                changed = True
    return out


def _shared(table: dict, value):
    return table.setdefault(value, value)


def _params(stmt: cst.FunctionDef) -> set[str]:
    params = stmt.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.update(p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param))
    names.discard("self")
    return names


def _record_assignment(func, order: int, targets, value, augmented: bool) -> None:
    sources = names_in(value)
    for target in targets:
        for name in _targets(target):
            srcs = (*sources, name) if augmented else sources
            # ``probs[probs < cut] = 0``, ``state.done[idx] = True``: the rest kept, updated where the index says
            if type(target) is cst.Subscript and (type(target.value) is cst.Name or _local_field(target.value)):
                index = tuple(n for el in target.slice for n in names_in(el))
                srcs = (*srcs, *index, name)
            if srcs:
                func.derives.append((order, name, srcs))


def _local_field(node: cst.BaseExpression) -> bool:
    """``session.done`` of a local object (not ``self``): a store into it updates the object's field."""
    return type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value != "self"


def _record_call(func, order: int, path: tuple, loops, call: cst.Call, expr: tuple | None, dropped: bool) -> None:
    fn = call.func
    if type(fn) is cst.Attribute and fn.attr.value in STORING_METHODS and call.args:
        receiver = names_in(fn.value)
        sources = tuple(n for a in call.args for n in names_in(a.value))
        if len(receiver) == 1 and sources:
            func.derives.append((order, receiver[0], sources))
    if expr is None:
        return
    args, kwargs = [], []
    for a in call.args:
        names = names_in(a.value)
        if a.keyword is not None:
            kwargs.append((a.keyword.value, names))
        elif a.star:
            args.append(("*", *names))
        else:
            args.append(names)
    func.arg_calls.append(ArgCall(order, path, loops, expr, tuple(args), tuple(kwargs), dropped))


def finish_function(func, raws: list, start: int, stmt: cst.FunctionDef) -> None:
    """At the end of a function: flag its read-backs and factories (:func:`mark_discarded`,
    :func:`mark_step_data`), and turn what it noted into ``derives`` and ``arg_calls`` -- only for a
    function that loops (a per-token loop may be one of its loops), reads something back (a
    function a loop calls after its model call) or passes a parameter on to a call (a wrapper
    between the two: ``def callback(x): return self._show(x)``). The facts of every other function
    are never read, and most functions are none of these."""
    _finish(func, raws, start, stmt.body, _params(stmt))


def finish_module(func, raws: list, start: int, module: cst.Module) -> None:
    """:func:`finish_function` for a module's own code, when it loops: a script's per-token loop
    at module level (``for i in range(n): logits = model(ids); ids = logits.argmax(-1)``)."""
    if func.range_loops or func.loops:
        _finish(func, [r for r in raws[start:] if r.function == "<module>"], 0, module, set())
    else:
        _PENDING.pop(id(func), None)


def _finish(func, raws: list, start: int, body: cst.CSTNode, params: set[str]) -> None:
    mark_discarded(raws, start, body)
    mark_stop_reads(raws, start, body)
    mark_step_data(raws, start, body)
    entry = _PENDING.pop(id(func), None)
    pending = entry[1] if entry is not None and entry[0] is func else None
    if not pending:
        return
    shared: dict = {}  # one tuple per statement path and loop set: the pickle writes each once
    pending = [item if len(item) == 4 else (item[0], _shared(shared, tuple(item[1])),
                                            _shared(shared, frozenset(item[2])), *item[3:]) for item in pending]
    reads = func.implicit_reads or any(
        r.function == func.qualname and (r.rule.params.get("result_readback") or r.rule.params.get("eager_result"))
        for r in raws[start:])
    if reads or func.range_loops or func.loops:
        for item in pending:
            if len(item) == 4:
                _record_assignment(func, *item)
        # what a caller's result can reach here: the parameters and what derives from them; and what
        # the function binds itself (a host step's ``logits = runner(ids)``, handed to ``append(ids)``:
        # :mod:`.hostreads` follows it from the call that replays)
        given = derived(params, func.derives) | {t for _, t, _ in func.derives} if reads else set()
        for item in pending:
            if len(item) == 6 and (item[2] or given.intersection(
                    n for a in item[3].args for n in names_in(a.value))):  # a loop's calls, or passing a parameter's value
                _record_call(func, *item)
        return
    for item in pending:  # a wrapper: only the calls it passes a parameter to, as it is
        if len(item) == 6 and item[4] is not None and any(
                type(a.value) is cst.Name and a.value.value in params for a in item[3].args):
            _record_call(func, *item)


def record_slice_reads(func, order: int, path: list, loops: list[int], node: cst.Subscript, oracle) -> None:
    """``x[:, :n + 1]`` with ``n`` a device tensor reads ``n`` back (a slice bound is a Python int):
    GL111 reports it where ``n`` is known to be a 0-dim device tensor (the rule's candidate is then
    the read, :mod:`.stepresult`), and it is a read of the step's result either way. Also a bound
    ``n`` or ``n +/- 1`` whose name the oracle knows no host fact of (``n = (a == b).sum()`` on
    tensors it cannot type): only a name derived from the step's result counts when linking, and a
    host value derived from it comes from a read-back that runs first anyway."""
    for element in node.slice:
        part = element.slice
        if type(part) is not cst.Slice:
            continue
        for bound in (part.lower, part.upper):
            if bound is not None and type(bound) is not cst.Integer and (
                    oracle.is_tensor(bound) or _unknown_count(bound, oracle.fn)):
                names = names_in(bound)
                if names:
                    func.implicit_reads.append((order, encode_path(path), frozenset(loops), names))


def _unknown_count(bound: cst.BaseExpression, facts) -> bool:
    if type(bound) is cst.BinaryOperation and type(bound.right) is cst.Integer:
        bound = bound.left
    return type(bound) is cst.Name and not any(
        bound.value in known for known in (facts.hosts, facts.positions, facts.shapes, facts.readbacks))


def read_names(anchor: cst.CSTNode) -> tuple[str, ...]:
    """What a read-back candidate reads: ``tok`` of ``tok.item()``, ``n`` of ``if n == 0:``."""
    if type(anchor) is cst.Call and type(anchor.func) is cst.Attribute:
        return names_in(anchor.func.value)  # the receiver: ``x.tolist()``, not the method's arguments
    return names_in(anchor)


def mark_discarded(raws: list, start: int, body: cst.CSTNode) -> None:
    """Flag read-back candidates (``raws[start:]``, this function's) whose value nothing uses."""
    names: dict[str, int] | None = None
    returned: dict[int, set[int]] = {}  # a return statement's node ids, once per statement (not per read)
    for raw in raws[start:]:
        if not (raw.rule.params.get("result_readback") or raw.rule.params.get("eager_result")):
            continue
        stmt = raw.stmt
        if type(stmt) is cst.Expr and stmt.value is raw.anchor:
            raw.flags = raw.flags | {"discarded"}
            continue
        if type(stmt) is cst.Return and stmt.value is not None and id(raw.anchor) in (
                returned.get(id(stmt)) or returned.setdefault(id(stmt), {id(n) for n in preorder(stmt.value)})):
            raw.flags = raw.flags | {"returned"}  # used only if the caller uses what it returns
            continue
        if type(stmt) is not cst.Assign or not binds_read(stmt.value, raw.anchor):
            continue
        raw.flags = raw.flags | {"bound"}  # its names hold the value read (:func:`.sidereads.intermediate`)
        bound = [n for t in stmt.targets for n in _targets(t.target)]
        if not bound or len(bound) != len(stmt.targets) or any("." in n for n in bound) \
                or not all(type(t.target) is cst.Name for t in stmt.targets):
            continue  # stored on ``self`` or into a container: kept for later
        if names is None:
            names = {}
            for node in preorder(body):
                if type(node) is cst.Name:
                    names[node.value] = names.get(node.value, 0) + 1
        if all(names.get(n, 0) <= 1 for n in bound):  # its own binding is its one mention
            raw.flags = raw.flags | {"discarded"}
