"""A function whose every ``return`` hands on a project call's result returns what that call does.

``def _verify(self, tree, logits): return verify_tree(tree=tree, logits=logits, ...)`` in one file,
``verify_tree`` in another returning ``(accepted, rows, (n, m))`` built on the CPU: the walk of
``_verify`` cannot know the tuple (the callee is summarized elsewhere), so its own return shape is
unknown, and a caller of ``self._verify`` in a third file (a subclass's step loop uploading the
accepted ids with ``.to(device)``) learns nothing. The linker knows both summaries: it composes
the shape along the forwarding chain (:func:`forwarded_returns`, a few links deep) before it sends
return facts (:mod:`.valueflow`), so no extra round of walking is needed.

Only where every return is such a call (``FunctionInfo.forwards``; its callees are the function's
``delegates``, which :mod:`.genloops` records for generators): a function that also returns
something of its own, or yields, keeps its own (joined) shape.
"""

from __future__ import annotations

from collections.abc import Callable

from graphlint.static.facts import FunctionInfo, ModuleInfo
from graphlint.static.placedreturns import is_placed

#: links followed from a call to the function that builds the value (``a`` -> ``b`` -> ``c``)
DEPTH = 3


def note_forward(func: FunctionInfo, delegated: bool) -> None:
    """One ``return`` (or ``yield from``): still forwarding only while each hands on a project call
    (``delegated``: :func:`.genloops.handover` recorded its callee)."""
    func.forwards = delegated and func.forwards is not False


def forwarded_returns(infos, shape_of_call: Callable[[ModuleInfo, FunctionInfo, tuple], object], found: dict) -> None:
    """Fills ``found``, (path, qualname) -> what each forwarding function returns through its calls,
    each resolved by ``shape_of_call(info, fn, expr)`` (which reads ``found`` as it grows: a chain of
    wrappers is one link longer each pass, :data:`DEPTH` passes); joined strictly, only where every
    link says something."""
    from graphlint.static.valuekinds import informative, join

    forwarding = [(info, fn) for info in infos for fn in info.functions.values()
                  if fn.forwards and fn.delegates and not informative(fn.returns)]
    for _ in range(DEPTH if forwarding else 0):
        grew = False
        for info, fn in forwarding:
            key = (info.path, fn.qualname)
            if key in found:
                continue
            shape = None
            for expr in fn.delegates:
                got = shape_of_call(info, fn, expr)
                if not informative(got) or is_placed(got):  # a parameter's position is the callee's own
                    break
                shape = got if shape is None else join(shape, got)
            else:
                if informative(shape):
                    found[key] = shape
                    grew = True
        if not grew:
            break
