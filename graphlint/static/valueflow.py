"""What values are, carried along resolved calls: returns to callers, arguments to parameters.

Every summary says what each function returns and what each call site passes (:mod:`.valuekinds`). After every file
is summarized, this resolves the call sites whose callee is named plainly -- ``helper(...)`` (a function of the file,
an import, a star import), ``ops.helper(...)`` (an imported module), ``self.helper(...)`` (the class and its bases)
-- and finds, per file, the facts its walk did not have:

- ``ret:<callee key>=<shape>``: what a called function returns, for a caller in another file, or above the callee in
  its own (a helper defined first is known on the first walk already), that binds the result to names or calls a
  method on it (``a, b = f(x)``, ``f(x).to(dev)``: walking a file again costs as much as the first walk, and a result
  only passed on, ``return f(x)``, rarely decides a finding). A fact from the file itself (a helper defined below its
  caller) rides along when the file is walked again for another fact, and never sends it round alone: on torch's own
  files that alone cost a sixth of the first walk, for no finding. A method that subclasses override returns what
  every override agrees on.
- ``param:<qualname>:<name>=<kind>``: a 0-dim device tensor, a pageable host tensor, a Python list (an index that
  copies, GL208) or Python numbers -- an int, a size read from a shape, a tuple of them (``(batch_size, seq_len)``,
  ``x.shape``: sizes are not tensors, so ``if input_shape[-1] > 1:`` reads nothing back) -- that every caller passes
  to a parameter, whatever its annotation says (``n: int`` given ``t.max()`` is still read back); a plain tensor is
  left to the oracle's own presumptions (on torch's own files that fact alone sent large files round again, for no
  finding), except for a parameter the function reduces whole (``x_lens.max()``, ``FunctionInfo.reduced_names``): a
  device tensor there makes the 0-dim value a size or a test reads back; or tests (``if counts[row] == 0:``, not presumed
  a tensor already). Unknown wins: one caller passing something unknown, a ``*args`` call, a call the resolution cannot
  follow anywhere under the function's name (``obj.helper(...)``, a callback), or a parameter left at its default.
  Numbers for a parameter annotated a tensor, and a tensor for one annotated a list, overrule the annotation: those
  take every call spelled with the function's name and no use of it as a value (:mod:`.overrules`).

Those files are summarized again with the facts (the second round of :mod:`.crossfile`, cached by them too). One
round: a fact learned in the second round does not travel further.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fnmatch import fnmatchcase

from graphlint.static.facts import SHARED_EMPTY, CallSite, FileSummary, FunctionInfo, ModuleInfo
from graphlint.static.index import Index
from graphlint.static.instancecalls import InstanceCalls, instance_calls
from graphlint.static.libflows import PARTIAL, library_partial
from graphlint.static.fieldclasses import FieldClasses
from graphlint.static.flowir import last_name
from graphlint.static.forwardedreturns import forwarded_returns
from graphlint.static.fieldkinds import field_facts
from graphlint.static.overrules import overruling_facts
from graphlint.static.paramkinds import ParamKinds, resolve_function, returns_of
from graphlint.static.receivers import Receivers
from graphlint.static.stepchains import step_chains
from graphlint.static.params import POSITION_NAMES
from graphlint.static.kindfacts import encode
from graphlint.static.valuekinds import (HOST, LIST, MASK, NUMBER, SCALAR, STEADY, STEP, TENSOR, UNKNOWN, WEIGHT, informative,
                                         join_dispatch, says_host)

Target = tuple[ModuleInfo, str]
#: what a parameter fact may say (see the module docstring)
PARAM_KINDS = (SCALAR, HOST, LIST, NUMBER)
#: rounds of the cross-file pass for value facts: what a helper returns can depend on what its callers pass it
#: (``commit(..., kept)`` returns ``kept + 1``, a 0-dim tensor once ``kept`` is known one), and that on another's return
ROUNDS = 3

#: what only this planning reads of a function (which names its value facts would matter for):
#: nothing links on them, so the check lets them go before the link (:func:`release_planning_facts`)
PLANNING_ONLY = ("bound_calls", "passed_back", "handed_defs", "index_names", "step_uses", "sized_uses", "test_names",
                 "cast_names", "reduced_names", "read_names", "type_tested", "presumed_tensors", "annotated_tensors",
                 "annotated_lists", "annotated_ints")


def release_planning_facts(summaries) -> None:
    """Once the cross-file pass is done: :data:`PLANNING_ONLY` emptied in every summary, so the
    link's own structures reuse their memory (on all of torch, 30 MB of non-empty sets); and the
    imported spellings a file annotates with, which only the planning of alias facts reads."""
    for summary in summaries:
        if isinstance(summary.data, ModuleInfo):
            summary.data.annotated_imports = SHARED_EMPTY[set]
            for fn in summary.data.functions.values():
                for name in PLANNING_ONLY:
                    setattr(fn, name, SHARED_EMPTY[set])


def value_facts_of(summaries: list[FileSummary], index: Index | None = None) -> dict[str, frozenset[str]]:
    """``index``: the :class:`Index` of these same summaries, when the caller has one."""
    infos = [s.data for s in summaries if isinstance(s.data, ModuleInfo)]
    return value_facts(infos, index or Index(infos))


def value_facts(infos: list[ModuleInfo], index: Index) -> dict[str, frozenset[str]]:
    """{path: facts}, only for files that gain some."""
    out: dict[str, set[str]] = defaultdict(set)
    later: dict[str, set[str]] = defaultdict(set)  # same-file forward references: ride along only
    callers: dict[tuple[str, str], list[tuple]] = defaultdict(list)  # target -> (site, caller's info, caller)
    #: target -> the same, for calls of a local or a parameter (:func:`_called_value`): they feed
    #: the may-facts alone (a call the resolution misses elsewhere cannot veto one of those)
    may_callers: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    by_instance: dict[tuple[str, str], list[tuple]] = defaultdict(list)  # ``self.f(...)``: a module's forward
    instances = InstanceCalls(index)
    fields = FieldClasses(index)
    receivers = Receivers(index, fields)
    by_name = Counter()  # a callee's last name -> call sites anywhere spelled with it (resolved or not)
    followed = Counter()  # a callee's last name -> those of its call sites resolved (to any function)
    #: a callee's last name -> its sites passing something known, flat (:attr:`.paramkinds.ParamKinds.spelled`)
    spelled: dict[str, list] = defaultdict(list)
    opaque: set[str] = set()  # last names some call site of passes nothing known (or hands on as a value)
    index.forwarded = {}  # before any return is read: ``return helper(...)`` gives what the helper does
    forwarded_returns(infos, lambda info, fn, expr: _dispatched(
        _targets(info, fn, expr, index, fields, receivers), index), index.forwarded)
    for info in infos:
        order = {q: i for i, q in enumerate(info.functions)}
        for fn in info.functions.values():
            for site in fn.calls:
                last = last_name(site.expr)
                if last is None:
                    continue
                if site.reference and _rewrapped(info, fn, site.expr):
                    continue  # ``self.step = torch.compile(self.step)``: called under its own name still
                if site.reference and site.expr[0] == "n" and site.expr[1] not in fn.handed_defs \
                        and f"{fn.qualname}.{site.expr[1]}" in info.functions:
                    continue  # a nested def only called by its name (``rows(p)``): those calls are its sites
                by_name.update(names := instances.call_names(info, fn, site.expr, last))  # (:mod:`.instancecalls`)
                if site.reference or site.kinds is None:
                    opaque.add(last)  # :mod:`.overrules`: a call under the name passing nothing known
                else:
                    spelled[last] += (site, info, fn)
                if site.reference:
                    continue  # passed as a value: called elsewhere with who knows what
                key = _key(fn, site.expr)
                if site.kinds is None and key not in fn.bound_calls and key not in fn.passed_back:
                    continue  # passes nothing known (its callee's parameters learn nothing: the count
                    # of sites under the name then differs) and leaves the result alone
                hits = _targets(info, fn, site.expr, index, fields, receivers)
                if not hits and site.kinds is not None and (called := instance_calls(info, fn, site.expr, fields, index, instances)):
                    followed.update(names)  # counted only where every instance is called so (:mod:`.instancecalls`)
                    for target in called:
                        by_instance[target].append((site, info, fn))
                    continue
                if not hits and _library_field(info, fn, site.expr, fields):
                    followed[last] += 1  # ``self.attn.plan(...)`` of a library object: no project function's call
                    continue
                if not hits:
                    if site.kinds is not None and site.expr[0] == "n":
                        for hit, shift in _called_value(info, fn, site.expr[1], index, fields):
                            may_callers[(hit[0].path, hit[1])].append((_shifted(site, shift), info, fn))
                    continue
                followed[last] += 1
                for hit in hits:
                    target = (hit[0].path, hit[1])
                    callers[target].append((site, info, fn))
                if key is None or key not in fn.bound_calls and key not in fn.passed_back \
                        or (len(hits) == 1 and _seen_first(info, fn, hits[0], order)
                            and not hits[0][0].functions[hits[0][1]].forwards):
                    continue
                shape = _dispatched(hits, index)
                if informative(shape) and (key in fn.bound_calls or says_host(shape)):
                    # a field's method is never known on the first walk, even from this file
                    rides = all(h[0] is info for h in hits) and key.count(".") < 2
                    (later if rides else out)[info.path].add(f"ret:{key}={encode(shape)}")
    infos_by_path = {info.path: info for info in infos}
    reached = {t: callers.get(t, []) + may_callers.get(t, []) + by_instance.get(t, [])
               for t in callers.keys() | may_callers.keys() | by_instance.keys()}
    for (path, qualname), names in step_chains(infos_by_path, reached, _stepped, fields).items():  # (:mod:`.stepchains`)
        if names:  # ``out[path]`` itself sends the file round again
            out[path].update(f"param:{qualname}:{name}={STEP}" for name in names)
    for (path, qualname) in callers.keys() | may_callers.keys():
        sites = callers.get((path, qualname), []) + may_callers.get((path, qualname), [])
        fn = infos_by_path[path].functions[qualname]
        for name in _weighted(infos_by_path[path], fn, sites):
            out[path].add(f"param:{qualname}:{name}={WEIGHT}")
    kept = fields.kept_as()
    agreed = ParamKinds(infos_by_path, callers, by_name, followed, index, kept=kept,
                        instances=(instances, by_instance))
    for path, facts in field_facts(infos, index, fields, agreed, receivers).items():
        out[path] |= facts
    for (path, qualname) in [*callers, *(t for t in by_instance if t not in callers)]:
        fn = infos_by_path[path].functions[qualname]
        for name, kind in agreed.of((path, qualname)).items():
            if kind == NUMBER and (path, qualname) in by_instance and any(fnmatchcase(name, p) for p in POSITION_NAMES):
                continue  # a length a module is handed (``seq_len``): a shape sum grows every step, "number" hides it
            # a list matters as an index only, numbers only in a truth test of a parameter presumed a tensor or defaulting
            # to a literal (``pad=True`` then ``if pad is None: pad = torch.any(...)``: :func:`.branchwalk.given_none_test`;
            # elsewhere the fact would send files round again for nothing: on all of torch, 134 more)
            if kind in PARAM_KINDS and (kind != LIST or name in fn.index_names) \
                    and (kind != NUMBER or name in fn.test_names and (
                        name in fn.presumed_tensors or _literal_default(fn, name))):
                out[path].add(f"param:{qualname}:{name}={kind}")
            elif kind in (TENSOR, MASK) and name in fn.reduced_names or kind == TENSOR and name in fn.test_names \
                    and name not in fn.presumed_tensors:  # ``lens.max()``: a 0-dim device tensor; ``if counts[r]:``
                out[path].add(f"param:{qualname}:{name}={kind}")
            elif kind in (TENSOR, MASK, WEIGHT) and name in fn.type_tested:  # a buffer is a tensor too
                out[path].add(f"param:{qualname}:{name}={TENSOR}")  # ``torch.is_tensor(p)`` (:mod:`.typetests`)
        for name in agreed.steady((path, qualname)) if (path, qualname) not in by_instance else ():  # as above
            if any(fnmatchcase(name, p) for p in POSITION_NAMES):  # only a position's fact changes anything
                out[path].add(f"param:{qualname}:{name}={STEADY}")
    spelled_alike = ParamKinds(infos_by_path, callers, by_name, followed, index, (spelled, opaque), kept)
    for path, facts in overruling_facts(infos, agreed, spelled_alike).items():
        out[path] |= facts
    return {path: frozenset(facts | later.get(path, set())) for path, facts in out.items()}


def _literal_default(fn: FunctionInfo, name: str) -> bool:
    """Whether ``name`` defaults to a literal (``None``, ``True``, a number): an optional input."""
    default = fn.defaults.get(name)
    return default is not None and default[0] == "c"


def _stepped(info: ModuleInfo, fn: FunctionInfo, sites: list[tuple]) -> set[str]:
    """Parameters SOME caller passes a per-step int (:data:`.valuekinds.STEP`), among those the
    function slices, indexes or passes on (``FunctionInfo.step_uses``).

    A may-fact, unlike the others: one per-token loop that passes its advancing counter makes the
    callee's slice a new shape every token whenever that loop runs, whatever other callers pass
    (a prefill call that leaves the parameter at its default runs too, once). Whether the slice is
    a hazard is the hot-code question the linker answers (graph code: a new graph per length;
    eager code: nothing to record), not this one."""
    captured = [site for site in sites if getattr(site[0], "in_capture", False)]  # a factory sized by it: frozen (:mod:`.frozenargs`)
    return _some_pass(info, fn, sites, STEP, fn.step_uses) | _some_pass(info, fn, captured, STEP, fn.sized_uses)


def _weighted(info: ModuleInfo, fn: FunctionInfo, sites: list[tuple]) -> set[str]:
    """Parameters SOME caller hands a parameter or buffer of its module (:data:`.valuekinds.WEIGHT`),
    among those the function casts (``FunctionInfo.cast_names``): a may-fact, as :func:`_stepped`'s
    -- whenever that caller runs, the cast converts the weight again; whether that is every step is
    the hot-code question. A constructor's call converts once: it is left out (:mod:`.weightargs`)."""
    return _some_pass(info, fn, sites, WEIGHT, fn.cast_names, skip="__init__")


