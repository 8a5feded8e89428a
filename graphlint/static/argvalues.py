"""Reachability that depends on values: the branches no hot caller's arguments, and no value the
project stores into a configuration field, can take.

The points-to call graph says which functions are hot; inside one every branch counted as
reachable. Most remaining false errors on real engines were branches no decode configuration
takes: ``if attention_mask is not None:`` where the decode loop passes no mask, ``if
config._attn_implementation == "flash_attention_2":`` in a project that never sets it. This
module decides such branches, cheaply and on the safe side, from the facts :mod:`.valuefacts`
records:

- **argument values along the hot call graph**: for every hot function, the set of literals its
  hot callers (hot in any context, plus per-token loops' own functions and capture sites) pass to
  each parameter, an omitted argument taking its default and a pass-through parameter its
  caller's set. Solved optimistically (as sparse conditional constant propagation): a call under
  a branch counts only once the values reaching its caller can take that branch. Unknown wins
  over everything: an entry's parameters, a splat of something unknown (what a function's own
  ``**kwargs`` / ``*args`` hand on is followed: :mod:`.splats`), a callback, a non-literal
  argument, a binding that does not fit the parameters, more than ``CAP`` values; a call's result
  is "some object" when it builds a class, is a tensor op, or every target the call graph gives it
  returns some object on every path (``pos = self.make_positions(x)`` then ``f(position_ids=pos)``);
  a function that captures a graph outside the hot code gets what every call of it passes;
- **configuration fields**: the values of ``config.x`` / ``self.x`` are every value stored into
  a field named ``x`` anywhere in the analysed code (``obj.x = v``, a class attribute or a
  dataclass default unless that class is built from ``**kwargs``, a constructor's keyword
  argument, ``self.x = param`` with what every caller -- hot or not -- passes for it); a field no
  analysed code stores is unknown (a library sets it), except through ``getattr(obj, "x", v)``.

A call site or candidate whose branch conditions evaluate to false for every value reaching it
is dead: the call graph loses the edge (what only it reached is no longer hot) and the candidate
is not reported. Conditions are only ever decided on ``is``/``==``/truthiness against literals,
ordered comparisons with one (``if top_k > 0:`` where every hot caller passes ``-1``) and
membership in a display of literals, ``not``, ``and``, ``or`` (:mod:`.valuefacts`), and only
from a complete set of values: one unknown or merely "some object" value leaves both outcomes;
a pair Python cannot order (``None > 0``) decides nothing; a test computed from tensor shapes is never
decided here (see ``shaped`` in :mod:`.link`: in captured code it is decided at capture time,
for shapes static analysis does not know).
"""

from __future__ import annotations

from graphlint.static.entryparams import outside_env
from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.guards import GIVEN
from graphlint.static.handback import HB, MARKS, ONLY_HANDED, HandBackFacts
from graphlint.static.iterations import later_args
from graphlint.static.literalops import NONZERO, OBJECT, OBJECTS, compare, equal, member
from graphlint.static.modenarrow import narrowing
from graphlint.static.modetests import MODE_KINDS, SELF, Modes, mode_truths, mode_value
from graphlint.static.returnedconsts import RETURNED, unpacked
from graphlint.static.selffields import SelfFields
from graphlint.static.splats import ABSENT, extra_keywords, keys, kw_part, lookup, spelled, with_default
from graphlint.static.valuekinds import NUMBER

FuncId = tuple[str, str]
CAP, BOTH = 8, frozenset((True, False))  # more distinct values than CAP: unknown
TOP = None  # an unknown set of values


