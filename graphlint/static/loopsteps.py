"""A model's other step methods: ``output = model.step(tok, cache)`` in a loop that feeds the
sampled token back, beside ``model.forward(prompt)`` for the prefill.

A decode loop's call runs a model step when it reaches a module's ``forward`` (or ``__call__``,
a ``*decode*`` function doing device work: :meth:`.entries.Discovery.run`). A model that keeps a
second entry for one token at a time -- ``step``, ``decode_one``, ``generate_step``, named as its
authors like -- reaches no ``forward`` through it, so the loop that feeds it its own output looked
like no decode loop and the loop around it (a chat loop over prompts) was taken for the per-token
one, with the prefill and the set-up it runs once per prompt. The evidence here is the loop's and
the class's together: a method doing device work, of a class whose ``forward`` is a model step,
called by a loop that feeds what it returns back into it (:mod:`.loops`), is that model's step --
when no call of that loop reaches a model step already: beside ``logits = self(ids)`` (a forward,
a replay), ``ids = self.sample(logits)`` is the host's sampling around the step, not a step;
and a loop in a method of a model itself (positions built segment by segment) is no decode loop."""

from __future__ import annotations

from graphlint.static.contexts import FuncId, reaching


def fed_model_methods(disc, steps: set[FuncId], callers: dict[FuncId, list[FuncId]]) -> set[FuncId]:
    """The methods loops feed back that belong to a model whose ``forward`` is in ``steps``, in
    loops none of whose calls reaches a model step (``steps``, ``callers``: the call graph upwards)."""
    found: set[FuncId] = set()
    reach = None
    for info in disc.infos:
        for qual, fn in info.functions.items():
            if disc.module_method(info, fn):
                continue  # a loop inside a module (its layers, a position table built over segments)
            for loop in fn.loops:
                targets = disc.loop_targets(info, qual, loop)
                methods = [t for t in targets if t not in steps and _model_method(disc, t, steps)]
                if not methods:
                    continue
                reach = reaching(steps, callers) if reach is None else reach
                if not any(t in reach for t in targets):
                    found.update(methods)
    return found


def _model_method(disc, target: FuncId, steps: set[FuncId]) -> bool:
    method = disc.fn(target)
    if not method.cls or not method.device_work or target[0] not in disc.by_path:
        return False
    owner = disc.by_path[target[0]]
    if method.cls not in owner.classes:
        return False
    return _has_forward(disc, (owner, method.cls), steps)


def _has_forward(disc, ref, steps: set[FuncId]) -> bool:
    forward = disc.index.find_method(ref, "forward")
    return forward is not None and (forward[0].path, forward[1]) in steps
