"""Python's implicit calls: code that runs without a call expression in the source.

A decorated function (``@deco def f``) holds what ``deco(f)`` returns: a closure it returns runs
before ``f`` on every call (:meth:`Implicit.decorated`).

The points-to analysis (:mod:`.flowlink`, :mod:`.objects`) follows values; an attribute load, a
subscript or a store runs project code only through the class of the object it reaches. Per
function scope, :class:`Implicit` watches those objects and records what they run:

- ``obj.attr`` where the class binds ``attr`` to a ``@property``: its getter; on a class defining
  ``__getattribute__``: it, on every load; ``__getattr__``: it, for an attribute no class of the
  object's family binds or stores;
- ``obj.attr = v`` on a class defining ``__setattr__``: it;
- ``obj[k]`` and ``for x in obj``: ``__getitem__`` (else ``__iter__``); ``obj[k] = v``: ``__setitem__``;
  ``k in obj``: ``__contains__`` (else ``__iter__``);
- the iteration protocol: ``for x in obj`` also runs the ``__next__`` of what ``obj.__iter__()``
  returns (``return self`` in an iterator class), and ``next(obj)`` runs ``obj.__next__``: an
  iterator object's step (a token generator whose ``__next__`` runs the model) is reached from the
  loop that drives it (what ``__next__`` returns is the loop variable: :meth:`Objects.elements`).

A forward hook (``m.register_forward_hook(fn)``, ``register_forward_pre_hook``) runs on every call
of the module it is registered on: an edge from that module's ``forward`` to ``fn``
(:meth:`Implicit.module_hook`), so a hook registered once, at set-up, is as hot as the layer it
watches (a KV cache a hook grows with ``torch.cat`` every token).

Calls a class or an instance makes implicitly (``__init__``, a dataclass's ``__post_init__``,
``forward``/``__call__`` through the points-to, so that a decorated or installed ``forward`` runs
its wrapper) are :meth:`graphlint.static.objects.Objects.callees`'. The edges found are the call
graph's (:meth:`graphlint.static.callgraph.CallGraph.implicit_sites`), made at no particular
statement: a function hot only in its per-token loops runs them when any of its loops is hot.
"""

from __future__ import annotations

from typing import Callable

from graphlint.static.facts import ModuleInfo
from graphlint.static.objects import Objects
from graphlint.static.pointsto import Value

FuncId = tuple[str, str]
HOOKS = ("__getattribute__", "__getattr__", "__setattr__", "__getitem__", "__iter__", "__setitem__", "__contains__",
         "__next__")


