"""What an inner ``for`` binds, as the per-token loops around it see it (:mod:`.loops`).

A decode loop that steps several micro-batches per token walks them in a loop of its own:
``for state in states: logits = model(cat(state.ids)); nxt = sample(logits); fresh.append(nxt)``,
then ``states = [State(ids=s.ids + [n]) for s, n in zip(states, fresh)]``. The sampled ids reach
the next token's model call only through the inner loop's target: ``state`` holds an element of
``states``, which the outer iteration rebuilt from them. So, to every tracked loop around it, an
inner ``for`` over a collection binds its target from what its iterable reads -- a binding under
a loop, which may not run, so it kills nothing (:meth:`.loops.LoopFrame.exposed`). The index of
an inner ``range`` (any loop that counts steps, :func:`.loopnames.counts_steps`) is a count, no data of the collection it may count: it is bound from nothing,
as before. An iterable that is the outer iteration's own element (``for j in range(d * per,
...)`` over a device's share) picks elements too (:func:`.loopnames.own_element`)."""

from __future__ import annotations

import libcst as cst

from graphlint.static.loopnames import counts_steps, names_read


def bind_inner_targets(frames: list, stmt: cst.For | cst.While, targets: set[str], order: int) -> None:
    """Record, in every eligible frame of ``frames`` (outer loops), that the inner loop ``stmt``
    binds ``targets`` at ``order`` -- from its iterable's names when it walks a collection."""
    picked = names_read(stmt.iter) if isinstance(stmt, cst.For) and targets else set()
    collection = isinstance(stmt, cst.For) and not counts_steps(stmt.iter)
    for frame in frames:
        if not frame.eligible:
            continue
        for name in targets:
            frame.writes[name] = order
        if picked & frame.elements:  # an inner range the outer iteration chooses: its elements
            frame.elements |= targets
        if not collection or not targets:
            continue
        sources = names_read(stmt.iter, frame.elements) - targets
        if not sources:
            continue
        for name in targets:
            frame.deps[name] = sources | frame.deps.get(name, set())
            frame.defs.setdefault(name, []).append((order, sources, False))
