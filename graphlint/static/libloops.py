"""Model classes a library's decode loop drives: ``model.generate(ids)`` on a project model.

``class TalkerLM(LibPreTrained): def prepare_inputs_for_generation(...); def forward(...)`` and,
somewhere in the checked code, ``self.talker.generate(inputs, max_length=n)``: the library's
``generate`` (a generation mixin the class inherits) runs the decode loop outside the checked
paths, calling ``prepare_inputs_for_generation`` and then the model's ``forward`` once per token.
No loop of the checked code says so, so the forward was never per-token and its per-token hazards
(a position uploaded from pageable memory in the decode branch) were never checked.

**The rule.** A call ``X.generate(...)`` whose receiver holds an instance of a project class (after
the solve) makes that class's ``forward`` and ``prepare_inputs_for_generation`` (its own or a
project base's) eager entries -- the model step of a per-token loop -- when:

- no class of the project along its MRO defines ``generate`` (the loop is the library's; a project
  ``generate`` is a loop of the checked code, found as such or not at all);
- it derives from a class from outside the project;
- and that library base is a generation mixin: the class (or a project base) defines
  ``prepare_inputs_for_generation``, a hook only a generation loop calls, or a library base is
  named like one (``GenerationMixin``, ``*PreTrainedModel``, ``*ForCausalLM``, ``*LMHeadModel``,
  ``*ForConditionalGeneration``).

Prefill-only branches inside the forward (``if ids.shape[1] != 1:``) stay prefill, as in any model
step. These entries are no evidence of a loop for the hot-names guess (:mod:`.named_entries`): the
loop is not in the checked code, and an engine that had only the guess keeps it. Nothing is added
under configured entries or a recorded decode path (they say what is hot).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from graphlint.static.libpipelines import add_pipeline_steps

GENERATE = "generate"
#: the hooks a library generation loop calls on the model, each token
HOOKS = ("prepare_inputs_for_generation", "forward")
#: names of library classes that carry a generation loop
MIXIN_NAMES = ("GenerationMixin", "*PreTrainedModel", "*ForCausalLM", "*LMHeadModel", "*ForConditionalGeneration")

FuncId = tuple[str, str]


class LibraryLoops:
    """A mixin of :class:`graphlint.static.entries.Discovery` (``self.infos``, ``self.graph``,
    ``self.index``, ``self.by_path``, ``self.options``, ``self.add``)."""

    def library_loops(self) -> None:
        if self.options.entries or self.options.recorded or self.graph is None:
            return
        add_pipeline_steps(self)  # a library pipeline's denoising loop (:mod:`.libpipelines`)
        driven: dict[tuple[str, str], tuple[str, str]] = {}  # the class -> the first caller of its generate
        for info in self.infos:
            for qual, fn in sorted(info.functions.items()):
                for site in fn.calls:
                    expr = site.expr
                    if site.reference or expr[0] != "a" or expr[2] != GENERATE:
                        continue
                    node = self.graph.node(info.path, qual, expr[1])
                    for value in self.graph.solver.values(node) if node is not None else ():
                        if value[0] in ("I", "S") and (value[1], value[2]) not in driven \
                                and self.generation_model((self.by_path[value[1]], value[2])):
                            driven[(value[1], value[2])] = (info.path, qual)
        for (path, cls), (caller_path, caller) in sorted(driven.items()):
            ref = (self.by_path[path], cls)
            for hook in HOOKS:
                hit = self.index.find_method(ref, hook)
                if hit is not None:
                    fid = (hit[0].path, hit[1])
                    self.add("eager", fid, f"run per token by the library's generate loop: {caller}() calls "
                             f"{cls}.generate", chain=((caller_path, caller), fid))

    def generation_model(self, ref) -> bool:
        """The class runs a library's generation loop (see the module docstring)."""
        index = self.index
        forward = index.find_method(ref, "forward")
        if index.find_method(ref, GENERATE) is not None or forward is None:
            return False
        if (forward[0].path, forward[1]) in self.calibrating:  # a calibration model (:mod:`.calibration`)
            return False
        if not self.graph.objects.ctors.library_base(ref):
            return False
        if index.find_method(ref, HOOKS[0]) is not None:
            return True
        for info, name in index.mro(ref):
            for base in info.classes[name].bases:
                if base[0] == "dotted" and index.class_ref(info, base) is None:
                    last = base[1].rsplit(".", 1)[-1]
                    if any(fnmatchcase(last, pattern) for pattern in MIXIN_NAMES):
                        return True
        return False
