"""A loop's carry through an object its step advances: ``strategy.advance(log_probs)``.

A generate loop that keeps its sequences in a decode-strategy object (beam search, sampling) hands
each step's output to that object and reads the next step's input back from it::

    for step in range(strategy.max_length):
        inp = src if step == 0 else strategy.current_predictions.view(-1, 1)
        log_probs = self.decode(inp, src_len=strategy.src_len)
        strategy.advance(log_probs)

No local goes round the loop: ``advance`` stores the picked ids on the strategy, and the property
the next iteration reads returns them. A call made as a statement of its own, for its effect -- its
result is dropped -- on an object's method with arguments, puts what it is passed into that object,
as ``ids.append(tok)`` puts ``tok`` into ``ids`` (:data:`.loopnames.MUTATING_METHODS`); the loop
carries when the step's call reads the object again (:class:`.loops.LoopFrame`). What the advancing
call itself reads is its arguments: the object's old state is not its input, so a server's
``engine.step(batch)`` on a batch fresh from a queue stays a loop that feeds nothing back.

The loop must read the object's data back (``strategy.last``, ``strategy.src_len``: an attribute
that is not a method it calls, :func:`reads_state`): an object the loop only calls methods of --
a server's ``engine.add_request(req)`` then ``out = engine.step()`` -- hands its work over, and what
that object keeps is its own business, no carry of the loop's.

Only an object the function builds (``strategy = BeamSearch(...)``) or is handed as a parameter -- the
decode's own state -- not one it gets from another call (``batch = self.scheduler.schedule()``: the
engine's batch, which a host step loop around a replay advances with each step's tokens), nor an
engine's component in a ``self`` field (a scheduler told of each result:
what it keeps is the engine's, and :mod:`.fieldcarry` follows ``self``'s own stores), not a module (``np.save(out)``,
``logging.info(x)``), and not a call whose result is used (``y = obj.f(x)`` is a value, not an
effect)."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.loopnames import MUTATING_METHODS, names_read


def advanced_receiver(call: cst.Call, stmt: cst.CSTNode | None, imports: dict[str, str]) -> str | None:
    """The object ``call`` advances (a local's or a parameter's name), when the call is a statement
    of its own calling a method of it with arguments; else None."""
    func = call.func
    if type(stmt) is not cst.Expr or stmt.value is not call or type(func) is not cst.Attribute or not call.args:
        return None
    method = func.attr.value
    if method in MUTATING_METHODS or method.startswith("__") or (method.endswith("_") and not method.startswith("_")):
        return None  # a container's own method, or an in-place tensor op: filled already
    value = func.value
    if type(value) is not cst.Name or value.value == "self" or value.value in imports:
        return None
    return value.value


def reads_state(body: cst.CSTNode, receiver: str, memo: dict) -> bool:
    """Whether ``body`` (a loop statement) reads a data attribute of the local ``receiver``:
    ``receiver.attr`` that is not the callee of a call. ``memo``: per loop, per receiver."""
    found = memo.get(receiver)
    if found is None:
        callees = {id(n.func) for n in preorder(body) if type(n) is cst.Call}
        found = memo[receiver] = any(
            type(n) is cst.Attribute and id(n) not in callees and type(n.value) is cst.Name and n.value.value == receiver
            for n in preorder(body))
    return found


def note_advance(frames: list, order: int, call: cst.Call, stmt: cst.CSTNode | None, imports: dict[str, str],
                 own: set[str] | frozenset) -> str | None:
    """Fill the object ``call`` advances with its arguments in each tracked loop of ``frames``
    (:class:`.loops.LoopFrame`) whose body reads that object's data; returns the object, or None.
    ``own``: the function's parameters and the locals it builds (:func:`bind_built`)."""
    advanced = advanced_receiver(call, stmt, imports)
    if advanced is None or advanced not in own:
        return None
    args = set().union(*(names_read(a.value) for a in call.args))
    for frame in frames:
        if frame.eligible and advanced not in frame.targets | frame.picked and frame.stmt is not None \
                and reads_state(frame.stmt, advanced, frame.state_reads):
            frame.fill(order, advanced, args)
    return advanced


def bind_built(built: dict[int, set[str]], key: int, targets: list[cst.BaseExpression], value: cst.BaseExpression | None) -> None:
    """Keep ``built[key]`` (a function's locals bound to an object it builds: ``strategy = BeamSearch(...)``, a
    class called by its capitalized name) up to date with one assignment."""
    names = [t.value for t in targets if type(t) is cst.Name]
    if names:
        made = type(value) is cst.Call and type(value.func) is cst.Name and value.func.value[:1].isupper()
        (built.setdefault(key, set()).update if made else built.setdefault(key, set()).difference_update)(names)
