"""Unresolved calls: the calls on the decode path that look like the project's own and that the
call graph cannot follow -- where graphlint stops seeing the engine.

**Definition.** A call site inside a hot function (a function of the decode path; for a per-token
loop's function, a call inside that loop) is *unresolved* when

1. it looks like a call of project code (``CallSite.plain``, decided by the walker): a call
   through ``self``/``cls``, a local, a parameter or an attribute chain on them
   (``self.model_forward(**kw)``, ``self.model.generate(x)``, ``runner(x)``), ``getattr(self,
   name)(x)``, a relative import -- not a builtin, not an absolute import (``torch.*``, the
   standard library), not a method of a tensor, a builtin container, ``nn.Module``, a CUDA graph,
   stream or event, or a logger (:data:`KNOWN_METHODS`); and
2. the points-to call graph gives its callee no value that runs a function
   (:attr:`graphlint.static.callgraph.CallGraph.unresolved`); and
3. its callee is not rooted at an import no analysed module provides.

**Kinds.** Each is classified by what its callee's value set is rooted at
(:mod:`.unresolvedkinds`): ``library`` (an import outside the checked paths), ``callback`` (a
parameter no caller in the checked paths binds), ``optional`` (an optional import, a custom op, a
compiled extension) or ``not-followed`` (graphlint's own gap). The kinds change what the reports
say, never the count, the call graph or a finding.

**The seam.** :func:`graphlint.static.decode_path.decode_path` takes ``find_unresolved(hot)``;
:func:`graphlint.static.link.link` passes :func:`from_call_graph` over the points-to graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphlint.static.flowir import render
from graphlint.static.unresolvedkinds import GAP, Provenance

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
    is_contiguous item le log log_softmax long lt masked_fill masked_fill_ masked_scatter_ matmul max mean min
    mm mul mul_ narrow ne neg new_empty new_full new_ones new_tensor new_zeros nonzero norm
    numel numpy permute pin_memory pow reciprocal record_stream relu repeat repeat_interleave
    reshape reshape_as round rsqrt scatter scatter_ scatter_add_ select sigmoid sign sin size
    softmax sort split sqrt square squeeze squeeze_ stride sub sub_ sum t tanh tensor_split to tolist topk
    transpose type type_as unbind unflatten unsqueeze unsqueeze_ view view_as where zero_
""".split())
#: methods of ``torch.cuda.CUDAGraph``, ``Stream`` and ``Event`` (``self.graphs[bs].replay()``)
CUDA_OBJECT_METHODS = frozenset("""
    capture_begin capture_end elapsed_time pool query record replay reset synchronize wait_event wait_stream
""".split())
#: methods of a ``logging.Logger`` (``logger.info(...)``; ``warning_once`` is what transformers' loggers add)
LOGGING_METHODS = frozenset("debug info warning warning_once error exception critical log".split())
#: methods of queues, events, locks, deques, files, paths and regex matches (``self.queue.put(r)``)
IO_METHODS = frozenset("""
    put get_nowait put_nowait qsize empty full wait is_set set acquire release popleft appendleft
    read write close flush exists mkdir open sub match group
""".split())
#: a method call by one of these names is never taken for a project call (see ``calls.looks_like_project_call``)
KNOWN_METHODS = (CONTAINER_METHODS | MODULE_METHODS | TENSOR_METHODS | CUDA_OBJECT_METHODS | LOGGING_METHODS
                 | IO_METHODS)


@dataclass(frozen=True)
class UnresolvedCall:
    """One unresolved call site: the hot function holding it and its callee in :mod:`.flowir` form;
    :func:`spelling` says how it reads, the line is looked up only when a report prints it
    (:mod:`graphlint.static.decode_record`)."""

    function: FuncId
    call: tuple
    #: where the call is, when known (a :class:`graphlint.static.facts.Site` position: statement
    #: path, anchor class, rank); empty: found by the callee's name when printed
    where: tuple = ()
    #: why it is unresolved (:mod:`.unresolvedkinds`): ``library``, ``callback``, ``optional`` or
    #: ``not-followed`` (graphlint's own gap)
    kind: str = GAP
    #: for a call resolved by class (:mod:`.openreceivers`): the methods it was given
    targets: tuple = ()


def from_call_graph(graph, hot, raw=None) -> list[UnresolvedCall]:
    """The seam: the unresolved calls of ``hot`` (function -> None, or the ids of its hot loops)
    from a :class:`graphlint.static.callgraph.CallGraph`, each with its kind; ``raw`` (caller ->
    [(callee, site)]) gives the callers whose arguments bind a parameter."""
    found = graph.unresolved_in(hot)
    why = Provenance(graph, raw) if found else None
    return [UnresolvedCall(fid, site.expr, kind=why.kind(fid, site)) for fid, site in found]


def callee_name(ir: tuple) -> str | None:
    """The last name of the callee as written: ``m`` of ``self.a.m()``, ``f`` of ``pkg.f()``;
    None for ``getattr(...)`` and calls of call results."""
    while ir[0] == "s":  # ``self.layers[i](x)``
        ir = ir[1]
    if ir[0] == "a":
        return ir[2]
    if ir[0] in ("n", "i"):
        return str(ir[1]).rsplit(".", 1)[-1]
    return None


def spelling(ir: tuple) -> str:
    """How a call reads: ``self.model.generate``, ``runner``, ``getattr(self, ...)``."""
    return render(ir).lstrip(".")
