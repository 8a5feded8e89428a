"""Loops over a per-token generator's items, as :class:`.entries.Discovery` finds them (a mixin).

A generator whose per-token loop yields (``for cur in range(...): logits = model(...); ...; yield
tokens``) hands each token to its consumer: ``for out in self.generate(...):`` runs its body once
per ``yield``, so once per token, between one step and the next. That body is part of the decode
path as much as the generator's own loop body: a stop test that reads a flag back there
(``if out.finished: break``) syncs every token. Such a ``for`` loop is a per-token loop of its
own, in the generator's context (eager, or the host step's), with its body only: the call that
makes the generator runs once, before the loop, and is no part of it. A consumer that yields in
that loop (``completion()`` passing ``generate()``'s items on) is a per-token generator itself, so
its consumers are found too (to a fixpoint). The generator's own code between two yields is its
per-token loop's body, already on the path.

Evidence, not a name: the generator's loop must be a per-token loop (:mod:`.tokenloops`) with a
``yield`` inside it, and the consumer's iterated call must resolve to it through the call graph.
A generator that yields once before or after its loop (a prompt's result, a summary) makes no
per-token consumer, and neither does a loop over any other call's items (a list of images, a data
loader)."""

from __future__ import annotations

import libcst as cst

from graphlint.static.forwardedreturns import note_forward

from graphlint.static.contexts import FuncId
from graphlint.static.facts import FunctionInfo, LoopInfo

#: calls that pass their argument's items on: ``for i, tok in enumerate(self.stream(...))``
PASS_ON = frozenset(("enumerate", "tqdm", "iter"))


# -- recorded while walking (:class:`.loops.LoopTracker`) --------------------------------------
def bind_stream(streams: dict[str, cst.Call | None], targets: list, value, again: bool) -> None:
    """``stream = get_token_stream(...)``: a name bound once, outside any loop, to a call -- what a
    later ``for x in stream`` iterates. Bound again (or in a loop, ``again``): no single call."""
    for target in targets:
        if type(target) is cst.Name:
            name = target.value
            streams[name] = None if again or name in streams or type(value) is not cst.Call else value
        else:
            for node in (el.value for el in getattr(target, "elements", ())):
                if type(node) is cst.Name:
                    streams[node.value] = None


def iterated(func: FunctionInfo, loop_id: int, where: tuple, ir, it: cst.BaseExpression,
             streams: dict[str, cst.Call | None] | None = None) -> None:
    """``for x in <it>``: the call whose items it iterates (``self.stream(...)``, also through a
    wrapper that passes them on, or a name bound once to it, ``streams``), in flow IR (``ir``: the
    walk's :class:`.flowir.IRBuilder`)."""
    for _ in range(4):
        if type(it) is cst.Name and streams and streams.get(it.value) is not None:
            it = streams[it.value]  # ``stream = self.stream(...)`` before ``for tok in stream:``
        if type(it) is not cst.Call:
            return
        if type(it.func) is cst.Name and it.func.value in PASS_ON and it.args and type(it.args[0].value) in (cst.Call, cst.Name):
            it = it.args[0].value
            continue
        # ``range(n)``, ``torch.unbind(x)``, ``t.tolist()``: no project generator comes out of an opaque
        # call, and recording every one cost the linking process a megabyte on all of torch
        expr = None if ir.opaque(it.func) else ir.expr(it.func)
        if expr is not None:
            func.iter_calls += ((loop_id, where, expr),)
        return


def handover(func: FunctionInfo, loop_ids: list[int], ir, stmt: cst.Expr | cst.Return) -> None:
    """What a generator hands its consumer: a ``yield`` in loops, and another call's items,
    ``yield from f(...)`` or ``return f(...)`` (``func.delegates``)."""
    value = stmt.value
    if type(value) is cst.Yield:
        if loop_ids:
            func.yield_loops = func.yield_loops | frozenset(loop_ids)
        value = value.value.item if type(value.value) is cst.From else None
    elif type(stmt) is not cst.Return:
        return
    if type(value) is cst.Call and not ir.opaque(value.func) and (expr := ir.expr(value.func)) is not None:
        func.delegates += (expr,)  # ``return torch.cat(...)``: opaque, no generator (see :func:`iterated`)
        note_forward(func, type(stmt) is cst.Return)
    elif type(stmt) is cst.Return:
        note_forward(func, False)  # a return of its own (:mod:`.forwardedreturns`)


# -- linked (:class:`.entries.Discovery`) ------------------------------------------------------


class GeneratorLoops:
    """Mixin of :class:`.entries.Discovery`: consumers of per-token generators."""

    def generator_loops(self) -> None:
        """Adds every ``for`` loop over a per-token generator's items as a per-token loop."""
        if self.options.entries:
            return
        gens: dict[FuncId, str] = {}  # per-token generator -> its loop's context
        for context in ("eager", "host"):
            for fid, loop_ids in self.loop_bodies[context].items():
                if fid not in gens and self.fn(fid).yield_loops & loop_ids:
                    gens[fid] = context
        consumers = [((info.path, qual), info, fn) for info in self.infos
                     for qual, fn in sorted(info.functions.items()) if (fn.iter_calls or fn.delegates)
                     and not fn.captures and not fn.device_code and not self.cold(fn.name, (info.path, qual))]
        done: set[tuple[FuncId, int]] = set()
        changed = bool(gens)
        while changed:
            changed = False
            for fid, info, fn in consumers:
                if fid not in gens:  # ``return self._stream(...)``, ``yield from self._stream(...)``: its items
                    made = self.generators(info, fid, LoopInfo(0, (), list(fn.delegates)), gens)
                    if made:
                        gens[fid] = gens[made[0]]
                        changed = True
                for loop_id, where, expr in fn.iter_calls:
                    if (fid, loop_id) in done:
                        continue
                    made = self.generators(info, fid, LoopInfo(loop_id, where, [expr]), gens)
                    if not made:
                        continue
                    done.add((fid, loop_id))
                    context = gens[made[0]]
                    self.add(context, fid, f"per-token loop over the tokens {made[0][1]} yields",
                             (info.path, where), loops=frozenset((loop_id,)))
                    if loop_id in fn.yield_loops and fid not in gens:
                        gens[fid] = context  # it passes each token on: a per-token generator too
                        changed = True

    def cold(self, name: str, fid: FuncId) -> bool:
        """Set-up, prefill-only or training code (:mod:`.coldcode`), as :mod:`.tokenloops` skips it:
        an evaluation that consumes the stream is no decode path."""
        return self.not_hot(name, fid) and not self.not_hot.both_phases(name, fid)

    def generators(self, info, fid: FuncId, calls: LoopInfo, gens: dict[FuncId, str]) -> list[FuncId]:
        """The per-token generators (``gens``) the calls ``calls.exprs`` of ``fid`` run."""
        return [t for t in self.loop_targets(info, fid[1], calls) if t in gens] if calls.exprs else []
