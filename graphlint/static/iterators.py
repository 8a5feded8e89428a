"""Per-token iterators and the loops that drive them (the linking half of :mod:`.loops`).

An iterator whose ``__next__`` runs one model step and keeps the sampled ids on ``self`` is a
per-token loop whose loop statement lives elsewhere: every ``next()`` is one token. Its body is
found like any per-token loop (:meth:`graphlint.static.entries.Discovery.token_loops`, the pseudo
loop :data:`~graphlint.static.facts.PROTOCOL_LOOP`). What else then runs once per token:

- an iterator that advances it: a ``__next__`` calling ``next(self.gen)`` (a text decoder
  wrapping a token generator) is one pass per token too, to any depth;
- the loop that drives one: the body of ``for tok in gen:`` over an object whose ``__iter__``
  returns such an iterator runs once per token (the stop check, the growing output, the streaming
  callback). Its own code is the engine's host logic like any per-token loop body's.

Not per token: a ``for`` over an object whose ``__next__`` is no such step (a data loader, a
tokenizer, a feature extractor iterating over images), and a ``while`` loop calling ``next(gen)``
(seen only when its calls feed back, as any loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlint.static.facts import PROTOCOL_LOOP

if TYPE_CHECKING:
    from graphlint.static.entries import Discovery

FuncId = tuple[str, str]
STEP_NAMES = ("__next__", "__anext__")


def add_iterator_drivers(discovery: "Discovery", graph: dict) -> None:
    """Adds the iterators advancing a per-token iterator, then the loops driving either, as eager
    per-token loop bodies. ``graph``: the captured functions (never entries of this kind)."""
    if discovery.options.entries:
        return
    bodies = discovery.loop_bodies["eager"]
    steps = {fid for fid, loops in bodies.items() if PROTOCOL_LOOP in loops}
    if not steps:
        return
    candidates = [(info.path, qual) for info in discovery.infos for qual, fn in sorted(info.functions.items())
                  if fn.name in STEP_NAMES and fn.cls and (info.path, qual) not in steps]
    changed = True
    while changed:  # a __next__ advancing a per-token iterator is one, to any depth
        changed = False
        for fid in candidates:
            if fid in steps or _excluded(discovery, fid, graph):
                continue
            inner = next((callee for callee, site in discovery.calls.get(fid, ())
                          if callee in steps and not site.reference), None)
            if inner is not None:
                steps.add(fid)
                changed = True
                discovery.add("eager", fid, f"per-token iterator step advancing {inner[1]}",
                              _where(discovery, fid), loops=frozenset((PROTOCOL_LOOP,)))
    for info in discovery.infos:
        for qual, fn in sorted(info.functions.items()):
            fid = (info.path, qual)
            if not fn.iterations or _excluded(discovery, fid, graph):
                continue
            for loop in fn.iterations:
                driven = [s for s in discovery.graph.iterator_steps(info, qual, loop) if s in steps]
                if driven:
                    discovery.add("eager", fid, f"loop driving the per-token iterator {driven[0][1]}",
                                  (info.path, loop.where), loops=frozenset((loop.id,)))


def _excluded(discovery: "Discovery", fid: FuncId, graph: dict) -> bool:
    fn = discovery.fn(fid)
    return fid in graph or fn.captures or fn.device_code or discovery.not_hot(fn.name, fid)


def _where(discovery: "Discovery", fid: FuncId) -> tuple[str, tuple]:
    info = discovery.by_path[fid[0]]
    loop = next((loop for loop in info.functions[fid[1]].loops if loop.id == PROTOCOL_LOOP), None)
    return (fid[0], loop.where if loop is not None else ())