def _some_pass(info: ModuleInfo, fn: FunctionInfo, sites: list[tuple], wanted: str, among: set[str],
               skip: str = "") -> set[str]:
    """The parameters in ``among`` some call in ``sites`` (not one made by a function named ``skip``)
    passes an argument of kind ``wanted``."""
    flow = info.flows.get(fn.qualname)
    if flow is None or not among:
        return set()
    params = list(flow.params)
    if fn.cls and flow.fkind in ("m", "c") and params:
        params = params[1:]
    out: set[str] = set()
    for site, _, caller in sites:
        if site.kinds is None or len(site.kinds[0]) > len(params) or caller.name == skip:
            continue
        passed = [*zip(params, site.kinds[0]), *site.kinds[1]]
        out.update(name for name, kind in passed if kind == wanted and name in among)
    return out


def _key(fn: FunctionInfo, expr: tuple) -> str | None:
    """The walker's spelling of the callee (``names.callee_key``)."""
    if expr[0] == "n":
        return expr[1]
    if expr[0] == "a" and expr[1][0] == "n":
        if expr[1][1] == "self":
            return f"{fn.cls}|self.{expr[2]}" if fn.cls else None
        return f"{expr[1][1]}.{expr[2]}"
    if expr[0] == "a" and expr[1][0] == "a" and expr[1][1] == ("n", "self") and fn.cls:
        return f"{fn.cls}|self.{expr[1][2]}.{expr[2]}"
    return None


