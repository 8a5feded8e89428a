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

from graphlint.static.contexts import FuncId
from graphlint.static.facts import LoopInfo


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
                     for qual, fn in sorted(info.functions.items()) if fn.iter_calls]
        done: set[tuple[FuncId, int]] = set()
        changed = bool(gens)
        while changed:
            changed = False
            for fid, info, fn in consumers:
                for loop_id, where, expr in fn.iter_calls:
                    if (fid, loop_id) in done:
                        continue
                    made = [t for t in self.loop_targets(info, fid[1], LoopInfo(loop_id, where, [expr])) if t in gens]
                    if not made:
                        continue
                    done.add((fid, loop_id))
                    context = gens[made[0]]
                    self.add(context, fid, f"per-token loop over the tokens {made[0][1]} yields",
                             (info.path, where), loops=frozenset((loop_id,)))
                    if loop_id in fn.yield_loops and fid not in gens:
                        gens[fid] = context  # it passes each token on: a per-token generator too
                        changed = True
