"""Which callables a capture records directly, and which of them run no model (a mixin of
:class:`.entries.Discovery`, kept apart so the discovery reads as its pipeline).

A speculative engine captures its model forward and, beside it, small kernels (a rejection
residual, a sampler); a loop that calls only such a kernel eagerly runs no model per iteration, so
it is no per-token loop. Telling them apart needs the captures' own roots (:meth:`recorded_roots`):
:mod:`.objectsteps` reads them too, to make a captured method of a tensor-holding object a model step."""

from __future__ import annotations

from graphlint.static.contexts import FuncId, callers_of


class MathRoots:
    """Needs ``roots``, ``fn``, ``graph`` and ``calls`` of :class:`.entries.Discovery`."""

    def math_roots(self, roots: set[FuncId], graph: dict[FuncId, object], steps: set[FuncId]) -> set[FuncId]:
        """Callables a capture records that run no model: nothing they reach inside it is a model step
        (``steps``) or a call the call graph cannot follow -- a sampling or rejection-residual kernel
        captured on its own (``get_residual(p, q)``). Still graph code; but a loop calling one eagerly
        (a speculative tree's acceptance walk) runs no model per iteration: no evidence of a
        per-token loop, as a loop over images or experts is none."""
        roots = set(roots) & self.recorded_roots()
        found = {f for f in graph if f in steps or (self.graph is not None and self.graph.unresolved.get(f))}
        queue = list(found)
        callers = callers_of({f: self.calls.get(f, ()) for f in graph})
        while queue:
            for caller in callers.get(queue.pop(), ()):
                if caller in graph and caller not in found:
                    found.add(caller)
                    queue.append(caller)
        return {r for r in roots if r in graph and r not in found}

    def recorded_roots(self) -> set[FuncId]:
        """The graph roots a capture records directly, and nothing else makes graph code (a declared
        region or a compiled function is the step it names)."""
        recorded, other = set(), set()
        for root, chain in self.roots["graph"]:
            (recorded if len(chain) == 2 and self.fn(chain[0]).captures else other).add(root)
        return recorded - other