def _targets(info: ModuleInfo, fn: FunctionInfo, expr: tuple, index: Index, fields: FieldClasses,
             receivers: Receivers) -> list[Target]:
    """Every function the call may run: one, or for ``self.field.m(...)`` the ``m`` of each class
    the field holds (:mod:`.fieldclasses`; for an annotated field, every override too), for
    ``self.run(...)`` with no method ``run`` the module functions every store of the field keeps; else, for
    ``obj.m(...)``, the ``m`` of every class :mod:`.receivers` finds ``obj`` may be (a field of a
    field, a module global, a local alias: ``cache = self.backend.cache; cache.insert(k)``)."""
    if expr[0] == "a" and expr[1][0] == "a" and expr[1][1] == ("n", "self") and fn.cls:
        found: dict[tuple[str, str], Target] = {}
        for ref, cone in fields.of(info, fn.cls, expr[1][2]):
            hits = [index.find_method(ref, expr[2]), *(index.overrides(ref, expr[2]) if cone else ())]
            found.update(((h[0].path, h[1]), h) for h in hits if h is not None)
        if found:
            return [found[k] for k in sorted(found)]
        return _received(info, fn, expr, index, receivers)
    if expr[0] == "a" and expr[1][0] == "s" and expr[1][1][0] == "a" and expr[1][1][1] == ("n", "self") and fn.cls:
        found = {}  # ``self.layers[j].forward(...)``: the method of each class the list holds
        for ref, _ in fields.elements_of(info, fn.cls, expr[1][1][2]):
            hit = index.find_method(ref, expr[2])
            if hit is not None:
                found[(hit[0].path, hit[1])] = hit
        return [found[k] for k in sorted(found)]
    hit = resolve_function(info, fn, expr, index)
    if hit is None and expr[0] == "a" and expr[1] != ("n", "self"):
        return _received(info, fn, expr, index, receivers)
    if hit is None and expr[0] == "a" and fn.cls:  # ``self.run(...)``, ``self.run = kernel_fwd``
        return fields.functions_of(info, fn.cls, expr[2])
    return [hit] if hit is not None else []


