"""A library model an engine runs by hand: the step of a per-token loop that calls no ``forward``.

An eager engine may load a library's model (``self.model = XForCausalLM.from_pretrained(path)``)
and run it itself, in a method of the engine with no model-like name: the embedding, each of
``self.model.layers``' attention and MLP, the norm and the head -- one call of a library module
after another, experts placed on the GPU or the CPU in between. Its ``generate`` loop calls that
method, samples the next id from the logits on the host and feeds it back. No project ``forward``
is reached (the modules are the library's), so nothing said the loop runs a model, and the whole
engine had no decode path.

**The rule.** A function *runs a library model* when it calls, as a module -- the object itself
(``self.head(h)``, ``experts[i](h)``) or one of its attributes (``self.model.embed_tokens(ids)``,
``layer.self_attn(h)``), never one of ``nn.Module``'s own methods (``.to()``, ``.state_dict()``,
``.generate()``: :data:`NOT_RUNS`) -- an object rooted at a library model the checked code builds:
a call of a class imported from outside the project whose name says model (:data:`MODEL_CLASSES`:
``LlamaForCausalLM``, ``AutoModelForCausalLM``, ``T5EncoderModel``; not a tokenizer, processor or
config), directly or through one of its alternate constructors (``from_pretrained``). The root is
found by walking the callee's flow facts backwards as :mod:`.unresolvedkinds` does (locals, ``self``
fields of the class family, parameters through their callers, attributes and elements of the
model, ``.to(dev)`` / ``.eval()`` and ``copy.deepcopy`` of it, a project function's returns).

Such a function is a model step (:meth:`.entries.Discovery.run`'s ``steps``) when a per-token loop
runs it (:func:`fed_runners`): a loop (:mod:`.loops`) whose call feeds the ids a sampler picked
from the previous iteration's output (``LoopInfo.picked``: ``argmax``, ``topk``, ``multinomial``, a
``*sample*`` helper) runs it, directly or through project calls, and no call of that loop reaches a
model step already. A loop over layers or experts feeds hidden states, not sampled ids; a training
step calls ``.backward()`` (set-up and training code are never entered); a loop over prompts calling
``generate`` once each samples nothing itself -- none of them is taken. A loop inside a module's own
class is a model's (its layers). Left: a model's own non-module attributes called (``model.config.get(k)``)
count as running it; only the loop's sampled carry keeps them off the decode path."""

from __future__ import annotations

from fnmatch import fnmatchcase

from graphlint.static.contexts import FuncId, bfs, reaching
from graphlint.static.libctors import CTOR_NAMES
from graphlint.static.names import name_matcher
from graphlint.static.unresolvedkinds import DEPTH, LIBRARY, Provenance

MODEL = "model"
#: library class names that say "a model": ``LlamaModel``, ``T5EncoderModel``, ``AutoModelForCausalLM``, ``WhisperForConditionalGeneration``
MODEL_CLASSES = ("*Model", "*Model[A-Z]*", "*For[A-Z]*")
#: ... and the objects loaded beside one that are none
NOT_MODELS = ("*Tokenizer*", "*Processor*", "*Config*", "*FeatureExtractor*", "*Output*")
#: methods that return the module they are called on (``full.lm_head.to(dev)`` is the head)
SAME_MODULE = frozenset(("to", "cuda", "cpu", "half", "float", "bfloat16", "double", "eval", "train",
                         "requires_grad_", "to_empty", "share_memory"))
COPIES = frozenset(("copy.deepcopy", "copy.copy"))
#: ``nn.Module``'s and a pretrained model's own methods: none runs the model's computation per call
#: (``generate`` runs a whole decode of its own: a loop around it is a loop over requests)
NOT_RUNS = name_matcher(("to", "cuda", "cpu", "half", "float", "bfloat16", "double", "eval", "train", "apply",
                         "requires_grad_", "zero_grad", "parameters", "named_*", "buffers", "modules", "children",
                         "state_dict", "load_state_dict", "register_*", "get_*", "set_*", "save*", "load*",
                         "from_*", "resize_*", "tie_weights", "generate*", "num_parameters", "to_empty",
                         "share_memory", "extra_repr", "add_module", "type"))