class Implicit:
    def __init__(self, infos: list[ModuleInfo], objects: Objects):
        self.o, self.s, self.index = objects, objects.s, objects.index
        #: function -> what it runs implicitly
        self.edges: dict[FuncId, set[FuncId]] = {}
        #: names some ``@property`` getter has (a load of any other name runs no getter)
        self.properties = {qual.rsplit(".", 1)[-1] for info in infos for qual, flow in info.flows.items()
                           if flow.kind == "function" and flow.fkind == "p"}
        #: the hook methods some class of the program defines (none defined: no watcher at all)
        self.hooks = {name for info in infos for cls in info.classes.values() for name in HOOKS if name in cls.methods}
        self.getattr_hooks = frozenset(self.hooks & {"__getattribute__", "__getattr__"})  # one set, not one per load
        self._methods: dict[tuple, list[FuncId]] = {}
        #: decorators' wrapper closures -> the functions they wrap (:meth:`decorated`)
        self.wrapped: dict[FuncId, set[FuncId]] = {}
        self._runs_wrapped: dict[Value, bool] = {}
        self._scopes: dict[FuncId, FuncId | None] = {}
        #: (proxy value, attribute) -> the node its ``__getattr__`` forwards to (:meth:`delegated`)
        self._forwarded: dict[tuple[Value, str], int] = {}
        self.bound_memo: dict[tuple[Value, str], bool] = {}  # (instance value, attribute) -> :meth:`bound`

    def decorated(self, deco: int, inner: int, dst: int) -> None:
        """``@deco def f``: ``f`` holds what ``deco(f)`` returns. A closure it returns (``def
        wrapper(*a): return fn(*a)``) is one function shared by every function so decorated, whose
        ``fn(*a)`` would call all of them: the name holds a *wrapped* value instead, ``("W", path,
        wrapper, inner)``, whose call runs the wrapper and that one inner function
        (:meth:`Objects.callees`); the wrapper's own calls of what it wraps are left out
        (:attr:`wrapped`). The function itself is held too: a decorator graphlint cannot see (a
        library's) returns it, and a known one that registers it returns it as well."""
        s = self.s
        s.edge(inner, dst)
        made = s.fresh()
        self.o.call(deco, (inner,), (), made)
        closures: list[Value] = []
        inners: list[Value] = []

        def wrap(closure_values, inner_values):
            out = [("W", c[1], c[2], i) for c in closure_values for i in inner_values]
            for c in closure_values:
                found = self.wrapped.setdefault((c[1], c[2]), set())
                for i in inner_values:
                    found.update(fid for fid, _, _ in self.o.callees(i) if fid is not None)
            s.add_values(dst, out)

        def on_made(values):
            new = [v for v in values if self.wrapper(v) and self.runs_wrapped(v)]
            s.add_values(dst, [v for v in values if not self.wrapper(v)])
            closures.extend(new)
            wrap(new, inners)

        def on_inner(values):
            new = [v for v in values if v[0] in ("F", "W", "C")]
            inners.extend(new)
            wrap(closures, new)

        s.watch(inner, on_inner)
        s.watch(made, on_made)

    def wrapper(self, v: Value) -> bool:
        """A closure (a function nested in another): what a decorator returns to wrap a function."""
        if v[0] != "F":
            return False
        flow = self.o.flow(v[1], v[2])
        return flow is not None and bool(flow.parent)

    def runs_wrapped(self, v: Value) -> bool:
        """Whether a decorator's closure calls a parameter of the function it is nested in (``def
        wrapper(*a): return fn(*a)`` in ``def deco(fn)``): it wraps that function and runs it. A
        closure that does not (the inner decorator a dual-use ``@deco``/``@deco(...)`` returns
        when called with the function) wraps nothing and is not what the name holds."""
        known = self._runs_wrapped.get(v)
        if known is None:
            parent = self.o.flow(v[1], self.o.flow(v[1], v[2]).parent)
            params = set(parent.params) | set(parent.kwonly) if parent is not None else set()
            fn = self.o.by_path[v[1]].functions.get(v[2])
            sites = fn.calls if fn is not None else ()
            known = self._runs_wrapped[v] = bool(params) and any(
                site.expr[0] == "n" and site.expr[1] in params and not site.reference for site in sites)
        return known

    def scope(self, path: str, qual: str) -> FuncId | None:
        """One tuple per function, however many watchers hold it."""
        key = (path, qual)
        found = self._scopes.get(key, ())
        if found == ():
            flow = self.o.flow(path, qual)
            found = self._scopes[key] = key if flow is not None and flow.kind == "function" else None
        return found

    def methods(self, v: Value, name: str) -> list[FuncId]:
        """The ``name`` methods an instance value runs: its class's (inherited) one and, for a
        cone (``self``, an annotated parameter), every subclass's override."""
        key = (v, name)
        found = self._methods.get(key)
        if found is None:
            ref = self.o.ref(v)
            hits = [self.index.find_method(ref, name)]
            if v[0] == "S":
                hits.extend(self.o.built.overrides(ref, name))
            found = self._methods[key] = sorted({(info.path, qual) for hit in hits if hit for info, qual in (hit,)})
        return found

    def run(self, fid: FuncId, callees) -> None:
        if callees:
            self.edges.setdefault(fid, set()).update(callees)

    def module_hook(self, module: Value, hook: int) -> None:
        """``module.register_forward_hook(hook)``: each ``forward`` the instance runs runs ``hook``."""
        for fid in self.methods(module, "forward"):
            self.s.watch(hook, (Implicit._hooked_fn, self, fid))

    def _hooked_fn(self, fid: FuncId, values) -> None:
        self.run(fid, [callee for v in values for callee, _, _ in self.o.callees(v) if callee is not None])

    # -- attribute loads and stores ------------------------------------------------------------
    def load(self, path: str, qual: str, obj: int, attr: str, dst: int | None = None) -> None:
        fid = self.scope(path, qual)
        getattr_hooks = self.getattr_hooks
        if fid is None or not (attr in self.properties or getattr_hooks):
            return
        self.s.watch(obj, (Implicit._loaded, self, fid, getattr_hooks, attr, dst))  # not a closure (:data:`.pointsto.Watcher`)

    def _loaded(self, fid: FuncId, getattr_hooks: frozenset[str], attr: str, dst: int | None, values) -> None:
        for v in values:
            if v[0] not in ("I", "S"):
                continue
            if "__getattribute__" in getattr_hooks:
                self.run(fid, self.methods(v, "__getattribute__"))
            if "__getattr__" in getattr_hooks and not self.bound(v, attr):
                hooks = self.methods(v, "__getattr__")
                self.run(fid, hooks)
                if dst is not None and self.o.once(("getattr-hook", v, attr, dst)):
                    self.delegated(v, attr, hooks, dst)
            if attr in self.properties and self.o.once(("property", fid, v, attr)):
                for owner in self.owners(v, attr):
                    self.s.watch(self.o.cattr(*owner, attr), (Implicit.getters, self, fid))

    def delegated(self, v: Value, attr: str, hooks, dst: int) -> None:
        """``obj.attr`` that falls to a proxy's ``__getattr__(self, name)`` whose ``return`` is
        ``getattr(<inner>, name)``: the inner object's ``attr`` (a worker wrapper forwarding
        ``execute_model``). Evaluated per attribute, never by binding the name to the hook's
        parameter: that one node would hold every name any load of any proxy asks for, and every
        forwarded load would look all of them up.

        One node per (proxy, attribute), made before the hook's body is evaluated: a hook that
        forwards to an attribute nothing binds (``getattr(self._inner, name)`` with ``_inner``
        never stored) loads that attribute through itself, and evaluating it again would recurse
        without end (all of torch hit the recursion limit); the inner load finds the node and
        shares it instead."""
        node = self._forwarded.get((v, attr))
        if node is not None:
            self.s.edge(node, dst)
            return
        node = self._forwarded[(v, attr)] = self.s.fresh()
        self.s.edge(node, dst)
        for path, qual in hooks:
            flow = self.o.flow(path, qual)
            if flow is None or len(flow.params) < 2:
                continue
            for stmt in flow.stmts:
                if type(stmt) is tuple and len(stmt) == 2 and stmt[0] == "r" and type(stmt[1]) is tuple \
                        and stmt[1][0] == "g" and len(stmt[1]) > 3 and stmt[1][3] == ("n", flow.params[1]):
                    self.o.load(self.evaluate(path, qual, stmt[1][1]), attr, node)

    evaluate: Callable[[str, str, tuple], int]  # set by the linker: an IR's node in a scope

    def owners(self, v: Value, attr: str) -> list[tuple[str, str]]:
        mro = self.index.mro(self.o.ref(v))
        found = self.o.class_attr(mro, attr)
        if v[0] == "S":
            family = self.o.subclass_set(v) | self.o.siblings(v)
            found.extend(c for c in self.o.in_body.get(attr, ()) if c in family)
        return found

    def getters(self, fid: FuncId, values) -> None:
        for v in values:
            if v[0] == "F":
                flow = self.o.flow(v[1], v[2])
                if flow is not None and flow.fkind == "p":
                    self.run(fid, ((v[1], v[2]),))

    def bound(self, v: Value, attr: str) -> bool:
        """Whether some class of the instance's family binds ``attr`` in its body or stores it on
        ``self`` (else a load of it falls to ``__getattr__``)."""
        key = (v, attr)  # the fields and class bodies it reads are fixed for the link
        found = self.bound_memo.get(key)
        if found is None:
            fields = self.o.fields
            found = self.bound_memo[key] = any(
                attr in fields.get((info.path, name), ()) or (info.flows.get(name) is not None
                                                              and attr in info.flows[name].locals)
                for info, name in self.o.family(v))
        return found

    def store(self, path: str, qual: str, obj: int) -> None:
        self.hook(path, qual, obj, ("__setattr__",))

    # -- subscripts --------------------------------------------------------------------------
    def item(self, path: str, qual: str, obj: int) -> None:
        """``obj[k]`` or ``for x in obj`` (one IR for both): ``__getitem__``, else ``__iter__`` and
        the ``__next__`` of the iterator it returns."""
        self.hook(path, qual, obj, ("__getitem__", "__iter__"))
        self.iterated(path, qual, obj)

    def iterated(self, path: str, qual: str, obj: int) -> None:
        """``for x in obj``: the ``__next__`` of each iterator ``obj.__iter__()`` returns, every item."""
        fid = self.scope(path, qual)
        if fid is None or "__next__" not in self.hooks or "__iter__" not in self.hooks:
            return

        def on(values):
            for v in values:
                if v[0] in ("I", "S"):
                    for it in self.methods(v, "__iter__"):
                        if self.o.once(("iter", fid, it)):
                            self.advanced(path, qual, self.o.ret(*it))

        self.s.watch(obj, on)

    def advanced(self, path: str, qual: str, obj: int) -> None:
        """``next(obj)``: ``obj.__next__``."""
        self.hook(path, qual, obj, ("__next__",))

    def contains(self, path: str, qual: str, obj: int) -> None:
        """``k in obj``: ``__contains__``, else ``__iter__``."""
        self.hook(path, qual, obj, ("__contains__", "__iter__"))

    def store_item(self, path: str, qual: str, obj: int) -> None:
        self.hook(path, qual, obj, ("__setitem__",))

    def hook(self, path: str, qual: str, obj: int, names: tuple[str, ...]) -> None:
        """The first of ``names`` an instance reaching ``obj`` defines runs."""
        fid = self.scope(path, qual)
        names = tuple(n for n in names if n in self.hooks)
        if fid is None or not names:
            return
        self.s.watch(obj, (Implicit._hooked, self, fid, names))

    def _hooked(self, fid: FuncId, names: tuple[str, ...], values) -> None:
        for v in values:
            if v[0] in ("I", "S"):
                for name in names:
                    found = self.methods(v, name)
                    if found:
                        self.run(fid, found)
                        break