def _library_field(info: ModuleInfo, fn: FunctionInfo, expr: tuple, fields: FieldClasses) -> bool:
    return expr[0] == "a" and expr[1][0] == "a" and expr[1][1] == ("n", "self") and bool(fn.cls) \
        and fields.library_only(info, fn.cls, expr[1][2])


def _received(info: ModuleInfo, fn: FunctionInfo, expr: tuple, index: Index, receivers: Receivers) -> list[Target]:
    """``obj.m(...)`` with every class ``obj`` may be known: each one's ``m`` and its overrides (an
    annotated object may be a subclass); nothing when one of them has no ``m`` (a library base's)."""
    classes = receivers.values(info, fn.qualname, expr[1], 0, 0)
    if not classes:
        return []
    found: dict[tuple[str, str], Target] = {}
    for ref in classes.values():
        hit = index.find_method(ref, expr[2])
        if hit is None:
            return []
        found.update(((h[0].path, h[1]), h) for h in (hit, *index.overrides(ref, expr[2])))
    return [found[k] for k in sorted(found)]


#: library wrappers whose result calls the function they are given first, with the same arguments
#: (``step = torch.compile(pick)``); ``functools.partial`` binds leading positionals besides
WRAPPERS = frozenset(("torch.compile", "torch.cuda.make_graphed_callables", "torch.jit.script", "functools.wraps"))


