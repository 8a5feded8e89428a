"""What every call passes a parameter (:class:`ParamKinds`), for the value rounds (:mod:`.valueflow`).

A parameter fact is an agreement of all the calls the resolution follows; this module holds that
agreement and the plain resolution of a named callee it needs (what ``f#1`` an argument came from
returns), apart from the round's collection of call sites.
"""

from __future__ import annotations

from collections import Counter

from graphlint.static.carried import CARRY
from graphlint.static.facts import FunctionInfo, ModuleInfo
from graphlint.static.index import Index
from graphlint.static.forwarders import FORWARDED
from graphlint.static.valuekinds import HOST, MASK, STEP, TENSOR, UNKNOWN, join_dispatch

Target = tuple[ModuleInfo, str]
#: kinds a slice of the value keeps (``key[n:]`` of a host tensor is one)
SLICE_KEEPS = (TENSOR, HOST, MASK)


class ParamKinds:
    """Parameter -> the kind every call passes it, per function (:func:`_agreed`). An argument that
    passes the caller's own parameter on (``^name``: ``compute_layer(i, j)`` calling
    ``self.layers[j].forward(h, i)``) is what every call of the caller passes that parameter: a
    loop's ``range`` int reaches the layer's ``forward`` two calls down. A cycle of such calls
    passes nothing known, except a function's call of itself handing a parameter on to the same
    parameter (``walk(node, key[n:])`` in ``walk``): it adds no value of its own, so the other calls
    decide (a slice, ``^key[``, only where they agree on a tensor, which a slice keeps on its
    device)."""

    def __init__(self, infos_by_path: dict, callers: dict, by_name: Counter, followed: Counter, index: Index,
                 spelled: tuple[dict[str, list], set[str]] | None = None, kept: dict | None = None,
                 instances: tuple | None = None):
        self.infos_by_path, self.callers, self.index = infos_by_path, callers, index
        #: (:class:`.instancecalls.InstanceCalls`, target -> its ``self.f(...)`` call sites): a forward's calls
        self.instances = instances
        self.by_name, self.followed = by_name, followed
        #: (path, function) -> the fields it is kept in, the names it is called by besides its own
        #: (:meth:`.fieldclasses.FieldClasses.kept_as`)
        self.kept = kept or {}
        #: (last name -> every call site spelled so that passes something known, flat: ``[site, its
        #: module's info, its function, site, ...]``, the names some call passes nothing known): given,
        #: a function's calls are every call spelled with its name, resolved or not (:mod:`.overrules`).
        #: Flat because it holds every call site of the project (a 3-tuple each was 48 bytes a site more)
        self.spelled = spelled
        self.memo: dict[tuple[str, str], dict[str, str]] = {}

    def of(self, target: tuple[str, str]) -> dict[str, str]:
        found = self.memo.get(target)
        if found is not None:
            return found
        self.memo[target] = {}  # while it is computed: a cycle passes nothing known
        followed = self._followed(target)
        if followed is None:
            return {}
        sites, params, flow = followed
        alike = self._alike(target, params, flow.kwonly) if self.spelled is not None else None
        self.memo[target] = found = _agreed(params, flow.kwonly, sites, self.index, self.passed, target, alike)
        return found

    def _alike(self, target: tuple[str, str], params: list[str], kwonly: tuple[str, ...]):
        """Callers that hand a parameter on as their own call of themselves would: a function of
        the same name and parameters (``Llama.gather(self, ids)`` calling ``self.cache.gather(ids=ids)``),
        whose every call is one of the sites spelled alike, so it adds no value of its own."""
        name = target[1].rsplit(".", 1)[-1]

        def alike(info: ModuleInfo, fn: FunctionInfo) -> bool:
            flow = info.flows.get(fn.qualname)
            return fn.name == name and flow is not None and list(flow.call_params()) == params \
                and flow.kwonly == kwonly and called_by_name(fn.name, flow.fkind)
        return alike

    def _followed(self, target: tuple[str, str], seen: frozenset = frozenset()):
        """(its call sites, its parameters after the receiver, its flow); None where a call under its
        name is one the resolution cannot follow: unknown wins (a call resolved to another function
        of the same name, a twin class's own method, is no call of this one)."""
        fn = self.infos_by_path[target[0]].functions[target[1]]
        flow = self.infos_by_path[target[0]].flows.get(target[1])
        aliases = self.kept.get(target, ())
        if self.spelled is not None:
            if flow is None or fn.name in self.spelled[1] or not called_by_name(fn.name, flow.fkind) or aliases:
                return None
            flat = self.spelled[0].get(fn.name)
            sites = list(zip(flat[0::3], flat[1::3], flat[2::3])) if flat else None
        else:
            sites = self.callers.get(target)
            called = self.instances[0].names(target) if self.instances and fn.name in ("forward", "__call__") else None
            if called:  # every call is one of an instance kept in a field (:mod:`.instancecalls`)
                sites = [*(sites or ()), *self.instances[1].get(target, ())]
            if flow is not None and any(self.by_name[n] != self.followed[n] for n in (*(called or (fn.name,)), *aliases)):
                return None  # a call under its name, or the name of a field keeping it, not followed
        if not sites or flow is None:
            return None
        sites = self._forwarded(sites, seen | {target})
        if sites is None:
            return None
        params = list(flow.params)
        if fn.cls and flow.fkind in ("m", "c") and params:
            params = params[1:]
        return sites, params, flow

    def _forwarded(self, sites: list[tuple], seen: frozenset) -> list[tuple] | None:
        """``sites`` with each call that forwards its caller's own ``*args, **kwargs``
        (:data:`.forwarders.FORWARD`) replaced by the calls of that caller: a pure forwarder
        (``def generate_next(self, *args, **kwargs): return self.generate_one(*args, **kwargs)``)
        passes what its callers pass, position for position. None -- unknown wins -- where a
        forwarder's own calls are not all followed, or forwarders call each other round."""
        if not any(site.kinds is not None and site.kinds[0] == FORWARDED[0] for site, _, _ in sites):
            return sites
        out = []
        for site, info, fn in sites:
            if site.kinds is None or site.kinds[0] != FORWARDED[0]:
                out.append((site, info, fn))
                continue
            caller = (info.path, fn.qualname)
            if caller in seen or (followed := self._followed(caller, seen)) is None:
                return None
            out.extend(followed[0])
        return out

    def steady(self, target: tuple[str, str]) -> set[str]:
        """Parameters every call passes a value the same on every call of its caller
        (:mod:`.steadyargs`: the third element of ``CallSite.kinds``); the same agreement as
        :meth:`of` (every call under the name resolved), a recursion handing one on adds nothing."""
        followed = self._followed(target)
        if followed is None:
            return set()
        sites, params, _ = followed
        steady: set[str] | None = None
        for site, info, caller in sites:
            kinds = site.kinds
            if kinds is None or len(kinds) < 3 or len(kinds[0]) > len(params):
                return set()
            own = (info.path, caller.qualname) == target
            passed = {params[slot] if isinstance(slot, int) else slot for slot in kinds[2]}
            passed -= {name for name, kind in (*zip(params, kinds[0]), *kinds[1]) if kind == STEP or kind[:1] == "~"}
            if own:  # ``f(a, k)`` inside ``f``: what the other calls pass decides
                passed |= {name for name, kind in (*zip(params, kinds[0]), *kinds[1]) if kind.rstrip("!") == f"^{name}"}
            steady = passed if steady is None else steady & passed
        return steady or set()

    def passed(self, info: ModuleInfo, fn: FunctionInfo, name: str) -> str:
        """What every call of ``fn`` passes its parameter ``name``."""
        return self.of((info.path, fn.qualname)).get(name, UNKNOWN)