class ArgValues:
    def __init__(self, infos: list[ModuleInfo], raw: dict[FuncId, list[tuple[FuncId, CallSite]]], index=None):
        self.raw = raw
        self.own = SelfFields(infos, index)  # ``self.x``: what objects of the reading class hold (:mod:`.selffields`)
        self.fns = {(i.path, q): (i.flows.get(q), fn) for i in infos for q, fn in i.functions.items()}
        self.object_returns: dict[tuple, bool] = {}  # (caller, callee IR) -> :meth:`returns_object`
        self.stores: dict[str, list[tuple[str, tuple | None]]] = {}
        for info in infos:
            for attr, values in info.field_stores.items():
                self.stores.setdefault(attr, []).extend((info.path, v) for v in values)
        splat = self.stores.get("**", [])
        self.splat_all = any(v is None for _, v in splat)
        self.splat = {v[1] for _, v in splat if v is not None}
        #: a ``setattr`` with a computed name somewhere: it may store anything into any field
        self.any_field = "*" in self.stores
        self.values: dict[FuncId, dict | None] = {}
        self._fields: dict[tuple, frozenset | None] = {}
        self._callers: dict[FuncId, list[tuple[FuncId, CallSite]]] | None = None
        self._all: dict[tuple[FuncId, str], frozenset | None] = {}
        self.dead_sites: set[tuple[FuncId, int]] = set()
        self.decided: set[tuple[FuncId, tuple]] = set()
        self._stamp: dict[FuncId, int] = {}  # how often a function's values changed in this solve
        self._dead: dict = {}  # fid -> (its stamp, {id(cond): (dead, cond)}): :meth:`dead`'s memo
        self.handed = HandBackFacts(self)  # states a per-token loop hands back (:mod:`.handback`)
        self.modes = Modes(infos)  # enums, dataclasses and the fields code stores (:mod:`.modetests`)

    # -- the solve ------------------------------------------------------------------------
    def solve(self, hot: set[FuncId], callers: set[FuncId], open_: set[FuncId],
              only_loops: dict[FuncId, frozenset[int]] | None = None) -> None:
        """Values of the parameters of ``hot`` functions from the calls of ``callers`` (and capture
        sites); ``open_`` functions are called from outside: every parameter unknown; of a caller in
        ``only_loops`` only the calls inside those loops count (a per-token loop's function)."""
        values: dict[FuncId, dict | None] = {f: {} for f in hot}
        for f in open_:  # unknown, but for an option every analysed call leaves at None (:mod:`.entryparams`)
            values[f] = outside_env(self, f)
        self.values, self._stamp, self._dead = values, {}, {}
        only_loops = only_loops or {}
        edges = [(caller, callee, site) for caller in sorted(callers | hot) for callee, site in self.raw.get(caller, ())
                 if callee in hot and callee in self.fns and (caller in callers or caller in hot or site.in_capture)
                 and (caller not in only_loops or site.loops & only_loops[caller] or site.in_capture)]
        edges += [(caller, callee, site) for caller, out in self.raw.items() if caller not in callers and caller not in hot
                  for callee, site in out if site.in_capture and callee in hot and callee in self.fns]
        edges += self._capturers(values, {caller for caller, _, _ in edges if caller not in values})
        # a per-token loop's own call: what it passes from the loop's second iteration on (what only its
        # first iteration passes runs once per decode, like ``if i == 0:``; :mod:`.iterations`)
        edges = [(caller, callee, site, later_args(site, only_loops.get(caller))) for caller, callee, site in edges]
        # an edge gives what it gave last time while its caller's values are unchanged (what it binds
        # and whether its branch is dead read only those, and facts fixed for the link): flowed again
        # only once they change (on torch most of the rounds' flows were such repeats)
        flowed, stamps = [-1] * len(edges), self._stamp
        for _ in range(50):
            changed = False
            for i, (caller, callee, site, args) in enumerate(edges):
                stamp = stamps.get(caller, 0)
                if flowed[i] == stamp or values.get(callee, {}) is TOP:
                    continue
                flowed[i] = stamp
                if self.dead(caller, site.cond):
                    continue
                changed |= self._flow(caller, callee, site, values, args)
            if not changed:
                break
        self.dead_sites = {(caller, id(site)) for caller in callers | hot for _, site in self.raw.get(caller, ())
                           if site.cond and self.dead(caller, site.cond)}
        self.decided = {(caller, c) for caller in callers | hot for _, site in self.raw.get(caller, ())
                        if (caller, id(site)) in self.dead_sites for c in site.cond[:1]}
        self._dead = {}  # the link's peak memory comes after the solve: its memo does not stay

    def _capturers(self, values: dict, owners: set[FuncId]) -> list:
        """A function that captures a graph but runs outside the hot code (the one-time capture
        call, ``capture(model, ..., **kwargs)``): its parameters get what every call of it passes
        (hot or not: it runs once), so what it hands on to the captured forward is known. Nothing
        calls it: unknown."""
        edges = [(caller, callee, site) for caller, out in self.raw.items() for callee, site in out
                 if callee in owners and callee in self.fns and caller != callee]
        for owner in owners:
            values[owner] = {} if any(callee == owner for _, callee, _ in edges) else TOP
            self._changed(owner)
        return edges

    def _flow(self, caller: FuncId, callee: FuncId, site: CallSite, values: dict, args: tuple | None) -> bool:
        evaluate = narrowing(self, caller, site, lambda v: self.value(v, caller, values.get(caller, TOP)))
        bound = self.bind(callee, site, evaluate, args)
        if bound is not TOP:
            bound = self.handed.checked(caller, site, bound, evaluate, args)
        if bound is TOP:
            values[callee] = TOP
            self._changed(callee)
            return True
        env, changed = values[callee], False
        for name, found in bound.items():
            old = env.get(name, frozenset())
            if old is TOP:
                continue
            new = TOP if found is TOP or len(old | found) > CAP else old | found
            if new != old:
                env[name], changed = new, True
        if changed:
            self._changed(callee)
        return changed

    def _changed(self, fid: FuncId) -> None:  # its values changed: :meth:`dead`'s answers are stale
        self._stamp[fid] = self._stamp.get(fid, 0) + 1

    def bind(self, callee: FuncId, site: CallSite, evaluate, args: tuple | None = None) -> dict | None:
        """Each parameter's values for one call site (the union over its spellings); TOP when the
        site's arguments are not known. A spelling that does not fit the parameters (an argument
        the function does not take, or a required one left out: the points-to's over-approximation
        of what a call may run, a call that would raise ``TypeError``) gives nothing."""
        flow, fn = self.fns[callee]
        args = site.args if args is None else args
        if flow is None or args is None or site.reference:
            return TOP
        params = flow.call_params()
        out: dict = {}
        for positional, keywords, star, double in args:
            ambiguous = flow.fkind == "m" and positional[:1] == (("self",),)  # ``Base.__init__(self, ...)``
            if (len(positional) > len(params) and not flow.vararg) or any(
                    k not in params and k not in flow.kwonly and not flow.kwarg for k, _ in keywords):
                continue  # a TypeError: the points-to's over-approximation, not a call that runs
            given = dict(keywords)
            if star is False and double is False and any(
                    name not in given and name not in fn.defaults
                    for name in (*params[len(positional):], *flow.kwonly)):
                continue  # a required argument left out: a TypeError too, not a call that runs
            for i, name in enumerate((*params, *flow.kwonly)):
                if i < len(params) and i < len(positional):
                    found = TOP if ambiguous else evaluate(positional[i])
                elif name in given:
                    found = evaluate(given[name])
                elif star is not False and i < len(params):  # ``f(x, *args)``: the caller's own positions
                    found = TOP if star is True else evaluate(("va", i - len(positional)))
                    if double is not False and found is not TOP and ABSENT in found:  # or its keywords
                        more = spelled(double, name, evaluate)
                        found = TOP if more is TOP else found | more
                    found = with_default(found, fn.defaults, name, evaluate)
                elif double is not False:  # ``f(x, **kwargs)``: the caller's own keywords
                    found = with_default(spelled(double, name, evaluate), fn.defaults, name, evaluate)
                elif name not in fn.defaults:
                    found = TOP
                else:
                    found = evaluate(fn.defaults[name])
                _join(out, name, found)
            if flow.kwarg:  # what lands in the callee's own ``**kwargs``
                for key, found in extra_keywords(double, keywords, {*params, *flow.kwonly}, evaluate).items():
                    _join(out, key, found)
            if flow.vararg:  # ... and in its ``*args``
                for j, v in enumerate(positional[len(params):]):
                    _join(out, ("*", j), evaluate(v))
                if star is not False:
                    _join(out, "*", TOP)
        return out

    # -- values and conditions --------------------------------------------------------------
    def value(self, v: tuple | None, fid: FuncId, env: dict | None) -> frozenset | None:
        if v is None:
            return TOP
        kind = v[0]
        if kind == "c":
            return frozenset((v[1],))
        if kind == "o":
            return OBJECTS
        if kind == "pf":  # a counter on its loop's later iterations (:func:`.iterations.past_first`)
            return frozenset((NONZERO,))
        if kind == "p":
            return TOP if env is TOP else env.get(v[1], frozenset())
        if kind == "l":  # a rebound name: every binding whose branch the values can take
            found: set = set()
            for value, cond in v[1]:
                if cond and env is not TOP and any(True not in self.truths(c, fid, env) for c in cond):
                    continue
                part = self.value(value, fid, env)
                if part is TOP:
                    return TOP
                found |= part
            return frozenset(found)
        if kind in ("r", RETURNED):  # a call's result; one position of it unpacked (:mod:`.returnedconsts`)
            return (OBJECTS if self.returns_object(fid, v[1]) else TOP) if kind == "r" else unpacked(self, v, fid)
        if kind == "hb":  # what the same call returned last time, checked where it binds (:mod:`.handback`)
            return frozenset((HB[v[1]],)) if v[1] < len(HB) else TOP
        if kind in ("kw", "va"):  # the caller's own ``**kwargs`` / ``*args`` (:mod:`.splats`)
            return lookup("**" if kind == "kw" else "*", v[1], env)
        if kind == "absent":  # a key a ``del`` removed, or a display does not hold (:mod:`.dictkeys`)
            return frozenset((ABSENT,))
        if kind == "kwkeys":
            return keys(env)
        if kind == "f":
            cls = self.fns[fid][1].cls if len(v) > 2 and fid in self.fns else ""
            return self.field(v[1], owner=(fid[0], cls)) if cls else self.field(v[1])
        if kind == "g":
            return self.field(v[1], (v[2],))
        if kind in MODE_KINDS:
            return mode_value(self, v, fid, env)
        if kind == "self":  # a method's receiver, where :mod:`.modetests` evaluates its test of ``self``
            return TOP if env is TOP else env.get(SELF, TOP)
        return TOP

    def returns_object(self, fid: FuncId, expr: tuple) -> bool:
        """Whether every function a call of ``fid`` spelled ``expr`` runs returns some object (a
        constructor, a function whose every ``return`` gives one): its result is not None."""
        key = (fid, expr)  # asked again for every binding and round: the call edges and functions are fixed
        known = self.object_returns.get(key)
        if known is None:
            targets = [callee for callee, site in self.raw.get(fid, ()) if site.expr == expr and not site.reference]
            known = self.object_returns[key] = bool(targets) and all(
                callee in self.fns and (self.fns[callee][1].returns_object or callee[1].endswith(".__init__"))
                for callee in targets)
        return known

    def returns_number(self, fid: FuncId, expr_text: str) -> bool:
        """Whether every function a call of ``fid`` (its callee's flow IR as ``repr``) runs returns a
        Python number or bool (:mod:`.valuekinds`): a callable object whose ``__call__`` answers
        ``any(...)`` is no tensor, whatever its attribute looked like."""
        targets = [callee for callee, site in self.raw.get(fid, ()) if repr(site.expr) == expr_text and not site.reference]
        return bool(targets) and all(callee in self.fns and self.fns[callee][1].returns == NUMBER for callee in targets)

    def truths(self, c: tuple, fid: FuncId, env: dict | None) -> frozenset:
        kind = c[0]
        if kind == GIVEN:  # a default filled in (:func:`.guards.fills_default`): only on known values with None
            found = self.value(c[1][1], fid, env)
            return frozenset((False,)) if found is TOP or not found.isdisjoint(MARKS) else self.truths(c[1], fid, env)
        if kind in ("t", "is", "eq"):
            found = self.value(c[1], fid, env)
            if found is TOP or not found.isdisjoint(MARKS):
                return BOTH
            moded = mode_truths(self.modes, kind, found, c[2] if kind != "t" else None)
            if moded is not None:
                return moded
            if OBJECT in found and kind != "is":
                return BOTH
            if kind == "t":
                return frozenset(bool(x) for x in found)
            if kind == "is":
                return frozenset(x is not OBJECT and x == c[2] and type(x) is type(c[2]) for x in found)
            out = {equal(x, c[2]) for x in found}
            return BOTH if None in out else frozenset(out)
        if kind in ("cmp", "in"):
            found = self.value(c[1], fid, env)
            if found is TOP or OBJECT in found or not found.isdisjoint(MARKS):
                return BOTH  # decided only from a complete set of known values
            moded = mode_truths(self.modes, kind, found, c[2] if kind == "in" else None)
            if moded is not None:
                return BOTH if kind == "cmp" else moded
            out = {compare(x, c[2], c[3]) if kind == "cmp" else member(x, c[2]) for x in found}
            return BOTH if None in out else frozenset(out)
        if kind == "set":  # after a set-up: no call handed back its state runs it (:mod:`.handback`)
            return frozenset((False,)) if env is not TOP and env.get(c[1]) == ONLY_HANDED else BOTH
        if kind == "not":
            return frozenset(not b for b in self.truths(c[1], fid, env))
        if kind in ("and", "or"):
            left, right = self.truths(c[1], fid, env), self.truths(c[2], fid, env)
            if kind == "and":
                return frozenset(a and b for a in left for b in right)
            return frozenset(a or b for a in left for b in right)
        return BOTH

    def dead(self, fid: FuncId, cond: tuple) -> bool:
        """Whether no value reaching ``fid`` takes every branch of ``cond`` (a conjunction)."""
        if not cond or fid not in self.values:
            return fid not in self.values and any(c[0] == GIVEN for c in cond)
        # asked per site and round: it depends only on the values reaching ``fid`` (fields, returns fixed)
        stamp = self._stamp.get(fid, 0)
        memo = self._dead.get(fid)
        if memo is None or memo[0] != stamp:
            memo = self._dead[fid] = (stamp, {})
        known = memo[1].get(id(cond))
        if known is None:
            env = self.values[fid]
            known = memo[1][id(cond)] = (any(True not in self.truths(c, fid, env) for c in cond), cond)
        return known[0]

    def dead_candidate(self, path: str, cand) -> bool:
        return bool(cand.cond) and self.dead((path, cand.function), cand.cond)

    # -- configuration fields -----------------------------------------------------------------
    def field(self, attr: str, default: tuple = (), owner: tuple[str, str] | None = None) -> frozenset | None:
        """What the analysed code stores into field ``attr`` (of an object of class ``owner``, a
        (module path, qualname) pair, where the read is ``self.attr`` in its method)."""
        key = (attr, default, owner)
        if key in self._fields:
            return self._fields[key]
        self._fields[key] = TOP  # a field stored from itself: unknown
        if self.any_field and owner is None:  # (a computed ``setattr`` into an object of ``owner``: its ``stores``)
            return TOP
        stores = self.stores.get(attr, []) if owner is None else self.own.stores(attr, *owner)
        if stores is None:
            return TOP
        found = set(default)
        result: frozenset | None = frozenset(found) if stores or default else TOP
        for path, v in stores:
            if v is None:
                result = TOP
                break
            if v[0] == "k":
                part = TOP if v[2] is None or self.splat_all or v[1].rpartition(".")[2] in self.splat else {v[2]}
            elif v[0] == "p":
                part = self.any_caller((path, v[1]), v[2])
            else:
                part = self.value(v, ("", ""), TOP)
            if part is TOP:
                result = TOP
                break
            found |= part
            result = frozenset(found)
        if result is not TOP and len(result) > CAP:
            result = TOP
        self._fields[key] = result
        return result

    def any_caller(self, fid: FuncId, name: str, depth: int = 0) -> frozenset | None:
        """What every call of ``fid`` anywhere (hot or not) passes for ``name``: a constructor's
        parameter stored into a field. Unknown when nothing calls it or past three pass-throughs."""
        if self._callers is None:
            self._callers = {}
            for caller, out in self.raw.items():
                for callee, site in out:
                    self._callers.setdefault(callee, []).append((caller, site))
        key = (fid, name)
        if key in self._all:
            return self._all[key]
        self._all[key] = TOP
        calls = self._callers.get(fid, ())
        if fid not in self.fns or not calls or depth > 3:
            return TOP
        found: set = set()
        for caller, site in calls:
            bound = self.bind(fid, site, lambda v, c=caller: self._anywhere(v, c, depth))
            part = TOP if bound is TOP else kw_part(bound, name) if type(name) is tuple else bound.get(name, TOP)
            if part is TOP:
                return TOP
            found |= part
        self._all[key] = result = frozenset(found) if len(found) <= CAP else TOP
        return result

    def _anywhere(self, v: tuple | None, caller: FuncId, depth: int) -> frozenset | None:
        if v is not None and v[0] in ("p", "kw"):  # a parameter, or a key of the caller's own ``**kwargs``
            return self.any_caller(caller, v[1] if v[0] == "p" else ("**", v[1]), depth + 1)
        return self.value(v, caller, TOP)


def _join(out: dict, key, found: frozenset | None) -> None:
    old = out.get(key, frozenset())
    out[key] = TOP if found is TOP or old is TOP else old | found


def never_true(cond: tuple) -> bool:
    """Whether a condition on literals alone (no parameter, no field) is false for every value:
    what a loop's later iterations decide locally (:mod:`.iterations`)."""
    return True not in _LOCAL.truths(cond, ("", ""), TOP)


_LOCAL = ArgValues([], {})  # no facts: parameters, fields and calls stay unknown