def _called_value(info: ModuleInfo, fn: FunctionInfo, name: str, index: Index, fields: FieldClasses,
                  depth: int = 0) -> list[tuple[Target, int]]:
    """[(function, positionals bound before the call's own)] a call of the local or parameter
    ``name`` runs, from what the caller's flow binds to it: ``model: Net`` (``Net.forward`` or
    ``__call__``, and every override), another function, ``torch.compile(f)``, ``partial(f, a)``.

    The decode step is usually a function handed the model (``def step(model: Net, ...)``) and
    called through what compiled or bound it; without these the per-step int the loop passes it
    stops there (:func:`_stepped`). Used for may-facts only."""
    flow = info.flows.get(fn.qualname)
    if flow is None or depth > 2:
        return []
    found: dict[tuple[str, str], tuple[Target, int]] = {}
    for stmt in flow.stmts:
        if stmt[0] != "=" or stmt[1] != ("n", name):
            continue
        for value in (stmt[2][1] if stmt[2][0] == "o" else (stmt[2],)):
            for hit, shift in _value_targets(info, fn, value, index, fields, depth):
                found.setdefault((hit[0].path, hit[1]), (hit, shift))
    return [found[k] for k in sorted(found)]


def _value_targets(info: ModuleInfo, fn: FunctionInfo, value: tuple, index: Index, fields: FieldClasses,
                   depth: int) -> list[tuple[Target, int]]:
    if value[0] == "t":  # an annotated instance: calling it runs its forward
        ref = fields.class_of(info, value[1])
        hit = index.call_forward(ref) if ref is not None else None
        if hit is None:
            return []
        return [(h, 0) for h in (hit, *index.overrides(ref, hit[1].rsplit(".", 1)[-1]))]
    if value[0] == "n":
        hit = resolve_function(info, fn, value, index)
        if hit is not None:
            return [(hit, 0)]
        return _called_value(info, fn, value[1], index, fields, depth + 1) if value[1] != fn.name else []
    if value[0] == "c" and value[2]:
        wrapper = _dotted(info, value[1])
        if library_partial(wrapper) and not wrapper.startswith(".") and index.find_module(wrapper.rsplit(".", 1)[0]) is None:
            wrapper = PARTIAL  # ``funcy.partial``: the standard one re-exported
        if wrapper in WRAPPERS or wrapper == PARTIAL:
            shift = len(value[2]) - 1 if wrapper == PARTIAL else 0
            return [(h, s + shift) for h, s in _value_targets(info, fn, value[2][0], index, fields, depth + 1)]
    return []


