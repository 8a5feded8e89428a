"""Objects built every step: their lazy one-time set-up runs every step.

``if self._slot_idx is None: self._slot_idx = torch.tensor(self.slots, device=dev)`` is lazy
initialisation (:mod:`.runonce`): once per object, set-up, not the step -- when the object lives
across steps (a runner, a model, a cache pool). A cache *view* the host step builds anew every step
(``view = self.pool.decode_view(slots)`` -> ``DecodeCacheView(self, slots)``) runs it on every
step's first use: a pageable upload of the slot ids per step.

The walker keeps a report in such a branch, flagged ``lazy`` (a ``self`` field's ``is None`` test;
not a class-level cache, ``cls._buf``, built once per process), and :func:`per_step_classes` says
which classes the hot eager or host code builds per step: a constructor call (a call resolved to
the class's ``__init__``) in a function of the eager or host context -- inside the loops a loop
entry's body is, for a loop entry. A ``lazy`` report of a method of any other class is dropped,
as before. Captured code is no such builder: capture runs its Python once."""

from __future__ import annotations

FuncId = tuple[str, str]
#: the flag the walker puts on a report in a ``self`` field's lazy initialisation
LAZY = "lazy"


def per_step_classes(calls: dict, chains: dict[str, dict], loop_bodies: dict[str, dict]) -> set[tuple[str, str]]:
    """(path, class) of every class whose ``__init__`` a hot eager or host function calls per step."""
    found: set[tuple[str, str]] = set()
    for context in ("eager", "host"):
        bodies = loop_bodies.get(context, {})
        for fid in chains.get(context, {}):
            loops = bodies.get(fid)
            for callee, site in calls.get(fid, ()):
                if site.reference or not callee[1].endswith(".__init__"):
                    continue
                if loops is not None and not (site.loops & loops):
                    continue  # a loop entry's body is its loops: a constructor before them runs once
                found.add((callee[0], callee[1][: -len(".__init__")]))
    return found
