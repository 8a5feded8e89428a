"""A call whose keywords a function cannot take never runs that function.

The points-to gives a call every function its callee may hold: ``decode_layer.self_attn(h, cache,
wrapper=w, bsz_tensors=n)`` on a layer whose attention a load-time rule swaps reaches the original
attention's ``forward(hidden_states, attention_mask=None, ...)`` as well as the replacement's. Python
raises ``TypeError: got an unexpected keyword argument 'wrapper'`` before the original's body runs,
so that target is one no execution takes, and what the original calls (its mask handling, its
padding path) is not on the decode path through that call. The edge is dropped when *every*
spelling of the call passes a keyword the function has no parameter for (and the function takes no
``**kwargs``) or leaves one of its parameters without a default unfilled (``model(input_ids=ids,
use_cache=True)`` into a multimodal ``forward(pixel_values, input_ids=None, ...)``: ``TypeError:
missing a required argument``), with no ``*``/``**`` splat that could fill it.

Only edges where the call's own arguments bind to the function: ``obj.m(...)`` / ``m(...)`` into a
function named ``m``, and a module or callable object called into its ``forward`` / ``__call__``.
A class's ``__init__`` and ``__post_init__``, a decorator's wrapper, a property's getter, callbacks
(``reference``) and calls whose arguments were not recorded keep every edge; so does a call site
that also reaches a closure (a decorated function: its wrapper may consume keywords).
"""

from __future__ import annotations

from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.index import Index

FuncId = tuple[str, str]
INSTANCE_CALLS = ("forward", "__call__")


def drop_unbindable(raw: dict[FuncId, list[tuple[FuncId, CallSite]]], infos: list[ModuleInfo],
                    index: Index) -> int:
    """Removes from ``raw`` the edges whose call passes keywords the callee cannot take; the number removed."""
    by_path = {info.path: info for info in infos}
    own_call = _own_call(infos, index)
    removed = 0
    for caller, edges in raw.items():
        by_site: dict[int, list[FuncId]] = {}
        for callee, site in edges:
            by_site.setdefault(id(site), []).append(callee)
        closures: dict[int, bool] = {}  # per site: asked once, not once per callee (sites with hundreds)
        keep = [(callee, site) for callee, site in edges
                if callee in own_call or not _unbindable(callee, site, by_site[id(site)], by_path, closures)]
        if len(keep) != len(edges):
            removed += len(edges) - len(keep)
            raw[caller] = keep
    return removed


def _unbindable(callee: FuncId, site: CallSite, others: list[FuncId], by_path: dict[str, ModuleInfo],
                closures: dict[int, bool] | None = None) -> bool:
    if site.reference or not site.args:
        return False
    flow = _flow(callee, by_path)
    if flow is None or flow.kwarg or flow.fkind == "p":
        return False
    name = callee[1].rpartition(".")[2]
    called = _called_name(site.expr)
    if name != called and not (name in INSTANCE_CALLS and called not in INSTANCE_CALLS):
        return False
    closure = closures.get(id(site)) if closures is not None else None
    if closure is None:
        closure = any(_is_closure(other, by_path) for other in others)
        if closures is not None:
            closures[id(site)] = closure
    if closure:
        return False
    fn = by_path[callee[0]].functions.get(callee[1])
    return all(not takes_keywords(flow, spelling) or leaves_out(flow, fn, spelling) for spelling in site.args)


def takes_keywords(flow, spelling: tuple) -> bool:
    """Whether the function has a parameter for every keyword the spelling passes (or ``**kwargs``)."""
    accepted = set(flow.params) | set(flow.kwonly)
    return bool(flow.kwarg) or all(key in accepted for key, _ in spelling[1])


def fills_twice(flow, spelling: tuple) -> bool:
    """Whether a spelling passes a keyword for a parameter its positions already fill (``TypeError:
    got multiple values for argument``): ``m(h, q, mask, layer_past=p)`` into ``forward(self, h,
    mask, layer_past=None)``. A ``*`` splat fills positions nobody can count: never."""
    positional, keywords, star = spelling[0], spelling[1], spelling[2]
    if star is not False or (positional[:1] == (("self",),)):
        return False
    filled = set(flow.call_params()[:len(positional)])
    return any(key in filled for key, _ in keywords)


def leaves_out(flow, fn, spelling: tuple) -> bool:
    """Whether a spelling leaves a parameter without a default unfilled (``TypeError: missing a
    required argument``): no ``*``/``**`` splat in the call, and the function has no ``*args``
    to make its positions optional. The receiver (``self``/``cls``) is bound by the call."""
    positional, keywords, star, double = spelling
    if fn is None or star is not False or double is not False or flow.fkind == "s":
        return False  # a static method (an autograd ``Function.forward``) gets ``ctx`` from ``apply``
    params = flow.call_params()
    if positional[:1] == (("self",),):  # ``Base.forward(self, x)``: the receiver passed by hand
        return False
    given = {key for key, _ in keywords}
    return any(name not in given and name not in fn.defaults
               for name in (*params[len(positional):], *flow.kwonly))


def _own_call(infos: list[ModuleInfo], index: Index) -> set[FuncId]:
    """The ``forward`` of every class that also has a project ``__call__`` (its own or a base's):
    calling an instance runs that ``__call__``, which may take keywords ``forward`` does not."""
    found = set()
    for info in infos:
        for name, klass in info.classes.items():
            if "forward" in klass.methods and any("__call__" in i.classes[n].methods for i, n in index.mro((info, name))):
                found.add((info.path, f"{name}.forward"))
    return found


def _flow(fid: FuncId, by_path: dict[str, ModuleInfo]):
    info = by_path.get(fid[0])
    return info.flows.get(fid[1]) if info is not None else None


def _called_name(expr) -> str | None:
    """``m`` of ``obj.m(...)`` / ``m(...)``."""
    if isinstance(expr, tuple) and expr:
        if expr[0] == "a" and len(expr) == 3:
            return expr[2]
        if expr[0] == "n" and len(expr) == 2:
            return expr[1]
    return None


def _is_closure(fid: FuncId, by_path: dict[str, ModuleInfo]) -> bool:
    """A function defined inside another function (a decorator's wrapper)."""
    flow = _flow(fid, by_path)
    return flow is not None and bool(flow.parent)
