"""Values of a function's parameters over every call of it in the analysed code, hot or not
(:class:`.argvalues.ArgValues` uses them where a hot caller's values do not reach)."""

from __future__ import annotations

FuncId = tuple[str, str]
TOP = None  # an unknown set of values
CAP = 8  # more distinct values than this: unknown


class CallerValues:
    """Needs ``raw``, ``fns``, ``bind``, ``value``, ``_callers``, ``_all`` and ``_envs`` (set by
    :class:`.argvalues.ArgValues`)."""

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
            part = TOP if bound is TOP else bound.get(name, TOP)
            if part is TOP:
                return TOP
            found |= part
        self._all[key] = result = frozenset(found) if len(found) <= CAP else TOP
        return result

    def called_env(self, fid: FuncId, depth: int = 0) -> dict | None:
        """Every parameter's values over every call of ``fid`` anywhere in the analysed code, each
        caller's own parameters (its ``**kwargs`` too) taken the same way, up to four callers up: a
        step loop's function that a generate wrapper calls, with ``top_k`` left at its default by
        every caller of the wrapper. Unknown when nothing calls it (called from outside), when one
        caller's arguments are unknown, or past four levels. The analysed code is taken to be the
        only caller of a function it calls, as for a capture's one-time caller (:meth:`_capturers`)."""
        if self._callers is None:
            self.any_caller(fid, "")  # fills the callers' index
        memo = self._envs.get(fid, False)
        if memo is not False:
            return memo
        self._envs[fid] = TOP  # a recursion knows nothing
        calls = [(c, site) for c, site in self._callers.get(fid, ()) if c != fid]
        if fid not in self.fns or not calls or depth > 3:
            return TOP
        out: dict = {}
        for caller, site in calls:
            env = self.called_env(caller, depth + 1)
            bound = self.bind(fid, site, lambda v, c=caller, e=env: self.value(v, c, e))
            if bound is TOP:
                return TOP
            for name, found in bound.items():
                join_into(out, name, found)
        self._envs[fid] = out
        return out

    def _anywhere(self, v: tuple | None, caller: FuncId, depth: int) -> frozenset | None:
        if v is not None and v[0] == "p":
            return self.any_caller(caller, v[1], depth + 1)
        return self.value(v, caller, TOP)


def join_into(out: dict, key, found: frozenset | None) -> None:
    old = out.get(key, frozenset())
    out[key] = TOP if found is TOP or old is TOP else old | found