def called_by_name(name: str, fkind: str) -> bool:
    """Every call of it is spelled with its name: not ``forward``/``__call__`` (``model(x)``) nor
    another dunder (``a + b``, ``len(x)``), nor a property (``obj.size``)."""
    return not name.startswith("__") and name != "forward" and fkind != "p"


def _agreed(params: list[str], kwonly: tuple[str, ...], sites: list[tuple], index: Index,
            resolve_param=None, target: tuple[str, str] | None = None, alike=None) -> dict[str, str]:
    """Parameter -> the kind every call passes it (a missing argument: unknown)."""
    agreed: dict[str, str | None] = {}
    sliced: set[str] = set()  # parameters the function's own call hands on sliced
    for site, info, fn in sites:
        if site.kinds is None:
            return {}
        own = target is not None and (info.path, fn.qualname) == target or alike is not None and alike(info, fn)
        if len(site.kinds[0]) > len(params):
            return {}  # more arguments than parameters: not this function's call (``*args``)
        passed = dict(zip(params, site.kinds[0]))
        passed.update(site.kinds[1])
        for name in (*params, *kwonly):
            raw = passed.get(name, UNKNOWN)
            if own and raw.rstrip("!") in (f"^{name}", f"^{name}["):
                if raw[-1] == "[":
                    sliced.add(name)
                continue  # the recursion hands the parameter on: what the other calls pass
            kind = origin_kind(raw, info, fn, index, resolve_param)
            agreed[name] = kind if name not in agreed else (kind if agreed[name] == kind else UNKNOWN)
    return {name: kind for name, kind in agreed.items()
            if kind and (name not in sliced or kind in SLICE_KEEPS)}


