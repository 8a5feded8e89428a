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
points-to graph's ``CallGraph.unresolved``) replaces it by returning the same
:class:`UnresolvedCall` records for the same ``hot`` argument.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Iterable, Mapping

from graphlint.static.facts import CallSite, Descriptor, FunctionInfo, ModuleInfo
from graphlint.static.index import ClassRef, Index
from graphlint.static.passed import captured_arguments

FuncId = tuple[str, str]

#: methods of builtin containers: ``self.pending.append(r)``, ``self.cache_meta.items()``. (Not
#: ``str``/``bytes``: their ``decode``/``split`` would hide ``self.model.decode(x)``.)
CONTAINER_METHODS = frozenset(n for t in (list, dict, set, tuple) for n in dir(t) if not n.startswith("_"))
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
    abs add add_ addmm all amax amin any argmax argmin argsort bernoulli_ bmm bool byte cat ceil
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
KNOWN_METHODS = CONTAINER_METHODS | MODULE_METHODS | TENSOR_METHODS
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class UnresolvedCall:
    """One unresolved call site: the hot function holding it and the call's descriptor (see
    :mod:`graphlint.static.facts`); :func:`spelling` says how it reads, the line is looked up only
    when a report prints it (:mod:`graphlint.static.decode_record`)."""

    function: FuncId
    call: Descriptor


def unresolved_calls(infos: list[ModuleInfo], index: Index,
                     hot: Mapping[FuncId, frozenset[int] | None]) -> list[UnresolvedCall]:
    """The seam (see the module docstring): the unresolved calls of ``hot`` functions, each
    ``None`` (the whole function is hot) or the ids of the loops whose calls are (a per-token
    loop's body), sorted by function."""
    by_path = {info.path: info for info in infos}
    found: list[UnresolvedCall] = []
    for fid in sorted(hot):
        info = by_path.get(fid[0])
        fn = info.functions.get(fid[1]) if info is not None else None
        if fn is None or fn.device_code:
            continue
        loops = hot[fid]
        seen: set[Descriptor] = set()
        for site in fn.calls:
            if loops is not None and not site.loops & loops:
                continue
            if site.target in seen or not _unresolved(infos, info, fn, site, index):
                continue
            seen.add(site.target)
            found.append(UnresolvedCall(fid, site.target))
    return found


def _unresolved(infos: list[ModuleInfo], info: ModuleInfo, fn: FunctionInfo, site: CallSite, index: Index) -> bool:
    desc = site.target
    kind = desc[0]
    if kind == "ref" or index.targets(info, fn.cls, desc):
        return False  # a callable passed on is called elsewhere; a call with a target is seen
    if kind == "name":
        name = desc[1]
        if name in fn.captured_params:  # ``fn(x)`` in a capture: graph code if a caller hands one over
            return not _handed_over(infos, index, info, fn)
        return name not in _BUILTINS and name not in info.classes
    if kind == "dotted":
        return project_name(index, info, desc[1]) and index.resolve(info, desc[1]) is None
    if kind == "member":
        return _member_unresolved(info, fn, desc, index)
    if kind == "getattr":
        return True  # ``getattr(self, name)(x)`` with no sub-module to pick from
    return False  # ``super().m()`` without a target: inherited from a base outside the project


def _handed_over(infos: list[ModuleInfo], index: Index, info: ModuleInfo, fn: FunctionInfo) -> bool:
    """Whether some caller hands a callable to this capturing function's parameters (see :mod:`.passed`)."""
    fid = (info.path, fn.qualname)
    return any(origin == fid for _, _, origin, _, _ in captured_arguments(infos, index))


def project_name(index: Index, info: ModuleInfo, dotted: str) -> bool:
    """Whether ``dotted`` (an import of ``info``) names something in an analysed module."""
    parts = index.absolute(info, dotted).split(".")
    return any(index.find_module(".".join(parts[:cut])) is not None for cut in range(len(parts) - 1, 0, -1))


