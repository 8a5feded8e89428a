"""What calling one of the points-to analysis's abstract values runs (:class:`.objects.Objects`
inherits it): the functions a value stands for, where the call's arguments start among their
parameters, and the instance a class call makes. Kept apart from attribute loads and stores
(:mod:`.objects`) because it is its own concern -- binding arguments, decorator wrappers, library
callables, ``nn.Sequential``, metaclass hooks -- and ``objects`` read past the size limit with it.

The value tags are :mod:`.objects`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from graphlint.static.argbinding import bind_arguments
from graphlint.static.keyedreturns import result_param
from graphlint.static.pointsto import Value

if TYPE_CHECKING:
    from graphlint.static.argbinding import Keywords
    from graphlint.static.builtclasses import BuiltClasses
    from graphlint.static.generated import Generated
    from graphlint.static.index import Index
    from graphlint.static.pointsto import Solver

FuncId = tuple[str, str]
FOREIGN: Value = ("X",)
RUNS = -1  # a callee's "first parameter" when it runs without the call's arguments or result


class ValueCalls:
    """The call half of :class:`.objects.Objects`; the node helpers (``ret``, ``elems``, ``flow``,
    ``once``, ``ref``), ``elements`` and ``load_value`` are that class's."""

    s: Solver
    index: Index
    generated: Generated
    built: BuiltClasses
    keywords: Keywords
    made: set[tuple[str, str]]
    _views: dict[tuple, int]
    #: function -> the parameters its returns are keyed by (:mod:`.keyedreturns`), set by the linker
    keyed: dict[FuncId, set[str]] = {}
    #: (path, function, parameter) -> the calls its returns hand the parameter to (:mod:`.keyedreturns`)
    forwards: dict[tuple, list[tuple]]
    keyed_call: Callable[[str, str, tuple, str, str], int]  # set by the linker: such a call, with the key

    def callees(self, v: Value, shift: int = 0) -> list[tuple[FuncId, int, Value | None]]:
        """What calling ``v`` runs: (function, arguments' first parameter, result value or None
        for "what it returns")."""
        tag = v[0]
        if tag == "F":
            return [((v[1], v[2]), shift, None)]
        if tag == "M":
            return [((v[1], v[2]), 1 + shift, None)]
        if tag == "W":  # a decorated function: its decorator's wrapper runs (RUNS: its parameters are
            # left unbound -- it is shared by every function so decorated and would mix their
            # arguments), then the function itself, which gets the arguments and gives the result
            return [((v[1], v[2]), RUNS, None), *self.callees(v[3], shift)]
        if tag == "C":
            init = self.generated.init_of(self.ref(v))
            made = ("I", v[1], v[2])
            if init is not None and init[0] == "Gi":  # a dataclass's generated __init__ (:mod:`.generated`)
                return [(None, 0, made), *((fid, RUNS, made) for fid in self.generated.runs(init))]
            found = [(init, 1 + shift, made)] if init else [(None, 0, made)]
            post = self.index.find_method(self.ref(v), "__post_init__")
            return found + [((post[0].path, post[1]), RUNS, made)] if post else found
        if tag == "Gi":
            return [(fid, RUNS, None) for fid in self.generated.runs(v)]
        if tag == "Ct":  # the library's loader runs ``cls(...)`` with arguments of its own
            init = self.index.find_method(self.ref(v), "__init__")
            return [((init[0].path, init[1]) if init else None, RUNS if init else 0, ("I", v[1], v[2]))]
        if tag in ("I", "S"):
            ref = self.ref(v)
            hit = self.index.call_forward(ref)
            found = [hit] if hit else []
            if tag == "S" or (hit and hit[0].functions[hit[1]].abstract):
                method = hit[1].rsplit(".", 1)[-1] if hit else "forward"
                found.extend(self.built.overrides(ref, method))
            return [((info.path, qual), 1 + shift, None) for info, qual in found]
        if tag == "Pa":
            return self.callees(v[1], shift + v[2])
        return []

    def call(self, func: int, args: tuple, kws: tuple, dst: int | None, keys: tuple | None = None) -> None:
        """``func(*args, **kws)``: ``args`` are nodes or ("*", node), ``kws`` (name, node) or
        ("**", node). Binds arguments to parameters and results to ``dst``; records the classes
        called in :attr:`made`. ``keys``: its constant arguments (:func:`.keyedreturns.call_keys`)."""
        if keys is None:  # not a closure (:data:`.pointsto.Watcher`), and one slot fewer for most calls
            self.s.watch(func, (ValueCalls._call_values, self, args, kws, dst))
        else:
            self.s.watch(func, (ValueCalls._keyed_call, self, args, kws, dst, keys))

    def _keyed_call(self, args: tuple, kws: tuple, dst: int | None, keys: tuple, values) -> None:
        self._call_values(args, kws, dst, values, keys)

    def returned(self, path: str, qual: str, value: int, stmt: tuple) -> None:
        """``return value`` (``stmt``, keyed by ``param == C`` when it has four parts): into the
        function's return, and where its returns are keyed, into the part a constant picks."""
        self.s.edge(value, self.ret(path, qual))
        for param in self.keyed.get((path, qual), ()):
            if len(stmt) == 4 and stmt[2] == param and stmt[3] is None:  # ``return super().builder(op)``
                self.forwards.setdefault((path, qual, param), []).append(stmt[1])
            elif len(stmt) == 4 and stmt[2] == param:
                for key in stmt[3]:
                    self.s.edge(value, self.s.node(("rk", path, qual, param, key)))
            else:
                self.s.edge(value, self.s.node(("ru", path, qual, param)))

    def result(self, fid: FuncId, first: int, keys: tuple | None) -> int:
        """What a call of ``fid`` returns: its return, or for constant arguments its keyed part."""
        keyed = self.keyed.get(fid) if keys is not None else None
        flow = self.flow(*fid) if keyed else None
        picked = result_param(flow.params, keyed, first, keys) if flow is not None else None
        if picked is None:
            return self.ret(*fid)
        name = ("rc", *fid, *picked)
        node = self.s.ids.get(name)
        if node is None:
            node = self.s.node(name)
            self.s.edge(self.s.node(("ru", *fid, picked[0])), node)
            self.s.edge(self.s.node(("rk", *fid, *picked)), node)
            for ir in self.forwards.get((*fid, picked[0]), ()):  # the call handing the key on, made again with it
                self.s.edge(self.keyed_call(*fid, ir, *picked), node)
        return node

    def _call_values(self, args: tuple, kws: tuple, dst: int | None, values, keys: tuple | None = None) -> None:
        for v in values:
            if v[0] == "X":  # calling a library object: what it returns is the library's
                if dst is not None:
                    self.s.add_values(dst, (FOREIGN,))
                    if len(args) == 1 and type(args[0]) is int and not kws:  # ``ray.remote(**opts)(Worker)``:
                        self.s.watch(args[0], (ValueCalls._decorated, self, dst))  # a decorator it cannot see
                continue
            if v[0] == "L" and v[3]:  # nn.Sequential: every element is called (once: one may hold another)
                if self.once(("sequential", v, id(args), id(kws), dst)):
                    self.call(self.elems(v), args, kws, dst)
                continue
            if v[0] in ("I", "S") and self.once(("instance", v, id(args), id(kws), dst)):
                self.call(self.called_method(v), args, kws, dst)
            if v[0] == "W" and self.once(("wrapper-self", v)):
                self.wrapper_self(v)
            if v[0] == "C" and self.once(("hooked", v, id(args), id(kws))):
                hook = self.generated.hook_of(v)
                if hook is not None:  # a metaclass-installed __init__: called with the new instance
                    instance = self.s.fresh()
                    self.s.add_values(instance, (("I", v[1], v[2]),))
                    self.call(hook, (instance, *args), kws, None)
            for fid, first, made in self.callees(v):
                if made is not None:
                    self.made.add(made[1:])
                    if dst is not None:
                        self.s.add_values(dst, (made,))
                if fid is None:
                    if v[0] == "C" and (args or kws) and self.once(("library-init", v, id(args), id(kws))):
                        self.generated.library_init(made, args, kws)
                    continue
                if first != RUNS and self.once(("call", fid, first, id(args), id(kws), dst)):
                    bind_arguments(self.s, self.flow(*fid), fid, first, args, kws, self.elements, self.keywords)
                    if made is None and dst is not None:
                        self.s.edge(self.result(fid, first, keys), dst)

    def _decorated(self, dst: int, values) -> None:
        """A library callable applied to one project class or function returns it (or a wrapper that
        runs it), as a decorator graphlint cannot see does (:mod:`.flowir`, ``"dec"``)."""
        self.s.add_values(dst, [v for v in values if v[0] in ("C", "F", "M", "W")])

    def wrapper_self(self, v: Value) -> None:
        """A method decorator's wrapper (``def wrapper(self, *args)``) gets the instance first: its
        first parameter holds the class of each method it wraps (a cone, like ``self``), so what
        it reads on it (``self.config``) resolves; its other parameters stay unbound."""
        while v[0] == "W":
            inner = v[3]
            while inner[0] == "W":
                inner = inner[3]
            wrapper, method = self.flow(v[1], v[2]), self.flow(inner[1], inner[2]) if inner[0] == "M" else None
            if wrapper is not None and wrapper.params and method is not None and method.cls:
                self.s.add_values(self.s.node(("v", v[1], v[2], wrapper.params[0])), (("S", inner[1], method.cls),))
            v = v[3]

    def called_method(self, v: Value) -> int:
        """What calling an instance runs, read through the points-to (its class attribute
        ``forward``, else ``__call__``): a method the class's decorator wrapped, or one its base's
        ``__init_subclass__`` installed (``cls.forward = wrapper``). The method the class defines is
        :meth:`callees`' too (by name: a call is bound once)."""
        key = ("called", v)
        node = self._views.get(key)
        if node is None:
            node = self._views[key] = self.s.fresh()
            hit = self.index.call_forward(self.ref(v))
            self.load_value(v, hit[1].rsplit(".", 1)[-1] if hit else "forward", node)
        return node
