"""What a nested function's free names hold: the enclosing function's facts about them.

A closure reads the enclosing function's locals (``ids = sample(logits)`` and then ``async def
settle(): stop = ids == eos; if stop[i]: ...``): walked with facts of its own alone, the closure
knew nothing of ``ids``, so a per-row read of a mask built from the sampled device ids went
unseen. A name the nested function never binds itself (no parameter, assignment, loop target,
import, ``global`` or ``nonlocal``: :func:`.oncebound.counts`) takes what the enclosing function's
facts say of it where the ``def`` stands -- the walk's order, as for the enclosing function's own
statements. Only the kinds of value a name holds are carried (device or host tensor, host data,
read-backs); a parameter only presumed a tensor (a hot-named function's unannotated one) is not.
"""

from __future__ import annotations

from graphlint.static.oncebound import counts
from graphlint.static.tensorfacts import FunctionFacts

#: name sets that say what kind of value a name holds (:class:`.tensorfacts.FunctionFacts`)
KINDS = ("tensors", "cpu", "off_cuda", "pinned", "pageable", "scalars", "vectors", "readbacks", "hosts",
         "lists", "numbers", "ints", "compared")


def inherit(outer: FunctionFacts, inner: FunctionFacts) -> None:
    """Seed ``inner`` (a nested function's fresh facts, ``defn`` set) with ``outer``'s kinds of the
    names it does not bind."""
    bound = counts(inner)
    for kind in KINDS:
        names = {n for n in getattr(outer, kind) if n not in bound}
        if kind == "tensors":
            names -= outer.presumed
        getattr(inner, kind).update(names)
