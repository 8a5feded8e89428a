"""Modules a load-time rule may swap for a subclass: their own code is at most a warning.

Engines that inject optimised operators build a Hugging Face-style model, then walk its children
and replace some by an instance of a class named in a rule file (``cls = getattr(import_module(m),
name)``; ``cls(key=..., config=..., orig_module=child)``; ``setattr(parent, name, new)``). The
call graph sees the classes the model's constructors name -- the original MoE block, attention,
rotary -- and reported their code as captured or per-token code at full severity, although the
shipped rules replace them: whether an original runs depends on data the analysis does not read.

The evidence used here is the code's own: a call of a class the call graph cannot resolve (a
computed class) passing at least ``MIN_KEYWORDS`` keywords, and project classes no analysed code
constructs by name whose ``__init__`` accepts every one of those keywords -- the replacements the
computed call may build. A replacement that subclasses a module and overrides its ``forward``
marks that module's ``forward`` as *replaceable*; so does one that wraps the module rather than
subclass it (``KLlamaModel(BaseInjectedModule)`` for ``LlamaModel``, holding it as ``orig_module``)
when its name ends with the module's name and its ``forward`` takes every parameter of the module's
(a drop-in replacement, named after what it replaces); so does a call of the module that hands
its ``**kwargs`` at least two keywords a replacement's ``forward`` names (the caller is written for
the replacement: :func:`written_for_replacement`). Code reached in a context only through
replaceable forwards keeps its findings, as warnings (:class:`.contexts.Placement`): it runs
only under the rules that leave the original in place.
"""

from __future__ import annotations

from graphlint.static.contexts import bfs
from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.index import Index

FuncId = tuple[str, str]
MIN_KEYWORDS = 3  # a computed class called with fewer keywords says too little about its class
MIN_SWALLOWED = 2  # keywords a call hands a ``**kwargs`` and a replacement's forward names


def computed_keywords(unresolved: dict[FuncId, list[CallSite]]) -> list[frozenset[str]]:
    """The keyword sets of the calls that look like project calls and resolve to nothing
    (:attr:`.callgraph.CallGraph.unresolved`): a computed class among them."""
    found = []
    for sites in unresolved.values():
        for site in sites:
            if site.reference or site.args is None:
                continue
            names = frozenset(k for spelling in site.args for k, _ in spelling[1])
            if len(names) >= MIN_KEYWORDS:
                found.append(names)
    return found


def replaceable_forwards(infos: list[ModuleInfo], index: Index, made: set[tuple[str, str]],
                         keywords: list[frozenset[str]]) -> set[FuncId]:
    """``forward`` of every project module the analysed code builds that a never-built subclass
    overrides, when that subclass's ``__init__`` takes every keyword of some computed-class call."""
    if not keywords:
        return set()
    out: set[FuncId] = set()
    built = _built_forwards(infos, made)
    for info in infos:
        for name, klass in info.classes.items():
            if "forward" not in klass.methods or (info.path, name) in made:
                continue
            if not _accepts_any(index, info, name, keywords):
                continue
            out.update(_wrapped(info, name, built))
            # every base the model builds whose forward the subclass overrides (not a mixin of the
            # replacements themselves: nothing builds that one on its own)
            out.update((base_info.path, f"{base}.forward") for base_info, base in index.mro((info, name))[1:]
                       if "forward" in base_info.classes[base].methods and (base_info.path, base) in made)
    return out


def _built_forwards(infos: list[ModuleInfo], made: set[tuple[str, str]]) -> dict[str, list[tuple[ModuleInfo, str]]]:
    """Class name -> the project modules of that name the analysed code builds, with a ``forward``."""
    found: dict[str, list[tuple[ModuleInfo, str]]] = {}
    for info in infos:
        for name, klass in info.classes.items():
            if "forward" in klass.methods and (info.path, name) in made:
                found.setdefault(name.rpartition(".")[2], []).append((info, name))
    return found


def _wrapped(info: ModuleInfo, name: str, built: dict) -> list[FuncId]:
    """The built modules a never-built replacement wraps without subclassing them: named after
    them (``KLlamaModel`` -> ``LlamaModel``), its ``forward`` taking every parameter of theirs."""
    short = name.rpartition(".")[2]
    mine = info.flows.get(f"{name}.forward")
    if mine is None:
        return []
    params = set(mine.params) | set(mine.kwonly)
    out = []
    for cut in range(1, len(short)):
        suffix = short[cut:]
        if not suffix[0].isupper() or sum(c.isupper() for c in suffix) < 2:
            continue  # a whole CamelCase name of two words at least (``LlamaModel``, not ``Model``)
        for other, other_name in built.get(suffix, ()):
            theirs = other.flows.get(f"{other_name}.forward")
            wanted = set(theirs.params) | set(theirs.kwonly) if theirs is not None else set()
            if len(wanted - {"self"}) > 1 and wanted <= params:
                out.append((other.path, f"{other_name}.forward"))
    return out


def _accepts_any(index: Index, info: ModuleInfo, name: str, keywords: list[frozenset[str]]) -> bool:
    init = index.find_method((info, name), "__init__")
    if init is None:
        return False
    flow = init[0].flows.get(init[1])
    if flow is None:
        return False
    params = set(flow.params) | set(flow.kwonly)
    return any(names <= params for names in keywords)


def only_through(roots: list[tuple[FuncId, tuple]], calls: dict[FuncId, list[tuple[FuncId, CallSite]]],
                 chains: dict[FuncId, tuple], replaceable: set[FuncId]) -> set[FuncId]:
    """The functions of a context (``chains``) its roots reach only through a replaceable forward."""
    if not replaceable or not chains:
        return set()
    sure = bfs([r for r in roots if r[0] not in replaceable], calls, replaceable)
    return {f for f in chains if f not in sure}


def written_for_replacement(raw: dict[FuncId, list[tuple[FuncId, CallSite]]], infos: list[ModuleInfo], index: Index,
                            made: set[tuple[str, str]], keywords: list[frozenset[str]]) -> set[FuncId]:
    """``forward`` of a module called with keywords it takes only into its ``**kwargs`` (ignored)
    that a never-built replacement's ``forward`` names, at least ``MIN_SWALLOWED`` of them: the
    call is written for the replacement a load-time rule puts in that slot (ktransformers'
    ``decode_layer.self_attn(h, cache, wrapper=..., page_idx=...)`` into the original attention,
    whose ``forward(hidden_states, attention_mask=None, ..., **kwargs)`` would take the cache
    for a mask)."""
    if not keywords:
        return set()
    wanted = []  # the parameters of each replacement's forward
    for info in infos:
        for name, klass in info.classes.items():
            flow = info.flows.get(f"{name}.forward")
            if flow is not None and (info.path, name) not in made and _accepts_any(index, info, name, keywords):
                wanted.append(set(flow.params) | set(flow.kwonly))
    if not wanted:
        return set()
    by_path = {info.path: info for info in infos}
    out: set[FuncId] = set()
    for edges in raw.values():
        for callee, site in edges:
            if site.reference or not site.args or not callee[1].endswith(".forward") or callee in out:
                continue
            info = by_path.get(callee[0])
            flow = info.flows.get(callee[1]) if info is not None else None
            if flow is None or not flow.kwarg:
                continue
            named = set(flow.params) | set(flow.kwonly)
            for spelling in site.args:
                swallowed = {k for k, _ in spelling[1]} - named
                if len(swallowed) >= MIN_SWALLOWED and any(swallowed <= params for params in wanted):
                    out.add(callee)
                    break
    return out
