"""A captured method of an object that holds tensors runs a model, whatever the method is called.

A per-token loop's call must run a model step (:meth:`.entries.Discovery.run`): a ``forward``, a
``__call__`` or a ``*decode*`` function doing device work, or captured code that runs one. A
callable captured on its own that reaches none of them is a kernel -- a sampler, a rejection
residual (``get_residual(p, q)``) -- and a loop calling it eagerly (a speculative tree's acceptance
walk) runs no model per iteration (:meth:`.entries.Discovery.math_roots`).

Engines that keep a model's weights as plain tensors on an object of their own, not in an
``nn.Module``, name its forward as they like: ``capture_graph(llm=self)`` records
``llm.inference(ids, pos, mask, slots)``, whose body embeds with ``self.embed_tokens``, runs
``self.layer_compute(self.layers[i], ...)`` per layer and projects with ``self.lm_head``. What
tells it from a kernel is not its name but where its operands live: a kernel captured on its own
works on what the capture passes it; a method of an object whose class holds tensor attributes
(its weights, its caches, its rotary tables) runs that object -- a model. Such a captured method
is a model step, as a module's ``forward`` is; so are the overrides of the same method in its
class family (the eager ``LlamaOffload.inference`` beside the captured ``Llama.inference``: a call
on the model field resolves to every class of the family, and each runs its model).

Only the callable a capture records is judged so, never what it reaches: a kernel that updates a
cache object inside its capture stays a kernel. A method of a class with no tensor attributes
(a sampler holding floats) stays one too.
"""

from __future__ import annotations

from graphlint.static.contexts import FuncId
from graphlint.static.index import Index


def holds_tensors(index: Index, by_path: dict, fid: FuncId) -> bool:
    """Whether ``fid`` is a method of a class that (itself or a base in the checked files) holds
    tensor attributes: weights, buffers or tensors it stores on ``self``."""
    info = by_path.get(fid[0])
    fn = info.functions.get(fid[1]) if info is not None else None
    if fn is None or not fn.cls or fn.cls not in info.classes:
        return False
    return any(ref[0].classes[ref[1]].tensor_attrs or ref[0].classes[ref[1]].weight_attrs
               for ref in index.mro((info, fn.cls)))


def object_steps(index: Index, by_path: dict, recorded: set[FuncId]) -> set[FuncId]:
    """The captured methods (``recorded``: what a capture records directly) of objects that hold
    tensors, and every override of the same method in their class family -- the classes below the
    highest base in the checked files that declares it (``LLMBase.inference``, abstract, and each
    model class's own)."""
    found: set[FuncId] = set()
    for fid in sorted(recorded):
        if not holds_tensors(index, by_path, fid):
            continue
        found.add(fid)
        info, fn = by_path[fid[0]], by_path[fid[0]].functions[fid[1]]
        declaring = [ref for ref in index.mro((info, fn.cls)) if fn.name in ref[0].classes[ref[1]].methods]
        for ref in declaring[-1:]:
            found.update((i.path, q) for i, q in [(ref[0], f"{ref[1]}.{fn.name}"), *index.overrides(ref, fn.name)])
    return found
