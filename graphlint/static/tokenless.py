"""A server loop that picks no token: once per request, not per token.

A vision-encoder server (encoder disaggregation beside a VLM's language model) runs ``while True:
jobs = recv(); for job in jobs: emb = self.engine.encode(job); self._send(emb)``. Nothing in the
body feeds a call's output back into its next call; the loop is taken for a per-token loop only
through ``self`` fields (:mod:`.fieldcarry`) -- its connection bookkeeping (``_drain_discovery``
stores the peer's address, ``_send`` reads it, a reconnect on a failed write stores it again).
Such a carry is weak evidence (a serving loop's pending transfers carry through fields too), and
a token step has one thing an encoder's request never does: it picks tokens. So a ``while`` loop
that has the serving shape (:mod:`.loops`' ``serve_loops``: nothing fed back locally; whether work
arrives from outside is not checked), whose every model-running call carries only through fields,
and from whose calls no function reachable outside a module's ``forward`` / ``__call__`` calls a
token picker (``argmax``, ``multinomial``, ``topk``, ``*sample*``, a greedy ``max(dim)``:
:func:`.sampledcarry.is_sampler`, the fact ``FunctionInfo.samples``; a MoE router's ``topk`` is the
model's, and a shared layer reaches it from a vision tower too) runs
requests of another kind -- encoding an image, embedding a prompt -- once each: no per-token
loop, and no step loop of a server either (:meth:`.tokenloops.TokenLoops.serving_loops` skips a
loop already judged here). A loop whose calls reach a sampler outside a forward (an LM worker's
``execute_model``) stays what it was, and so does one
that carries a local (``ids = model(ids)``), that is a ``for`` loop, or that can stop (a ``break``
or ``return`` of its own: a drain of what arrived, ``while True: p = recv(); if p is None: break``,
which its caller runs once a tick: that caller decides; or a test that calls:
``while self.step(): pass``, an interpreter's loop whose every pass is the step).
"""

from __future__ import annotations

from graphlint.static.contexts import FuncId

#: a module's own step: a token picker inside it is the model's (a MoE router's ``topk``), not the step's
MODULE_STEPS = frozenset(("forward", "__call__"))


def picks_no_tokens(discovery, info, fn, loop, runs: set[FuncId]) -> bool:
    """Whether ``loop`` of ``fn`` (in ``info``) is a server loop whose model calls carry only through
    fields, that never stops, and whose calls reach no token picker outside a module's ``forward``
    (``runs``: what runs the model step)."""
    if not any(served.id == loop.id and served.forever for served in fn.serve_loops) or loop.id in fn.loop_exits \
            or not discovery.fields_only(info, fn, loop, runs):
        return False
    seen: set[FuncId] = set()
    todo = list(discovery.loop_targets(info, fn.qualname, loop))
    while todo:
        fid = todo.pop()
        if fid in seen:
            continue
        seen.add(fid)
        callee = discovery.fn(fid)
        if callee.samples:
            return False
        if not (callee.cls and callee.name in MODULE_STEPS):
            todo.extend(c for c, _ in discovery.calls.get(fid, ()) if c not in seen)
    return True
