"""Project models a library pipeline's denoising loop runs: ``pipe = LibPipeline.from_pretrained(path,
transformer=ours)``, then ``pipe(prompt)``.

A diffusion engine subclasses a library's transformer (``class Wrapper(LibTransformer): def forward``),
loads it, hands it to the library's pipeline and calls the pipeline. The pipeline's ``__call__`` runs
the denoising loop outside the checked paths and calls the transformer once per step: no loop of the
checked code says so, so the wrapper's ``forward`` was never per-step and its hazards (a constant mask
rebuilt every step, a device bool tested by ``if``) were never checked. The generation loop of
``model.generate()`` is :mod:`.libloops`'; this is the same evidence for a pipeline object.

**The model** (a stub of library code, as :mod:`.frameworkhooks`' table): a pipeline class of a
library package (:data:`PIPELINES`: diffusers' ``*Pipeline`` and ``AutoPipelineFor*`` classes), built by calling it or one of
its constructors (:data:`CTORS`), calls the components it was handed under :data:`STEP_COMPONENTS`
(``transformer``, ``unet``...) every denoising step; the others (text encoders, VAE, tokenizers) run
once per request.

**The rule.** Building such a pipeline (through the file's imports, a local import or a local naming
one of several pipeline classes) records the project classes handed over as per-step components, and
its result holds one marker value (a container nothing calls: calling the pipeline runs no project
code the call graph follows). When a call of the checked code has the marker in its callee -- the
pipeline, followed through returns and fields, is run -- each recorded class's ``forward`` (its own or
a project base's) becomes an eager entry. Built and never called is no evidence (an export script).
One marker for every pipeline, not one per pipeline built: a runner's field holding many models'
pipelines must stay under the solver's cap on a node's values, so the evidence that a pipeline is
called is program-wide. A project class deriving from a library pipeline and keeping the library's
``__init__`` gets the components as fields of the same names instead (the library registers each
keyword component as an attribute), so its own loop's ``self.transformer(...)`` resolves. Nothing is
added under configured entries or a recorded decode path, nor where the engine captures its step: as
:mod:`.scheduleloops` decides for an eager denoising loop, a diffusion stage beside a captured decode
step runs once per request.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

#: library package -> name patterns of its pipeline classes (a denoising loop in ``__call__``)
PIPELINES = {"diffusers": ("*Pipeline", "AutoPipelineFor*")}
#: the pipeline classes' alternate constructors
CTORS = frozenset(("from_pretrained", "from_pipe", "from_single_file"))
#: the keyword components a diffusers pipeline's loop calls every step
STEP_COMPONENTS = frozenset(("transformer", "transformer_2", "unet", "controlnet", "prior"))
#: what a library pipeline the checked code builds holds (a container nothing calls or fills)
MARKER = ("L", "", ("pipe",), 0)

FuncId = tuple[str, str]


def pipeline_class(dotted: str) -> bool:
    """Whether an import names a library pipeline class (:data:`PIPELINES`)."""
    package, _, rest = dotted.partition(".")
    last = rest.rpartition(".")[2]
    return bool(rest) and any(fnmatchcase(last, p) for p in PIPELINES.get(package, ()))


class PipelineNames:
    """Which calls build a pipeline: the callee spelled through imports and local names -- a library
    pipeline class, or a project class deriving from one (whose ``__init__`` is the library's)."""

    def __init__(self, by_path: dict, index):
        self.by_path, self.index = by_path, index
        #: (path, class) of a project model handed to a library pipeline -> (path, qual) of the first builder
        self.handed: dict[tuple[str, str], tuple[str, str]] = {}
        self._locals: dict[tuple[str, str], dict[str, tuple]] = {}

    def builds(self, path: str, qual: str, func: tuple) -> str:
        """"lib" (a library pipeline), "own" (a project subclass of one) or ""."""
        if func[0] == "a" and func[2] in CTORS:
            func = func[1]
        elif "Pipeline" not in func[-1]:
            return ""
        info, found = self.by_path[path], ""
        for dotted in self.spell(path, qual, func, 2):
            hit = self.index.resolve(info, dotted)
            if hit is None and pipeline_class(dotted):
                return "lib"
            if hit is not None and hit[0] == "class" and self.derives(hit[1], hit[2]):
                found = "own"
        if not found and func[0] == "n" and func[1] in info.classes and self.derives(info, func[1]):
            found = "own"
        return found

    def derives(self, info, cls: str) -> bool:
        """Whether a project class derives from a library pipeline class and keeps its ``__init__``."""
        ref = (info, cls)
        if self.index.find_method(ref, "__init__") is not None:
            return False
        return any(desc[0] == "dotted" and self.index.class_ref(i, desc) is None and pipeline_class(desc[1])
                   for i, name in self.index.mro(ref) for desc in i.classes[name].bases)

    def spell(self, path: str, qual: str, expr: tuple, depth: int) -> list[str]:
        """The dotted imports ``expr`` may name (``Cls``, ``mod.Cls``, a local bound to them)."""
        info = self.by_path[path]
        if expr[0] == "a":
            return [f"{base}.{expr[2]}" for base in self.spell(path, qual, expr[1], depth)]
        if expr[0] == "i":
            return [expr[1]]
        if expr[0] == "o" and depth > 0:
            return [d for alt in expr[1] for d in self.spell(path, qual, alt, depth - 1)]
        if expr[0] != "n":
            return []
        local = self.local_values(path, qual).get(expr[1])
        if local is not None and depth > 0:
            return [d for value in local for d in self.spell(path, qual, value, depth - 1)]
        dotted = info.imports.get(expr[1])
        return [dotted] if dotted and not dotted.startswith(".") else []

    def local_values(self, path: str, qual: str) -> dict[str, tuple]:
        key = (path, qual)
        known = self._locals.get(key)
        if known is None:
            known = self._locals[key] = {}
            flow = self.by_path[path].flows.get(qual)
            for st in flow.stmts if flow is not None and flow.kind == "function" else ():
                if st[0] == "=" and st[1][0] == "n" and st[2] and st[2][0] in ("i", "o", "n"):
                    known.setdefault(st[1][1], []).append(st[2])
        return known


def marker(value: tuple) -> bool:
    """Whether a points-to value is the built pipelines' marker."""
    return value == MARKER


def mark_pipeline(linker, kind: str, kw_nodes: tuple, dst: int, where: tuple) -> None:
    """The pipeline ``dst`` holds its per-step components (the linker's side of the rule): as fields of
    a project subclass (the library's ``__init__`` registers each keyword component as an attribute);
    for a library pipeline, the classes handed over are recorded (:attr:`PipelineNames.handed`) and the
    pipeline holds the one marker (:data:`MARKER`: one value for every pipeline of the program, as a
    runner's field holding many models' pipelines stays under the solver's cap on a node's values)."""
    handed = linker.pipelines.handed
    for key, node in kw_nodes:
        if key not in STEP_COMPONENTS or type(node) is not int:
            continue
        if kind == "own":
            linker.o.store(dst, key, node)
            continue
        linker.s.add_values(dst, (MARKER,))
        linker.s.watch(node, lambda values: [handed.setdefault((v[1], v[2]), where)
                                             for v in values if v[0] in ("I", "S")])


def pipeline_steps(discovery) -> list[tuple[FuncId, FuncId, FuncId]]:
    """(forward, the function that builds the pipeline, one that calls it) for every project model handed
    to a library pipeline, when the checked code calls a library pipeline."""
    graph, index = discovery.graph, discovery.index
    handed, caller = graph.linker.pipelines.handed, None
    for info in discovery.infos if handed else ():
        for qual, fn in sorted(info.functions.items()):
            for site in fn.calls:
                node = None if site.reference else graph.node(info.path, qual, site.expr)
                if node is not None and MARKER in graph.solver.values(node):
                    caller = caller or (info.path, qual)
    found = {}
    for (path, cls), builder in sorted(handed.items()) if caller else ():
        hit = index.find_method((discovery.by_path[path], cls), "forward") if path in discovery.by_path else None
        if hit is not None:
            found.setdefault((hit[0].path, hit[1]), builder)
    return [(fid, builder, caller) for fid, builder in sorted(found.items())]


def add_pipeline_steps(discovery) -> None:
    """Adds the forwards library pipelines run every step as eager entries of ``discovery``."""
    if discovery.options.entries or discovery.options.recorded or discovery.graph is None:
        return
    if discovery.roots["graph"] or discovery.roots["host"]:
        return  # beside a captured step, an eager denoising stage runs once per request (:mod:`.scheduleloops`)
    for fid, builder, caller in pipeline_steps(discovery):
        if not discovery.fn(fid).abstract:
            discovery.add("eager", fid, f"run every step by a library pipeline's denoising loop: {builder[1]}() "
                          f"hands its model to the pipeline, {caller[1]}() calls one")  # called from outside: its parameters unknown