def _member_unresolved(info: ModuleInfo, fn: FunctionInfo, desc: Descriptor, index: Index) -> bool:
    (root, attrs), method = desc[1], desc[2]
    if method in KNOWN_METHODS:  # a method of a container, a tensor or a module (not an attribute called)
        return False
    if root == "self":
        if fn.cls not in info.classes:
            return True  # ``self`` outside a class: nothing to follow
        types: list[ClassRef] = [(info, fn.cls)]
    else:
        start = index.class_ref(info, root, fn.cls)
        if start is None:  # ``model: nn.Module`` / ``model: SomeUnresolvedName``: the object is not seen
            return not _external_class(index, info, root)
        types = [start]
    walk = list(attrs) if method is not None else list(attrs[:-1])
    last = None if method is not None else (attrs[-1] if attrs else None)
    for attr in walk:
        kinds = _attr_kinds(index, types, attr)
        if "tensor" in kinds or (kinds and kinds <= {"external"}):
            return False  # a tensor, or a module built from a class outside the project
        nxt = [sub for t in types for sub in index.submodule_types(t, attr)]
        if not nxt:
            return True  # nothing says what the attribute holds
        types = nxt
    if last is not None:  # ``self.proj(x)``: calling the attribute itself
        kinds = _attr_kinds(index, types, last)
        return not ("tensor" in kinds or (kinds and kinds <= {"external"}))
    if method is None:
        return False  # calling a typed object: its ``forward`` is inherited from outside
    if any(_written(index, t, method) for t in types):
        return True  # ``self.model_forward = model.forward`` then ``self.model_forward(**kw)``
    return not any(_external_base(index, t) for t in types)


def _attr_kinds(index: Index, types: Iterable[ClassRef], attr: str) -> set[str]:
    """What the classes say ``attr`` holds: "tensor", "external" (built from a class outside the
    project), "project" (a class or callable of the project); empty when nothing says."""
    kinds: set[str] = set()
    for t in types:
        for owner, name in index.mro(t):
            cls = owner.classes[name]
            if attr in cls.tensor_attrs or attr in cls.weight_attrs:
                kinds.add("tensor")
            for d in (*cls.submodules.get(attr, ()), *cls.made.get(attr, ())):
                kinds.add("external" if _external_class(index, owner, d) else "project")
            if attr in cls.callables:
                kinds.add("project")
    return kinds


def _external_class(index: Index, info: ModuleInfo, desc: Descriptor) -> bool:
    """A class descriptor naming something outside the analysed modules (``nn.Linear``)."""
    return desc[0] == "dotted" and not project_name(index, info, desc[1])


def _external_base(index: Index, ref: ClassRef) -> bool:
    """Whether the class, or a base of it, derives from a class outside the project (``nn.Module``):
    a method found nowhere in the project may be inherited from there."""
    return any(index.class_ref(owner, base) is None for owner, name in index.mro(ref)
               for base in owner.classes[name].bases)


def _written(index: Index, ref: ClassRef, attr: str) -> bool:
    """``self.<attr> = value`` somewhere in the class or its bases: a callable kept on the instance."""
    return any(f"{name}:{attr}" in owner.attr_writes for owner, name in index.mro(ref))


def spelling(call: Descriptor) -> str:
    """How a call reads, from its descriptor: ``self.model.generate``, ``runner``, ``getattr(self, ...)``."""
    kind = call[0]
    if kind == "member":
        (root, attrs), method = call[1], call[2]
        head = "self" if root == "self" else f"<{root[1]}>" if root[0] in ("name", "dotted") else "<object>"
        return ".".join((head, *attrs, *((method,) if method else ())))
    if kind == "getattr":
        return f"getattr(self, {call[1]!r}...)" if call[1] else "getattr(self, name)"
    if kind == "super":
        return f"super().{call[1]}"
    return str(call[1]).lstrip(".")