def _rewrapped(info: ModuleInfo, fn: FunctionInfo, expr: tuple) -> bool:
    """Whether ``fn`` stores ``expr`` back into itself wrapped by a library wrapper that calls it
    with the same arguments (``self.generate_next = torch.compile(self.generate_next, mode=...)``):
    the reference runs only through calls spelled with its own name, which are counted."""
    flow = info.flows.get(fn.qualname)
    return flow is not None and any(
        stmt[0] == "=" and stmt[1] == expr and stmt[2][0] == "c" and stmt[2][2][:1] == (expr,)
        and _dotted(info, stmt[2][1]) in WRAPPERS for stmt in flow.stmts)


def _dotted(info: ModuleInfo, expr: tuple) -> str:
    """``("a", ("n", "torch"), "compile")`` -> "torch.compile", through the file's imports."""
    parts = []
    while expr[0] == "a":
        parts.append(expr[2])
        expr = expr[1]
    if expr[0] != "n":
        return ""
    root = info.imports.get(expr[1], expr[1])
    return ".".join((root, *reversed(parts)))


class _Shifted:
    """A call site seen through ``partial(f, a, ...)``: ``f``'s leading parameters are bound."""

    __slots__ = ("kinds",)

    def __init__(self, kinds: tuple):
        self.kinds = kinds


def _shifted(site: CallSite, shift: int):
    if not shift or site.kinds is None:
        return site
    return _Shifted(((UNKNOWN,) * shift + site.kinds[0], site.kinds[1]))


def _dispatched(hits: list[Target], index: Index):
    """What a call that may run any of ``hits`` gives: what they return, joined as dispatch
    (:func:`.valuekinds.join_dispatch`: one target's device tensor is what the caller gets when
    that one runs)."""
    shape = None
    for hit in hits:
        shape = join_dispatch(shape, returns_of(hit, index))
    return shape


def _seen_first(info: ModuleInfo, caller: FunctionInfo, hit: Target, order: dict[str, int]) -> bool:
    """The first walk already knew it (:func:`.valuekinds.learn_returns`): a module function, or a
    method of the caller's own class, of this file, walked before the caller."""
    module, qualname = hit
    if module is not info or order.get(qualname, 1 << 30) >= order.get(caller.qualname, 0):
        return False
    callee = info.functions[qualname]
    return (not callee.cls and "." not in qualname) or callee.cls == caller.cls
