"""Which classes a captured call runs on: the receivers a capture's callers pass, followed by class.

The points-to analysis is context-insensitive about ``self``: in ``Model.step``, ``self`` is a
``Model`` *or any subclass*, so ``self.layer(...)`` runs every subclass's override and
``self.cache`` holds every cache any subclass's method stores. A capture helper that takes the
model as a parameter (``capture(model=self)`` from ``GraphModel.init_graphs``) records
``model.step(...)`` only for the objects its callers pass -- the points-to knows them: ``model``
holds the graph model classes alone -- but one call further, inside the inherited
``Model.step``, the eager subclasses' layers and caches came back through ``self``, and their
eager-only code was rated as captured.

The captured walk here carries, per function, the classes ``self`` can be (concrete classes: a
cone value spelled out as its class and subclasses). At a capture's call ``recv.m(...)`` they are
the classes of the receiver's values whose lookup of ``m`` finds the root; through ``self.m(...)``
the classes among them whose lookup finds the callee (a closure of the method keeps them); through
a field chain ``self.f.m(...)`` the classes of what ``f`` holds *for those classes*: the fields
along each class's MRO, a class's field counted only where a method storing it on ``self`` may run
on that class (the class's own, one not overridden on the way, or an override calling it back:
``super().alloc()``). A method target that no class of the state looks up is not a captured edge.

Nothing is pruned where a link is unknown: a receiver holding something other than project
instances, an attribute some code stores on an object other than ``self`` (``model.cache = c``),
a dataclass field, a property or a class attribute that is no method, a node at its cap, an edge
the caller's own call sites do not explain. A target that is no method (a decorator's wrapper, a
function held in a field) is never pruned, and every other context keeps every edge.
"""

from __future__ import annotations

from graphlint.static.classguards import pruned_edges
from graphlint.static.facts import CallSite, ModuleInfo
from graphlint.static.index import Index
from graphlint.static.patched import OUTSIDE
from graphlint.static.selfdispatch import instance_runs

FuncId = tuple[str, str]
ClassKey = tuple[str, str]
Calls = dict[FuncId, list[tuple[FuncId, CallSite]]]
State = frozenset | None  # the classes ``self`` may be; None: not known (nothing is pruned)
#: (function, state) pairs the walk visits at most; past it nothing is pruned
WALK_LIMIT = 50_000


