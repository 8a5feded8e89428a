"""The receivers a step loop runs its model on: a mode without the model is no decode path.

A viewer's loop steps whatever environment it was given -- ``self.env.step(action)`` every frame --
and the program gives it one of several: a world-model environment (the model runs every frame)
or a dataset replayer (stored frames, no model at all). The points-to holds both classes for
``self.env``, so every method the loop calls on it -- the step, the key handlers, the reset -- ran
the replayer's code as the decode path's too. Where the loop's call on a receiver dispatches to the
model step on some of its classes and to no model on others, the others are another mode of the
program, one that runs no model: in that loop the receiver is one of the model's classes, and
every call the loop makes on it runs only their methods. A call on the receiver none of whose
alternatives reaches the model (a sampler picked by configuration, each variant model-free) prunes
nothing, nor does a method a model class inherits (only the model-free classes' own are dropped),
nor a module's (a class with a ``forward``: a model variant whose step runs through helpers
the model step does not name is a model all the same). And only where that receiver is the loop's
one way to a model: a loop that also calls a model on another receiver (an agent acting in a real
environment or in the world model) runs a model in every mode, and keeps every alternative.
"""

from __future__ import annotations

FuncId = tuple[str, str]


def model_modes(edges: list, loops: frozenset[int], reach: set[FuncId], module=None) -> list:
    """``edges`` (a loop function's call edges) less those, on a receiver whose call in ``loops``
    reaches the model (``reach``) on some classes and no model on others, into those others --
    never into a module's class (``module((path, class))``: it has a ``forward``), which is a
    model whatever ``reach`` knows of what its forward runs (a variant's step through helpers)."""
    sites: dict[int, tuple] = {}
    for callee, site in edges:
        if site.loops & loops and site.expr and site.expr[0] == "a":
            sites.setdefault(id(site), (site, []))[1].append(callee)
    dropped: dict[tuple, set[tuple[str, str]]] = {}  # receiver -> the model-free classes
    for site, callees in sites.values():
        runs = {_owner(c) for c in callees if c in reach}
        idle = {_owner(c) for c in callees if c not in reach} - runs
        idle = {owner for owner in idle if module is None or not module(owner)}
        if runs and idle and all("." in c[1] for c in callees):
            dropped.setdefault(site.expr[1], set()).update(idle)
    if not dropped or any(callee in reach and _receiver(site) not in dropped for callee, site in edges if site.loops & loops):
        return edges  # a model the loop runs whatever the receiver holds (an agent beside its environment)
    return [(callee, site) for callee, site in edges
            if not (site.loops & loops and site.expr and site.expr[0] == "a"
                    and _owner(callee) in dropped.get(site.expr[1], ()))]


def _receiver(site) -> tuple | None:
    """What a call is made on: ``self.env`` of ``self.env.step(a)``; the callee itself otherwise."""
    return site.expr[1] if site.expr and site.expr[0] == "a" else site.expr


def _owner(fid: FuncId) -> tuple[str, str]:
    """The class a method belongs to, as (path, class qualname)."""
    return fid[0], fid[1].rpartition(".")[0]
