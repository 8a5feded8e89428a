"""How a call's arguments reach the callee's parameters in the points-to problem.

Its own module because it is Python's argument-binding rule and nothing else, beside
:mod:`.objects` (which decides *what* a call runs): positional arguments fill parameters in
order, the rest go to ``*args``; a ``*spread`` may fill any later parameter (its elements, not
itself) and ``**spread`` any parameter not yet filled by position or any keyword-only one;
keywords fill their parameter, else ``**kwargs``. ``first`` is the parameter the first argument
fills (1 for a bound method: ``self`` is filled already).

A function's own ``**kwargs`` keeps its keywords by name (:class:`Keywords`): handed on with
``super().__init__(**kwargs)``, ``model_class=`` reaches the base's ``model_class`` only, not
every parameter the call leaves open (``config_class``, ``speculator``, ``num_kv_heads``...). A
factory passing twenty model classes through a subclass's ``**kwargs`` otherwise filled each of
its base's parameters with all of them.
"""

from __future__ import annotations

from typing import Callable

from graphlint.static.facts import ScopeFlow
from graphlint.static.pointsto import Solver


def kwargs_of(path: str, qual: str) -> tuple:
    """The container value a function's ``**kwargs`` parameter holds (:mod:`.flowlink`)."""
    return ("L", path, ("**", qual), 0)


class Keywords:
    """The keys a function's ``**kwargs`` holds, one node per key, and the rest: what a splat or a
    store into it put there with no known key (``kwargs["x"] = v``, ``kwargs.update(d)``,
    ``f(**unknown)``), which may fill any parameter it is splatted into."""

    def __init__(self, solver: Solver, elements_of: Callable[[int, list], None]):
        self.s, self.elements_of = solver, elements_of
        self.keys: dict[tuple, list[str]] = {}
        self.users: dict[tuple, list[Callable[[str], None]]] = {}
        self.done: set[tuple] = set()
        self.params: dict[tuple[str, str], list[str]] = {}  # a callee's positional parameters

    @staticmethod
    def owns(value: tuple) -> bool:
        return value[0] == "L" and type(value[2]) is tuple and value[2][0] == "**"

    def key(self, container: tuple, name: str) -> int:
        return self.s.node(("kwk", container[1], container[2][1], name))

    def rest(self, container: tuple) -> int:
        return self.s.node(("kwu", container[1], container[2][1]))

    def add_key(self, container: tuple, name: str) -> int:
        keys = self.keys.setdefault(container, [])
        if name not in keys:
            keys.append(name)
            for user in list(self.users.get(container, ())):
                user(name)
        return self.key(container, name)

    def on_keys(self, container: tuple, user: Callable[[str], None]) -> None:
        self.users.setdefault(container, []).append(user)
        for name in list(self.keys.get(container, ())):
            user(name)

    def spread(self, node: int, fid: tuple[str, str], flow: ScopeFlow, open_names: tuple, named: frozenset) -> None:
        """``f(**node)``: a ``**kwargs`` container hands each key to its parameter (or to ``f``'s
        own ``**kwargs`` under the same key) and its rest to every open one; anything else (a dict
        built elsewhere, a library value) may fill any open parameter, as before."""
        path, qual = fid
        var = self.s.node
        self.params[fid] = flow.params
        target = kwargs_of(path, qual) if flow.kwarg else None
        loose = self.s.fresh()
        for name in open_names:
            self.s.edge(loose, var(("v", path, qual, name)))
        if target is not None:
            self.s.edge(loose, self.s.node(("el", path, target[2])))
            self.s.edge(loose, self.rest(target))

        def on(values):
            others = []
            for v in values:
                if not self.owns(v):
                    others.append(v)
                elif (v, fid, open_names) not in self.done:
                    self.done.add((v, fid, open_names))
                    self.s.edge(self.rest(v), loose)
                    self.on_keys(v, lambda name, v=v: self._hand(v, name, fid, open_names, named, target))
            if others:
                self.elements_of(loose, others)
        self.s.watch(node, on)

    def _hand(self, container: tuple, name: str, fid: tuple[str, str], open_names: tuple, named: frozenset,
              target: tuple | None) -> None:
        src = self.key(container, name)
        if name in named:  # given twice: Python refuses the call
            return
        if name in open_names:
            self.s.edge(src, self.s.node(("v", fid[0], fid[1], name)))
        elif target is not None and name not in self.params.get(fid, ()):
            self.s.edge(src, self.s.node(("el", fid[0], target[2])))
            self.s.edge(src, self.add_key(target, name))


def bind_arguments(solver: Solver, flow: ScopeFlow | None, fid: tuple[str, str], first: int, args: tuple,
                   kws: tuple, elements: Callable[[int, int], None], keywords: Keywords | None = None) -> None:
    """``args`` are nodes or ("*", node), ``kws`` (name, node) or ("**", node); ``elements(src,
    dst)`` makes ``dst`` hold what ``src`` holds as elements (``Objects.elements``); ``keywords``
    keeps a ``**kwargs`` by key (without it every splat fills every open parameter)."""
    if flow is None:
        return
    path, qual = fid
    var = solver.node
    params = flow.params
    position = first
    for arg in args:
        if type(arg) is tuple:  # ("*", node): its elements may fill any later parameter
            spread = solver.fresh()
            elements(arg[1], spread)
            for name in params[position:]:
                solver.edge(spread, var(("v", path, qual, name)))
            if flow.vararg:
                solver.edge(spread, var(("el", path, ("*", qual))))
            break
        if position < len(params):
            solver.edge(arg, var(("v", path, qual, params[position])))
        elif flow.vararg:
            solver.edge(arg, var(("el", path, ("*", qual))))
        position += 1
    named = frozenset(name for name, _ in kws if name != "**")
    for name, node in kws:
        if name == "**":
            if keywords is not None:
                keywords.spread(node, fid, flow, (*params[position:], *flow.kwonly), named)
                continue
            spread = solver.fresh()
            elements(node, spread)
            for other in (*params[position:], *flow.kwonly):
                solver.edge(spread, var(("v", path, qual, other)))
            if flow.kwarg:
                solver.edge(spread, var(("el", path, ("**", qual))))
        elif name in params or name in flow.kwonly:
            solver.edge(node, var(("v", path, qual, name)))
        elif flow.kwarg:
            solver.edge(node, var(("el", path, ("**", qual))))
            if keywords is not None:
                solver.edge(node, keywords.add_key(kwargs_of(path, qual), name))