_LOADER = name_matcher(CTOR_NAMES)


class ModelRoots(Provenance):
    """:class:`.unresolvedkinds.Provenance`'s backward walk, with one root more: :data:`MODEL`, a
    library model built by the checked code (see the module docstring)."""

    def roots(self, path: str, scope: str, ir, depth: int, seen: set) -> set[str]:
        if ir is None or ir[0] != "c" or depth <= 0:
            return super().roots(path, scope, ir, depth, seen)
        func, args = ir[1], ir[2]
        dotted = self._dotted(path, scope, func) if func[0] in ("n", "a") else None
        if dotted is not None:
            if dotted in COPIES:
                return self.roots(path, scope, args[0], depth - 1, seen) if args and args[0] else {LIBRARY}
            return {MODEL} if self.model_class(path, dotted) else {LIBRARY}
        if func[0] == "a" and func[2] in SAME_MODULE:
            return self.roots(path, scope, func[1], depth - 1, seen)
        return self.returned(path, scope, func, depth, seen)

    def model_class(self, path: str, dotted: str) -> bool:
        """``dotted`` (a callee, as imported) builds a library model: ``pkg.LlamaForCausalLM`` or its ``from_pretrained``."""
        parts = dotted.split(".")
        name = parts[-2] if len(parts) > 1 and _LOADER.match(parts[-1]) else parts[-1]
        return any(fnmatchcase(name, p) for p in MODEL_CLASSES) and not any(fnmatchcase(name, p) for p in NOT_MODELS) \
            and self.imported(path, dotted) == LIBRARY

    def returned(self, path: str, scope: str, func: tuple, depth: int, seen: set) -> set[str]:
        """What the project functions a call runs return (``self.model = load(path)``)."""
        node = self.graph.node(path, scope, func)
        found: set[str] = set()
        for value in self.graph.solver.values(node) if node is not None else ():
            if value[0] in ("F", "M") and value[1] in self.by_path:
                flow = self.by_path[value[1]].flows.get(value[2])
                for stmt in flow.stmts if flow is not None else ():
                    if stmt[0] == "r" and stmt[1] is not None:
                        found |= self.roots(value[1], value[2], stmt[1], depth - 1, seen)
        return found

    def runs_model(self, fid: FuncId, fn) -> bool:
        """Whether ``fid`` calls a library model's module (see the module docstring)."""
        for site in fn.calls:
            expr = site.expr
            if site.reference or not expr:
                continue
            if expr[0] == "a":
                if NOT_RUNS.match(expr[2]):
                    continue
                base = expr[1]
            elif expr[0] in ("n", "s"):
                base = expr
            else:
                continue
            if MODEL in self.roots(fid[0], fid[1], base, DEPTH, set()):
                return True
        return False


def fed_runners(disc, steps: set[FuncId], callers: dict[FuncId, list[FuncId]], setup: set[FuncId]) -> set[FuncId]:
    """The functions that run a library model, run by a loop's call fed the ids it sampled, in loops
    none of whose calls reaches a model step (``steps``) already: model steps (the module docstring)."""
    found: set[FuncId] = set()
    walk: ModelRoots | None = None
    reach = None
    for info in disc.infos:
        for qual, fn in info.functions.items():
            if disc.module_method(info, fn):
                continue  # a loop inside a module (its layers)
            for loop in fn.loops:
                if not loop.picked:
                    continue
                fed = disc.loop_targets(info, qual, type(loop)(loop.id, loop.where, list(loop.picked)))
                if not fed:
                    continue
                reach = reaching(steps, callers) if reach is None else reach
                if any(t in reach for t in disc.loop_targets(info, qual, loop)):
                    continue
                walk = ModelRoots(disc.graph, disc.calls) if walk is None else walk
                for fid in bfs([(t, (t,)) for t in fed if t not in setup], disc.calls, setup):
                    if fid not in found and fid[0] in disc.by_path and walk.runs_model(fid, disc.fn(fid)):
                        found.add(fid)
    return found