def origin_kind(kind: str, info: ModuleInfo, fn: FunctionInfo, index: Index, resolve_param=None) -> str:
    """``@f#1`` (an argument bound from element 1 of what ``f`` returns, see
    :func:`.valuekinds.note_origin`) -> that element's kind; ``@`` -> unknown; ``^name`` (the
    caller's parameter passed on) -> what the caller's callers pass it (``resolve_param``); ``^name!``
    the same, a tensor where they decide nothing (its annotation says so)."""
    if kind.startswith("^"):
        annotated = TENSOR if kind[-1] == "!" else UNKNOWN  # what the caller's annotation says
        if resolve_param is None:
            return annotated
        found = resolve_param(info, fn, kind[1:].rstrip("[!")) or annotated
        return found if kind[-1] != "[" or found in SLICE_KEEPS else UNKNOWN
    if not kind.startswith("@"):
        return UNKNOWN if kind.startswith(CARRY) else kind
    key, _, element = kind[1:].rpartition("#")
    owner, _, attr = key.rpartition("self." if "|" in key else ".")
    expr = ("a", ("n", "self" if "|" in key else owner), attr) if owner else ("n", attr)
    if not attr or "." in owner.rstrip("|"):
        return UNKNOWN
    hit = resolve_function(info, fn, expr, index) if key else None
    shape = returns_of(hit, index) if hit is not None else None
    if not element:
        return shape if isinstance(shape, str) else UNKNOWN
    return shape[int(element)] if isinstance(shape, tuple) and int(element) < len(shape) else UNKNOWN


def resolve_function(info: ModuleInfo, fn: FunctionInfo, expr: tuple, index: Index) -> Target | None:
    if expr[0] == "n":
        name = expr[1]
        nested = f"{fn.qualname}.{name}"  # ``def _rows(p): ...`` inside the caller, called by its name
        if nested in info.functions and fn.qualname != "<module>":
            return (info, nested)
        if name in info.imports:
            return _function(index.resolve(info, info.imports[name]))
        if name in info.functions and not info.functions[name].cls:
            return (info, name)
        for dotted in index.star_imports(info):  # ``from .utils import *``
            module = index.find_module(dotted)
            if module is not None and name in module.functions and not module.functions[name].cls:
                return (module, name)
        return None
    if expr[0] != "a" or expr[1][0] != "n":
        return None
    owner, attr = expr[1][1], expr[2]
    if owner == "self" and fn.cls:
        return index.find_method((info, fn.cls), attr)
    if owner in info.imports:
        return _function(index.resolve(info, f"{info.imports[owner]}.{attr}"))
    return None


def _function(hit) -> Target | None:
    return (hit[1], hit[2]) if hit is not None and hit[0] == "function" else None


def returns_of(target: Target, index: Index):
    """What the function returns; for a method, joined with every override's."""
    info, qualname = target
    fn = info.functions[qualname]
    shape = fn.returns
    if fn.forwards and index.forwarded:  # ``return helper(...)``: what the helper returns (:mod:`.forwardedreturns`)
        shape = index.forwarded.get((info.path, qualname), shape)
    if fn.cls and shape is not None:
        for other, name in index.overrides((info, fn.cls), fn.name):
            shape = join_dispatch(shape, other.functions[name].returns)
    return shape
