"""Calls on a value that enters from outside the checked code: the package's own classes, by method and signature.

An API library's decode loop often calls a model it never builds: ``PIPELINE(model, tokenizer)``
stores ``self.model = model`` from an unannotated constructor parameter, its per-token ``generate``
calls ``self.model.forward(tokens, state)``, and the model is built by the user's script
(``RWKV(...)``), outside the checked paths. The points-to analysis gives that receiver no value at
all: its only root is a parameter no caller in the checked paths binds (:mod:`.unresolvedkinds`'
``callback``). What the user passes there is, in an API library, one of the package's own classes.

**Class-hierarchy fallback** (the classic CHA answer for an open receiver): for such a call on the
decode path, ``<receiver>.m(...)`` -- or ``<field>(...)``, a call of the object, ``forward`` /
``__call__`` -- the candidates are the public top-level classes of the checked paths that define
``m`` themselves, as an instance method (no static method, no interface stub), whose signature takes
*every* spelling of the call (positional count, keyword names, required parameters filled). The
receiver must be rooted at unbound parameters only (a value that also comes from code graphlint
sees is the points-to analysis' to carry), and ``m`` must be no method of a builtin type (``encode``
of a ``str``). Generic names on a big engine match many classes; more than :data:`MAX_CLASSES`
candidates resolve nothing (the call stays unresolved, as before), so a serving engine's
``self.model(x)`` does not pull in every ``nn.Module``.

The edges are added to the raw call graph before the decode path is discovered again; each call
resolved this way is listed by ``graphlint entries`` ("resolved by class") instead of among the
unresolved calls. Findings reached through it keep their context's severity: the candidates are
the package's own classes whose method the call can bind, and a package whose loop calls a model
it does not build documents that its classes are what the user passes (a plugin point whose
implementations live elsewhere matches none, or too many).
"""

from __future__ import annotations

from graphlint.static.arity import INSTANCE_CALLS, fills_twice, leaves_out, takes_keywords
from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.modelroots import built_by_modules, roots
from graphlint.static.unresolved import KNOWN_METHODS
from graphlint.static.unresolvedkinds import CALLBACK, DEPTH, Provenance

FuncId = tuple[str, str]
#: more candidate classes than this: the name is too generic to say which runs; nothing is resolved
MAX_CLASSES = 3
#: methods of builtin values: a receiver the user passes may be one of those (``src.encode("utf-8")``)
BUILTIN_METHODS = frozenset(n for t in (str, bytes, list, dict, set, tuple, int, float, complex)
                            for n in dir(t) if not n.startswith("__"))


def resolve_open(graph, raw: dict[FuncId, list[tuple[FuncId, CallSite]]], infos: list[ModuleInfo],
                 hot: dict[FuncId, frozenset[int] | None]) -> list[tuple[FuncId, CallSite, tuple[FuncId, ...]]]:
    """Adds to ``raw`` the edges of the unresolved calls of ``hot`` whose receiver only an unbound
    parameter gives, to the classes that define the method; takes them out of ``graph.unresolved``.
    Returns (function, call site, targets) per call resolved."""
    found = graph.unresolved_in(hot)
    if not found:
        return []
    why = Provenance(graph, raw)
    methods = _methods(infos)
    built: list[set] = []  # the classes another module builds, computed once when first asked
    out = []
    for fid, site in found:
        picked = _targets(why, fid, site, methods, lambda: built or built.append(built_by_modules(raw, graph.index)) or built)
        if not picked:
            continue
        sites = [s for s in graph.unresolved.get(fid, ()) if s.expr == site.expr]
        for s in sites:
            raw.setdefault(fid, []).extend((target, s) for target in picked)
        graph.unresolved[fid] = [s for s in graph.unresolved.get(fid, ()) if s.expr != site.expr]
        out.append((fid, site, picked))
    graph.by_class = {(fid, site.expr): picked for fid, site, picked in out}  # what the loops' reasons say
    return out


def _targets(why: Provenance, fid: FuncId, site: CallSite, methods, built=None) -> tuple[FuncId, ...]:
    expr = site.expr
    if site.reference or not site.args or not (expr[0] == "a" or _loop_model(why, fid, expr)):
        return ()
    if why.kind(fid, site) != CALLBACK:
        return ()
    if expr[0] == "n":  # ``model(ids)``: the parameter's object is called
        receiver, names = expr, INSTANCE_CALLS
    elif expr[1][0] == "n" and _is_self_name(why, fid, expr[1][1]):  # ``self.model(x)``: the field's object is called
        receiver, names = expr, INSTANCE_CALLS
    elif expr[2] in BUILTIN_METHODS or expr[2] in KNOWN_METHODS or expr[2].startswith("__"):
        return ()
    else:
        receiver, names = expr[1], (expr[2],)
    if why.roots(fid[0], fid[1], receiver, DEPTH, set()) != {CALLBACK}:
        return ()
    picked = []
    for name in names:
        for path, qual, flow, fn in methods.get(name, ()):
            if all(_binds(flow, fn, spelling) for spelling in site.args):
                picked.append((path, qual))
        if picked:
            break  # ``forward`` found: ``__call__`` is nn.Module's
    if len(picked) > 1 and names is INSTANCE_CALLS and built is not None:
        picked = list(roots(tuple(picked), built()[0]) or picked)  # a model, not its parts (:mod:`.modelroots`)
    return tuple(picked) if len(picked) <= MAX_CLASSES else ()


def _loop_model(why: Provenance, fid: FuncId, expr: tuple) -> bool:
    """``model(ids)`` of a parameter that a per-token loop's shape says is its model: fed the ids it
    sampled the iteration before, annotated as a module (:func:`.sampledcarry.parameter_module`)."""
    fn = why.by_path[fid[0]].functions.get(fid[1])
    return expr[0] == "n" and fn is not None and any(expr in loop.sampled for loop in fn.loops)


def _is_self_name(why: Provenance, fid: FuncId, name: str) -> bool:
    flow = why.by_path[fid[0]].flows.get(fid[1])
    return flow is not None and bool(flow.cls) and flow.fkind == "m" and flow.params[:1] == (name,)


def _methods(infos: list[ModuleInfo]) -> dict[str, list]:
    """method name -> (path, qualname, flow, function) of each public top-level class's own
    instance methods (no static or class method, no property, no interface stub)."""
    out: dict[str, list] = {}
    for info in infos:
        for cname, klass in info.classes.items():
            if "." in cname or cname.startswith("_"):
                continue
            for meth in sorted(klass.methods):
                qual = f"{cname}.{meth}"
                flow, fn = info.flows.get(qual), info.functions.get(qual)
                if flow is None or fn is None or flow.fkind != "m" or fn.abstract:
                    continue
                out.setdefault(meth, []).append((info.path, qual, flow, fn))
    return out


def _binds(flow, fn, spelling: tuple) -> bool:
    """Whether one spelling of the call binds to the method (``self`` bound by the call): no more
    positions than it has, and :mod:`.arity`'s keyword and required-parameter tests."""
    if len(spelling[0]) > len(flow.params[1:]) and not flow.vararg:
        return False
    return takes_keywords(flow, spelling) and not fills_twice(flow, spelling) and not leaves_out(flow, fn, spelling)