class ReceiverClasses:
    def __init__(self, infos: list[ModuleInfo], index: Index, calls: Calls, graph):
        self.by_path = {info.path: info for info in infos}
        self.index, self.calls, self.graph, self.solver = index, calls, graph, graph.solver
        self._writers: dict[tuple[ClassKey, str], list[FuncId]] | None = None
        self._foreign: set[tuple[ClassKey, str]] = set()  # a class's field some other class's method stores
        self._open: set[str] = set()  # attributes stored on something other than ``self``
        self._fields: dict[tuple[ClassKey, str], list | None] = {}
        self._lookups: dict[tuple[ClassKey, str], dict | None] = {}
        self._targets: dict[FuncId, list[tuple[CallSite, list[FuncId]]]] = {}

    # -- the captured walk ---------------------------------------------------------------------
    def pruned(self, roots: list[tuple[FuncId, tuple]], stop: set[FuncId]) -> set[tuple[FuncId, int, FuncId]]:
        """(caller, id(site), callee) of the edges no capture runs: walked from the graph roots with
        the classes ``self`` may be, an edge is pruned when every way the walk reaches its caller
        rules it out."""
        start: dict[FuncId, State] = {}
        for root, chain in roots:
            state = self._root_state(root, chain) if len(chain) == 2 else None
            start[root] = _union(start[root], state) if root in start else state
        return pruned_edges(start, self.calls, stop, lambda caller, callee, _site, state: self._step(caller, callee, state),
                            WALK_LIMIT)

    def unrun_captures(self) -> set[tuple[FuncId, int, FuncId]]:
        """(capturer, id(site), callee) of the captured calls no instance that runs the capturing
        method makes: ``self.model(...)`` under a base class's capture, where every subclass
        storing ``model`` overrides the capture with its own, records nothing of theirs (each of
        their models is recorded by that class's capture). Only plain methods, what a lookup finds,
        are dropped, as in :meth:`_site`."""
        out = set()
        for capturer, edges in self.calls.items():
            method = self._method_of(capturer, None)
            states: dict[FuncId, State] = {}
            for callee, site in edges if method is not None else ():
                if not site.in_capture or site.expr[0] != "a" or (capturer, id(site.expr)) in self.graph.guessed:
                    continue  # (a guess: code installed into the library model the capture records, :mod:`.installed`)
                if method not in states:
                    states[method] = self._running(capturer, method)
                objects = self._chain(capturer, site.expr[1], states[method]) if states[method] else None
                found = self._lookup_all(objects, site.expr[2]) if objects else None
                if self._method(callee) and (states[method] == frozenset() or (found is not None and callee not in found)):
                    out.add((capturer, id(site), callee))  # a function a policy or a patch installs: kept
        return out

    def _running(self, fid: FuncId, method: FuncId) -> State:
        """The classes of ``self`` in ``fid`` (a method or a closure in one) whose instances run
        ``method``; None where ``self`` holds anything unknown or nothing at all."""
        node = self.solver.ids.get(("v", method[0], method[1], self._self_name(fid)))
        selves = self._instances(self.solver.values(node)) if node is not None and node not in self.solver.full else None
        if not selves:
            return None
        return frozenset(c for c in selves if instance_runs(self._ref(c), method, self.by_path, self.index, self.calls))

    def _root_state(self, root: FuncId, chain: tuple) -> State:
        """The classes ``self`` is in ``root`` where the capture's call is ``recv.m(...)``: those of
        the receiver's values whose ``m`` is the root."""
        capturer = chain[0]
        sites = [site for site, found in self._site_targets(capturer) if site.in_capture and root in found]
        out: set[ClassKey] = set()
        for site in sites:
            expr = site.expr
            if expr[0] != "a":
                return None
            node = self.graph.node(capturer[0], capturer[1], expr[1])
            objects = self._instances(self.solver.values(node)) if node is not None and node not in self.solver.full else None
            found = self._lookup_all(objects, expr[2]) if objects else None
            if found is None or not found.get(root):
                return None
            out |= found[root]
        return frozenset(out) or None

    def _step(self, caller: FuncId, callee: FuncId, state: frozenset) -> tuple[bool, State]:
        """(whether every site of ``caller`` that may run ``callee`` rules it out, the classes the
        callee's ``self`` may then be)."""
        if self._implicit(caller, callee):
            return False, None
        sites = [site for site, found in self._site_targets(caller) if callee in found]
        if not sites:
            return False, None  # an edge no site of the caller explains (a specialized one): kept
        kept, carried = False, frozenset()
        for site in sites:
            out, classes = self._site(caller, callee, site, state)
            if not out:
                kept = True
                carried = None if classes is None or carried is None else carried | classes
        return (False, carried or None) if kept else (True, None)

    def _site(self, caller: FuncId, callee: FuncId, site: CallSite, state: frozenset) -> tuple[bool, State]:
        expr = site.expr
        if expr[0] != "a":
            return False, state if self._closure(caller, callee) else None
        objects = self._chain(caller, expr[1], state)
        found = self._lookup_all(objects, expr[2]) if objects is not None else None
        if found is None:
            return False, None
        if callee in found:
            return False, found[callee]
        return self._method(callee), None

    def _chain(self, fid: FuncId, ir: tuple, state: frozenset) -> frozenset | None:
        """The classes of what ``ir`` (``self``, ``self.f``, ``self.f.g``...) holds in ``fid`` when
        ``self`` is one of ``state``; None where anything else may be there."""
        if ir[0] == "n":
            return state if ir[1] == self._self_name(fid) else None
        if ir[0] != "a":
            return None
        inner = self._chain(fid, ir[1], state)
        if inner is None:
            return None
        values = []
        for cls in inner:
            held = None if self._class_binds(cls, ir[2]) else self._field_values(cls, ir[2])
            if held is None:
                return None
            values.extend(held)
        found = self._instances(values)
        return found or None  # nothing known there (``self.__class__``, a library's object): not followed

    # -- one class -------------------------------------------------------------------------------
    def _lookup_all(self, classes: frozenset, attr: str) -> dict | None:
        """Callee -> the classes its ``self`` is (None: not one of them), calling ``attr`` of an
        instance of any of ``classes``; None where the lookup is not known."""
        out: dict[FuncId, State] = {}
        for cls in classes:
            found = self._lookup(cls, attr)
            if found is None:
                return None
            for fid, selves in found.items():
                out[fid] = None if selves is None or (fid in out and out[fid] is None) else out.get(fid, frozenset()) | selves
        return out

    def _lookup(self, cls: ClassKey, attr: str) -> dict | None:
        key = (cls, attr)
        if key in self._lookups:
            return self._lookups[key]
        found: dict[FuncId, State] | None = {} if not self._dynamic(cls) else None
        for info, name in self.index.mro(self._ref(cls)) if found is not None else ():
            flow = info.flows.get(name)
            if attr in info.classes[name].methods:
                fid = (info.path, f"{name}.{attr}")
                method = info.flows.get(fid[1])
                kind = method.fkind if method is not None else "?"
                if kind == "m":
                    found[fid] = frozenset((cls,))
                elif kind in ("s", "c"):
                    found[fid] = None
                else:
                    found = None  # a property: what its getter returns
                break
            if flow is not None and attr in flow.locals:
                found = None  # a class attribute that is no method
                break
        held = self._field_values(cls, attr) if found is not None else None
        if held is None:
            found = None
        else:
            for v in held:
                if v[0] in ("I", "S"):
                    for sub in self._cone(v):
                        hit = self.index.call_forward(self._ref(sub))
                        if hit is not None:
                            fid = (hit[0].path, hit[1])
                            prior = found.get(fid, frozenset())
                            found[fid] = None if prior is None else prior | {sub}
                elif v[0] != "X":
                    for fid in self.graph.resolve_values([v]):
                        found[fid] = None
        self._lookups[key] = found
        return found

    def _field_values(self, cls: ClassKey, attr: str) -> list | None:
        """What ``obj.attr`` of an instance of exactly ``cls`` holds: the fields along its MRO that a
        store running on such an instance wrote; None where some store is not known."""
        key = (cls, attr)
        if key in self._fields:
            return self._fields[key]
        self._stores()
        out: list | None = [] if attr not in self._open and not self._dynamic(cls) else None
        for info, name in self.index.mro(self._ref(cls)) if out is not None else ():
            if attr in info.classes[name].fields:
                out = None  # a dataclass's generated ``__init__`` stores it
                break
            node = self.solver.ids.get(("fd", info.path, name, attr))
            if node is None or not self.solver.pts.get(node):
                continue
            if node in self.solver.full:
                out = None
                break
            if self._applies((info.path, name), attr, cls):
                out.extend(self.solver.values(node))
        self._fields[key] = out
        return out

    def _applies(self, owner: ClassKey, attr: str, cls: ClassKey) -> bool:
        """Whether a store of ``owner``'s field ``attr`` may have run on an instance of ``cls``."""
        writers = self._writers.get((owner, attr)) if self._writers is not None else None
        if owner == cls or (owner, attr) in self._foreign or not writers:
            return True
        return any(instance_runs(self._ref(cls), fid, self.by_path, self.index, self.calls) for fid in writers)

    def _stores(self) -> None:
        """Every ``self.f = v`` of a method (or a closure in one), by the class whose field it writes;
        and the attributes stored on anything else (their fields are not followed)."""
        if self._writers is not None:
            return
        self._writers = {}
        for info in self.by_path.values():
            for qual, flow in info.flows.items():
                for stmt in flow.stmts:
                    if stmt[0] != "=" or stmt[1][0] != "a":
                        continue
                    base, attr = stmt[1][1], stmt[1][2]
                    if attr == "forward" and base[0] == "a":  # installed on a submodule: written into its field
                        self._open.add(base[2])
                    method = self._method_of((info.path, qual), base[1]) if base[0] == "n" else None
                    if method is None:
                        held = self._held((info.path, qual), base)
                        if held is None:
                            self._open.add(attr)
                        self._foreign |= {(cls, attr) for cls in held or ()}
                        continue
                    owner = (info.path, info.flows[method[1]].cls)
                    self._writers.setdefault((owner, attr), []).append(method)
                    node = self.solver.ids.get(("v", info.path, method[1], base[1]))
                    for v in self.solver.values(node) if node is not None else ():
                        if v[0] in ("I", "S") and (v[1], v[2]) != owner:  # the method run on another class
                            self._foreign.add(((v[1], v[2]), attr))

    def _held(self, fid: FuncId, base: tuple) -> frozenset | None:
        """The project classes of the object ``self.f`` names in a method (``self.tokenizer.model =
        m``: a library object holds none), from what any store put in ``f``; None where not known."""
        method = self._method_of(fid, base[1][1]) if base[0] == "a" and base[1][0] == "n" else None
        if method is None:
            return None
        info = self.by_path[method[0]]
        values = []
        for sub in self._cone(("S", method[0], info.flows[method[1]].cls)):
            for owner, name in self.index.mro(self._ref(sub)):
                node = self.solver.ids.get(("fd", owner.path, name, base[2]))
                if node is not None and node in self.solver.full:
                    return None
                values.extend(self.solver.values(node) if node is not None else ())
        return self._instances(values)

    # -- helpers -----------------------------------------------------------------------------------
    def _site_targets(self, fid: FuncId) -> list[tuple[CallSite, list[FuncId]]]:
        found = self._targets.get(fid)
        if found is None:
            info = self.by_path.get(fid[0])
            fn = info.functions.get(fid[1]) if info is not None else None
            found = self._targets[fid] = [(site, self.graph.targets(fid[0], fid[1], site))
                                          for site in (fn.calls if fn is not None else ()) if not site.reference]
        return found

    def _implicit(self, caller: FuncId, callee: FuncId) -> bool:
        return callee in self.graph.linker.implicit.edges.get(caller, ())

    def _instances(self, values: list) -> frozenset | None:
        """The concrete classes of ``values`` (library objects, patched or not, add none); None if any is no instance."""
        out: set[ClassKey] = set()
        for v in values:
            if v[0] in ("I", "S"):
                out |= self._cone(v)
            elif v[0] not in OUTSIDE:
                return None
        return frozenset(out)

    def _cone(self, v: tuple) -> set[ClassKey]:
        if v[0] == "I":
            return {(v[1], v[2])}
        return {(v[1], v[2])} | {(info.path, name) for info, name in self.index.subclasses(self._ref((v[1], v[2])))}

    def _class_binds(self, cls: ClassKey, attr: str) -> bool:
        """Whether a class body along ``cls``'s MRO binds ``attr`` (a method, a property, a class
        attribute): then ``obj.attr`` is not only the fields."""
        for info, name in self.index.mro(self._ref(cls)):
            flow = info.flows.get(name)
            if attr in info.classes[name].methods or (flow is not None and attr in flow.locals):
                return True
        return False

    def _dynamic(self, cls: ClassKey) -> bool:
        """A class of the MRO answers attribute loads itself (``__getattr__``): any attribute may be anything."""
        return any(hook in info.classes[name].methods for info, name in self.index.mro(self._ref(cls))
                   for hook in ("__getattr__", "__getattribute__"))

    def _ref(self, cls: ClassKey):
        return self.by_path[cls[0]], cls[1]

    def _method(self, fid: FuncId) -> bool:
        """Whether ``fid`` is a plain method of a class: what a lookup on an instance finds."""
        info = self.by_path.get(fid[0])
        flow = info.flows.get(fid[1]) if info is not None else None
        return flow is not None and flow.fkind == "m" and flow.cls in info.classes

    def _closure(self, caller: FuncId, callee: FuncId) -> bool:
        """``callee`` is a closure of ``caller`` that sees its ``self``."""
        return callee[0] == caller[0] and callee[1].startswith(caller[1] + ".") and \
            self._self_name(callee) is not None and self._self_name(callee) == self._self_name(caller)

    def _self_name(self, fid: FuncId) -> str | None:
        method = self._method_of(fid, None)
        if method is None:
            return None
        return self.by_path[fid[0]].flows[method[1]].params[0]

    def _method_of(self, fid: FuncId, name: str | None) -> FuncId | None:
        """The method whose receiver ``name`` (its own, when None) is in ``fid``: ``fid`` itself, or
        the method a closure is nested in, where no scope between rebinds the name."""
        info = self.by_path.get(fid[0])
        flow = info.flows.get(fid[1]) if info is not None else None
        qual, between = fid[1], set()
        while flow is not None and flow.kind == "function":
            if flow.fkind == "m" and flow.params and flow.cls in info.classes:
                own = flow.params[0]
                return (fid[0], qual) if (name is None or own == name) and own not in between else None
            if not flow.parent:
                return None
            between |= set(flow.locals)
            qual = flow.parent
            flow = info.flows.get(qual)
        return None

def _union(a: State, b: State) -> State:
    return None if a is None or b is None else a | b


def captured_receivers(infos: list[ModuleInfo]) -> bool:
    """Whether any capture calls through a receiver (``model.step(...)``): what the walk needs."""
    return any(site.in_capture and site.expr[0] == "a" for info in infos for fn in info.functions.values()
               if fn.captures for site in fn.calls)
