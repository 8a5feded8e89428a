"""Unresolved calls: the calls on the decode path that look like the project's own and that the
call graph cannot follow -- where graphlint stops seeing the engine.

**Definition.** A call site inside a hot function (a function of the decode path; for a per-token
loop's function, a call inside that loop) is *unresolved* when

1. it looks like a call of project code: a call through ``self``/``cls``, a local, a parameter or
   an attribute chain on them (``self.model_forward(**kw)``, ``self.model.generate(x)``,
   ``runner(x)``, ``model.forward(x)`` with ``model: nn.Module``), ``getattr(self, name)(x)``, a
   bare name that is no builtin and no import from outside the project, or a name imported from
   an analysed module that is no function or class there; and
2. its target set is empty; and
3. it is no known external: not a call into ``torch``, the standard library or any other module
   outside the analysed files (``F.silu``, ``math.sqrt``, ``os.environ.get``), no builtin, not a
   method of a builtin container (``self.queue.append``), of a tensor (``self.k_cache.copy_``) or
   of ``nn.Module`` (``self.model.eval()``), not a call on an attribute the analyzer knows holds a
   tensor (``register_buffer``, ``nn.Parameter``, ``self.x = torch.zeros(...)``), not a method
   inherited from a base class outside the project (``self.register_buffer``, ``super().__init__``),
   not a call on an attribute built from a class outside the project (``self.proj =
   nn.Linear(...)`` then ``self.proj(x)``), and not constructing a class.

What the walker records no descriptor for is not counted: a method called on an unannotated
local or parameter (``x.view(...)``, ``out.append(t)``, ``req.finish()``) -- most of those are
tensors and containers; such a call on an object the code gives no type is a documented miss.

**The seam.** :func:`unresolved_calls` is the one place that decides, from today's
:class:`graphlint.static.index.Index`. A call graph that knows its own unresolved sites (the
points-to graph's ``CallGraph.unresolved``) replaces it in :func:`graphlint.static.link.link`
(one line: ``find_unresolved=graph.unresolved``) by taking the same ``hot`` argument and
returning the same :class:`UnresolvedCall` records -- with ``where`` filled if it knows the
position, and keeping the known externals above out.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Iterable, Mapping

from graphlint.static.facts import CallSite, Descriptor, FunctionInfo, ModuleInfo
from graphlint.static.index import ClassRef, Index
from graphlint.static.passed import captured_arguments

FuncId = tuple[str, str]

#: methods of builtin containers and strings: ``self.pending.append(r)``, ``self.cache_meta.items()``,
#: ``req.prefix.startswith(s)``; not the generic verbs of ``str`` (``decode``, ``split``, ``format``...):
#: they would hide ``self.model.decode(x)``
GENERIC_VERBS = frozenset("decode encode format format_map translate replace split rsplit splitlines join partition "
                          "rpartition find rfind".split())
CONTAINER_METHODS = frozenset(n for t in (list, dict, set, tuple, str) for n in dir(t)
                              if not n.startswith("_") and n not in GENERIC_VERBS)
#: methods of ``nn.Module`` besides ``forward`` (tests/static/test_decode_path.py checks each on torch)
MODULE_METHODS = frozenset("""
    add_module apply bfloat16 buffers children cpu cuda double eval extra_repr float get_buffer
    get_parameter get_submodule half load_state_dict modules named_buffers named_children
    named_modules named_parameters parameters register_buffer register_forward_hook
    register_forward_pre_hook register_module register_parameter requires_grad_ share_memory
    state_dict to to_empty train type zero_grad
""".split())
#: long-standing ``torch.Tensor`` methods (checked against the installed torch by the same test)
TENSOR_METHODS = frozenset("""
    abs add add_ addmm all amax amin any argmax argmin argsort bernoulli_ bmm bool byte ceil
    chunk clamp clamp_ clone contiguous copy_ cos count_nonzero cpu cuda cumsum data_ptr detach
    diag dim div div_ dtype element_size eq exp exp_ expand expand_as fill_ flatten flip float
    floor gather ge gt half index_add_ index_copy_ index_fill_ index_put_ index_select int isnan
    item le log log_softmax long lt masked_fill masked_fill_ masked_scatter_ matmul max mean min
    mm mul mul_ narrow ne neg new_empty new_full new_ones new_tensor new_zeros nonzero norm
    numel numpy permute pin_memory pow reciprocal record_stream relu repeat repeat_interleave
    reshape reshape_as round rsqrt scatter scatter_ scatter_add_ select sigmoid sign sin size
    softmax sort split sqrt square squeeze squeeze_ stride sub sub_ sum t tanh to tolist topk
    transpose type type_as unbind unflatten unsqueeze unsqueeze_ view view_as where zero_
""".split())
#: methods of ``torch.cuda.CUDAGraph``, ``Stream`` and ``Event`` (``self.graphs[bs].replay()``)
CUDA_OBJECT_METHODS = frozenset("""
    capture_begin capture_end elapsed_time pool query record replay reset synchronize wait_event wait_stream
""".split())
#: methods of a ``logging.Logger`` (``logger.info(...)`` on a logger a project module made; ``warning_once``
#: is what transformers' loggers add)
LOGGING_METHODS = frozenset("debug info warning warning_once error exception critical log".split())
KNOWN_METHODS = CONTAINER_METHODS | MODULE_METHODS | TENSOR_METHODS | CUDA_OBJECT_METHODS | LOGGING_METHODS
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class UnresolvedCall:
    """One unresolved call site: the hot function holding it and the call's descriptor (see
    :mod:`graphlint.static.facts`); :func:`spelling` says how it reads, the line is looked up only
    when a report prints it (:mod:`graphlint.static.decode_record`)."""

    function: FuncId
    call: Descriptor
    #: where the call is, when the call graph knows (a :class:`graphlint.static.facts.Site` position:
    #: statement path, anchor class, rank); empty: found by the callee's name when printed
    where: tuple = ()


def unresolved_calls(infos: list[ModuleInfo], index: Index,
                     hot: Mapping[FuncId, frozenset[int] | None]) -> list[UnresolvedCall]:
    """The seam (see the module docstring): the unresolved calls of ``hot`` functions, each
    ``None`` (the whole function is hot) or the ids of the loops whose calls are (a per-token
    loop's body), sorted by function."""
    by_path = {info.path: info for info in infos}
    judge = _Judge(infos, index)
    found: list[UnresolvedCall] = []
    for fid in sorted(hot):
        info = by_path.get(fid[0])
        fn = info.functions.get(fid[1]) if info is not None else None
        if fn is None or fn.device_code:
            continue
        loops = hot[fid]
        seen: set = set()
        for site in fn.calls:
            if loops is not None and not site.loops & loops:
                continue
            key = callee_name(site.target) or site.target  # ``node.is_root()`` typed two ways is one call
            if key in seen or not judge.unresolved(info, fn, site):
                continue
            seen.add(key)
            found.append(UnresolvedCall(fid, site.target))
    return found


def project_name(index: Index, info: ModuleInfo, dotted: str) -> bool:
    """Whether ``dotted`` (an import of ``info``) names something in an analysed module."""
    parts = index.absolute(info, dotted).split(".")
    return any(index.find_module(".".join(parts[:cut])) is not None for cut in range(len(parts) - 1, 0, -1))


class _Judge:
    """Decides, call site by call site, whether an empty target set is a blind spot or a known external."""

    def __init__(self, infos: list[ModuleInfo], index: Index):
        self.infos, self.index = infos, index
        self._derived: set[str] | None = None
        self._handed: set[FuncId] | None = None

    def unresolved(self, info: ModuleInfo, fn: FunctionInfo, site: CallSite) -> bool:
        desc, index = site.target, self.index
        kind = desc[0]
        if kind == "ref" or index.targets(info, fn.cls, desc):
            return False  # a callable passed on is called elsewhere; a call with a target is seen
        if kind == "name":
            name = desc[1]
            if name in fn.captured_params:  # ``fn(x)`` in a capture: graph code if a caller hands one over
                return (info.path, fn.qualname) not in self.handed()
            return name not in _BUILTINS and name not in info.classes
        if kind == "dotted":  # a project module's global: ``logger.info`` from ``from .log import logger``
            return (project_name(index, info, desc[1]) and index.resolve(info, desc[1]) is None
                    and desc[1].rsplit(".", 1)[-1] not in KNOWN_METHODS)
        if kind == "member":
            return self.member(info, fn, desc)
        if kind == "getattr":
            return True  # ``getattr(self, name)(x)`` with no sub-module to pick from
        return False  # ``super().m()`` without a target: inherited from a base outside the project

    def handed(self) -> set[FuncId]:
        """Capturing functions some caller hands a callable to (see :mod:`.passed`)."""
        if self._handed is None:
            self._handed = {origin for _, _, origin, _, _ in captured_arguments(self.infos, self.index)}
        return self._handed

    def member(self, info: ModuleInfo, fn: FunctionInfo, desc: Descriptor) -> bool:
        (root, attrs), method = desc[1], desc[2]
        if method in KNOWN_METHODS:  # a method of a container, a tensor or a module (not an attribute called)
            return False
        index = self.index
        if root == "self":
            if fn.cls not in info.classes:
                return True  # ``self`` outside a class: nothing to follow
            types: list[ClassRef] = [(info, fn.cls)]
        else:
            start = index.class_ref(info, root, fn.cls)
            if start is None:  # ``model: nn.Module`` is some project model; ``tok: Tokenizer`` is not
                return not self.external(info, root)
            types = [start]
        walk = list(attrs) if method is not None else list(attrs[:-1])
        for attr in walk:
            kinds = self.holds(types, attr)
            if "tensor" in kinds or (kinds and kinds <= {"external"}):
                return False  # a tensor, or a module built from a class outside the project
            types = [sub for t in types for sub in index.submodule_types(t, attr)]
            if not types:
                return True  # nothing says what the attribute holds
        if method is None:
            if not attrs:
                return False  # calling a typed object: its ``forward`` is inherited from outside
            kinds = self.holds(types, attrs[-1])  # ``self.proj(x)``: calling the attribute itself
            return not ("tensor" in kinds or (kinds and kinds <= {"external"}))
        kinds = self.holds(types, method)  # ``self.wqkv(x)`` is recorded as a method call too
        if kinds:
            return not ("tensor" in kinds or kinds <= {"external"})
        if any(f"{name}:{method}" in owner.attr_writes for t in types for owner, name in index.mro(t)):
            return True  # ``self.model_forward = model.forward`` then ``self.model_forward(**kw)``
        return not any(index.class_ref(owner, base) is None for t in types for owner, name in index.mro(t)
                       for base in owner.classes[name].bases)  # else inherited from a base outside

    def holds(self, types: Iterable[ClassRef], attr: str) -> set[str]:
        """What the classes say ``attr`` holds: "tensor", "external" (built from a class outside the
        project), "project" (a class or callable of the project); empty when nothing says."""
        kinds: set[str] = set()
        for t in types:
            for owner, name in self.index.mro(t):
                cls = owner.classes[name]
                if attr in cls.tensor_attrs or attr in cls.weight_attrs:
                    kinds.add("tensor")
                for d in (*cls.submodules.get(attr, ()), *cls.made.get(attr, ())):
                    kinds.add("external" if self.external(owner, d) else "project")
                for d in cls.callables.get(attr, ()):  # ``self.norm = flashinfer.rmsnorm`` is external
                    kinds.add("external" if d[0] == "dotted" and not project_name(self.index, owner, d[1])
                              else "project")
        return kinds

    def external(self, info: ModuleInfo, desc: Descriptor) -> bool:
        """A class from outside the analysed modules that no analysed class derives from
        (``nn.Linear``, a tokenizer). An object typed ``nn.Module`` may be any project model."""
        if desc[0] != "dotted" or project_name(self.index, info, desc[1]):
            return False
        return self.index.absolute(info, desc[1]) not in self.derived()

    def derived(self) -> set[str]:
        """The classes outside the project that analysed classes derive from (``torch.nn.Module``)."""
        if self._derived is None:
            self._derived = {self.index.absolute(info, base[1]) for info in self.infos for cls in info.classes.values()
                             for base in cls.bases if base[0] == "dotted" and self.index.class_ref(info, base) is None}
        return self._derived


def callee_name(desc: Descriptor) -> str | None:
    """The last name of the callee as written: ``m`` of ``self.a.m()``, ``f`` of ``pkg.f()``."""
    kind = desc[0]
    if kind == "member":
        (root, attrs), method = desc[1], desc[2]
        return method or (attrs[-1] if attrs else None)
    if kind in ("name", "local", "dotted"):
        return str(desc[1]).rsplit(".", 1)[-1]
    if kind == "super":
        return desc[1]
    return None


def spelling(call: Descriptor) -> str:
    """How a call reads, from its descriptor: ``self.model.generate``, ``runner``, ``getattr(self, ...)``."""
    kind = call[0]
    if kind == "member":
        (root, attrs), method = call[1], call[2]
        head = "self" if root == "self" else (f"<{str(root[1]).rsplit('.', 1)[-1]} object>"
                                              if root[0] in ("name", "dotted") else "<object>")
        if root != "self" and root[0] == "returns":
            head = f"<result of {spelling(root[1])}>"
        return ".".join((head, *attrs, *((method,) if method else ())))
    if kind == "getattr":
        return f"getattr(self, {call[1]!r}...)" if call[1] else "getattr(self, name)"
    if kind == "super":
        return f"super().{call[1]}"
    return str(call[1]).lstrip(".")
