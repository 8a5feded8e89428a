"""Per-file facts for the points-to analysis: what each scope's statements move around.

While the walker passes a file it tells a :class:`FlowRecorder` every scope it enters (module, class
body, function), every binding (assignments pair by pair, ``for`` targets, ``with ... as``, imports,
defs and classes with their decorators, parameters with their defaults and annotations), every
``return``/``yield`` and every call. The recorder keeps them per scope as :class:`.facts.ScopeFlow`
records of :mod:`.flowir` tuples: small, picklable, cached with the file's summary. Nothing is resolved
here -- a name may be bound by another file; :mod:`.pointsto` solves all files together when linking.

Statements (``ScopeFlow.stmts``): ``("=", target, value)`` with a target ``("n", name)``,
``("a", base, attr)`` or ``("s", base)`` (a store into a container); ``("e", call)`` (a call whose
result is not bound: its arguments still flow into the callee); ``("r", value)`` (``return`` and ``yield``);
``("*", dotted)`` (``from x import *``); ``("in", container)`` (``k in container``: its ``__contains__``
runs); ``("set", target)`` (a store of nothing tracked: the object's ``__setattr__``/``__setitem__`` runs).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphlint.static.facts import ScopeFlow
from graphlint.static.flowir import ANY_ATTR, EXTERNAL_ROOTS, IR, IRBuilder
from graphlint.static.installed import dict_store
from graphlint.static.keyedreturns import bound_in, handed_on, keyed_test
from graphlint.static.lambdabodies import lambda_callees
from graphlint.static import policies
from graphlint.static.names import dotted_name, record_import
from graphlint.static.rewrapped import Rebinds
from graphlint.static.typenarrow import Unless

#: decorators that change how a method binds (the rest are applied as calls, see ``flowir``)
METHOD_KINDS = {"staticmethod": "s", "classmethod": "c", "property": "p", "cached_property": "p",
                "functools.cached_property": "p", "abc.abstractproperty": "p"}

#: methods Python makes classmethods without a decorator
SMALL_SCOPE = 16  # names a scope may bind and still keep them as a tuple
IMPLICIT_CLASSMETHODS = frozenset(("__init_subclass__", "__class_getitem__"))


class FlowRecorder:
    """Collects one file's :class:`ScopeFlow` records into ``flows`` (the summary's)."""

    def __init__(self, flows: dict[str, ScopeFlow], imports: dict[str, str], is_tensor, object_method=None):
        self.flows = flows
        self.ir = IRBuilder(self._bind_name, self._class, imports, is_tensor, *([object_method] if object_method else []))
        self.stack: list[ScopeFlow] = []
        #: inside the body of a ``try`` whose handlers catch a failed import: its imports are optional
        self.optional = 0
        self.optional_imports: set[str] = set()  # what they import (dotted, as ``ModuleInfo.imports``)
        self.names: list[str] = []  # qualnames, parallel to ``stack``
        self.lambdas: dict[int, str] = {}  # id of a lambda node -> its scope (:meth:`lambda_scope`)
        self._described: set[int] = set()  # ids of calls whose records a subscript store tied (:meth:`described`)
        #: told (qualname, [(callee IR, call, whole body?)] of its body) of every lambda scope made
        self.on_lambda: Callable[[str, list], None] | None = None
        #: qualname -> parameters a return is keyed by (:mod:`.keyedreturns`): the summary's
        self.keyed_returns: dict[str, set[str]] = {}
        self.unless = Unless()  # ``if not isinstance(param, C):`` bodies being walked (:mod:`.typenarrow`)
        self._keyed: list[tuple] = []  # (scope depth, parameter, constants) of the ``if`` bodies being walked
        self._defs: dict[str, cst.FunctionDef] = {}  # the defs being walked, for :func:`.keyedreturns.bound_in`
        self._bound: dict[str, tuple] = {}  # qualname -> (its def, ``bound_in`` of it): one walk per def
        self._forwards: list[tuple] = []  # (qualname, statement index, parameter) of returns handing one on
        self.ir.lam = self.lambda_scope
        self.rebinds, self.looping = Rebinds(), lambda: False  # ``model = Runner(model)`` (:mod:`.rewrapped`)
        self.begin("<module>", ScopeFlow(kind="module"))

    # -- scopes ------------------------------------------------------------------------------
    def begin(self, qual: str, flow: ScopeFlow) -> None:
        self.flows[qual] = flow
        self.rebinds.begin(flow.kind)
        self.stack.append(flow)
        self.names.append(qual)

    def end(self) -> None:
        flow = self.stack.pop()
        qual = self.names.pop()
        self.rebinds.end()
        self._defs.pop(qual, None)
        while self._forwards and self._forwards[-1][0] == qual:  # a call handing on a parameter no test keys
            _, at, param = self._forwards.pop()
            if param not in self.keyed_returns.get(qual, ()):
                flow.stmts[at] = flow.stmts[at][:2]
        # a sorted tuple while small (a set of one name is 216 bytes, every scope of every file is held
        # at once while linking, ``in`` on a few names as fast), a frozenset beyond
        flow.locals = tuple(sorted(flow.locals)) if len(flow.locals) <= SMALL_SCOPE else frozenset(flow.locals)

    @property
    def scope(self) -> ScopeFlow:
        return self.stack[-1]

    def _class(self) -> str:
        """The class whose method (or nested function) is being walked, for ``super()``."""
        for flow, name in zip(reversed(self.stack), reversed(self.names)):
            if flow.kind == "function" and flow.cls:
                return flow.cls
        return ""

    def _parent(self) -> str:
        """The nearest enclosing function (class bodies do not enclose their methods' names)."""
        for flow, name in zip(reversed(self.stack), reversed(self.names)):
            if flow.kind == "function":
                return name
        return ""

    def function(self, stmt: cst.FunctionDef, qual: str, cls: str) -> None:
        """Enter a def: bind it in the enclosing scope, then open its scope with its parameters."""
        kind = ""
        in_class = self.scope.kind == "class"
        decorators = []
        for dec in stmt.decorators:
            name = dotted_name(dec.decorator) or ""
            if in_class and name in METHOD_KINDS:
                kind = METHOD_KINDS[name]
            elif name.endswith((".setter", ".deleter")):
                kind = "x"  # rebinding a property's setter: the name keeps the getter
            else:
                decorators.append(dec.decorator)
        if in_class and not kind and stmt.name.value in IMPLICIT_CLASSMETHODS:
            kind = "c"
        if kind != "x":
            self.bind_def(stmt.name.value, ("d", qual), decorators)
        method = in_class and kind != "s"
        flow = ScopeFlow(kind="function", parent=self._parent(), cls=cls if in_class else "",
                         fkind=(kind or "m") if in_class and kind != "x" else ("m" if in_class else ""))
        self.begin(qual, flow)
        self._defs[qual] = stmt
        self.parameters(flow, stmt.params, method)
        if stmt.returns is not None:  # ``def make(...) -> Backend``: an instance of it or a subclass
            typed = self.ir.annotation(stmt.returns.annotation)
            if typed is not None:
                self.add(("r", typed))
        self.ir.clear()

    def lambda_scope(self, node: cst.Lambda) -> str:
        """A lambda is a function of its own (``self.step = lambda model, x: model.verify(x)``): a scope
        whose parameters a call binds and which returns its body, named ``<lambdaN>`` inside the enclosing
        scope (a method when it is bound in a class body). Made once per node, whichever asks first (the
        expression's IR or the walker); ``on_lambda`` is told its name and its body's calls."""
        qual = self.lambdas.get(id(node))
        if qual is not None:
            return qual
        outer = self.names[-1]
        qual = self.lambdas[id(node)] = f"{outer + '.' if outer != '<module>' else ''}<lambda{len(self.lambdas)}>"
        in_class = self.scope.kind == "class"
        flow = ScopeFlow(kind="function", parent=self._parent(), cls=self.scope.cls if in_class else "",
                         fkind="m" if in_class else "")
        self.begin(qual, flow)
        try:
            self.parameters(flow, node.params, in_class)
            body = self.ir.expr(node.body)
            if body is not None:
                self.add(("r", body))
            callees = lambda_callees(self, node)
        finally:
            self.end()
        if self.on_lambda is not None:
            self.on_lambda(qual, callees)
        return qual

    def parameters(self, flow: ScopeFlow, params: cst.Parameters, method: bool) -> None:
        """A def's or a lambda's parameters, their defaults and annotations (``self``/``cls`` are
        bound when linking, from ``fkind`` and ``cls``)."""
        positional = [*params.posonly_params, *params.params]
        flow.params = tuple(p.name.value for p in positional)
        flow.kwonly = tuple(p.name.value for p in params.kwonly_params)
        if isinstance(params.star_arg, cst.Param):
            flow.vararg = params.star_arg.name.value
        if params.star_kwarg is not None:
            flow.kwarg = params.star_kwarg.name.value
        flow.locals = set(flow.params) | set(flow.kwonly) | {n for n in (flow.vararg, flow.kwarg) if n}
        self.rebinds.untrack(*flow.locals)
        for i, param in enumerate((*positional, *params.kwonly_params)):
            target = ("n", param.name.value)
            if i == 0 and method and positional and param is positional[0]:
                continue  # ``self`` / ``cls``: bound when linking, from ``fkind`` and ``cls``
            default = self.ir.expr(param.default)
            if default is not None:
                self.add(("=", target, default))
            if param.annotation is not None:
                typed = self.ir.annotation(param.annotation.annotation)
                if typed is not None:
                    self.add(("=", target, typed))

    def klass(self, stmt: cst.ClassDef, qual: str) -> None:
        decorators = [d.decorator for d in stmt.decorators]
        self.bind_def(stmt.name.value, ("k", qual), decorators)
        self.begin(qual, ScopeFlow(kind="class", parent=self._parent(), cls=qual, locals=set()))

    def bind_def(self, name: str, value: IR, decorators: list) -> None:
        for dec in reversed(decorators):  # the one nearest the def applies first
            deco = self.ir.expr(dec)
            if deco is not None:
                value = ("dec", deco, value)
        self.scope.locals.add(name)
        self.rebinds.untrack(name)
        self.add(("=", ("n", name), value))
        self.ir.clear()

    # -- statements ----------------------------------------------------------------------------
    def add(self, stmt: tuple) -> None:
        self.scope.stmts.append(stmt)

    def statement(self) -> None:
        """A new statement starts: nodes of the last one may be freed (the IR memo keys on ids)."""
        self.ir.clear()

    def assign(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """One pair of an assignment (the call recorder takes ``a, b = x, y`` apart); a name holds an identifier-like
        string (what ``getattr(self, name)`` looks up). ``__all__`` binds nothing a call could run (only names)."""
        if isinstance(target, cst.Name) and target.value == "__all__":
            self.scope.locals.add("__all__")
            return
        if type(target) is cst.Subscript and type(value) is cst.Call and len(target.slice) == 1 \
                and type(target.slice[0].slice) is cst.Index:  # ``policy[Cls] = Desc(method_replacement={...})``
            self.described(value, target.slice[0].slice.value)
        self._bind(target, None if value is None else self.ir.element(value) if type(target) is cst.Name else self.ir.expr(value))

    def described(self, call: cst.Call, key: cst.BaseExpression | None = None) -> None:
        """Methods a record replaces (:mod:`.policies`): ``("rep", method, value, classes)``."""
        if id(call) in self._described:
            return
        if key is not None:  # the call's own visit comes next: its arguments are not the classes
            self._described.add(id(call))
        for method, value, classes in policies.records(call, key):
            fn, tied = self.ir.expr(value), tuple(ir for c in classes if (ir := self.ir.expr(c)) is not None)
            if fn is not None and tied:
                self.add(("rep", method, fn, tied))

    def _bind_name(self, target: cst.BaseExpression, value: IR | None) -> None:
        self._bind(target, value)

    def _bind(self, target: cst.BaseExpression, value: IR | None) -> None:
        kind = type(target)
        if kind is cst.Name:
            self.scope.locals.add(target.value)
            bound = self.rebinds.bind(self.scope, target.value, value, self.looping())
            self.scope.stmts.extend(bound)
            self.unless.note(self, target.value, len(bound))
        elif kind in (cst.Tuple, cst.List):
            known = True  # positions count until a starred target: ``a, *rest, b``
            for i, el in enumerate(target.elements):  # ``a, b = pair()``: each name may hold any element,
                inner = el.value  # or its own position's where the tuple keeps them apart (``zip``)
                known = known and not isinstance(el, cst.StarredElement)
                item = ("s", value, i) if known else ("s", value)
                self._bind(inner, value if isinstance(el, cst.StarredElement) or value is None else item)
        elif kind is cst.StarredElement:
            self._bind(target.value, value)
        elif value is None and kind in (cst.Attribute, cst.Subscript):
            self._store_nothing(target)
        elif value is not None and kind is cst.Attribute:
            base = self.ir.expr(target.value)
            if base is not None:
                self.add(("=", ("a", base, target.attr.value), value))
        elif value is not None and kind is cst.Subscript:
            base = self.ir.expr(target.value)
            if base is not None:  # ``obj.__dict__[k] = v`` stores the attribute ``k`` (:mod:`.installed`)
                self.add(("=", dict_store(base, target.slice) or ("s", base), value))

    def _store_nothing(self, target: cst.Attribute | cst.Subscript) -> None:
        """``out["k"] = 0``, ``out.step = 1``: no value the analysis tracks, but the object's
        ``__setitem__``/``__setattr__`` runs (``self.x = 0`` is left out: most classes' ``__init__``
        is full of them, and a class that hooks its own stores is rare)."""
        if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
            return
        base = self.ir.expr(target.value)
        if base is not None:
            self.add(("set", ("a", base, target.attr.value) if type(target) is cst.Attribute else ("s", base)))

    def annotated(self, target: cst.BaseExpression, annotation: cst.BaseExpression) -> None:
        """``self.model: Llama = model``, ``cache: Cache`` in a dataclass body: the annotated class."""
        typed = self.ir.annotation(annotation)
        if typed is None and type(target) is cst.Attribute:
            typed = self.ir.mapping(annotation)  # ``self.kids: Dict[int, Node] = {}``
        if typed is not None:
            self._bind(target, typed)
        elif isinstance(target, cst.Name):
            self.scope.locals.add(target.value)

    def loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        source = self.ir.expr(iterable)
        self._bind(target, ("s", source) if source is not None else None)
        self.rebinds.untrack_target(target)

    def call(self, node: cst.Call) -> IR | None:
        """Every call: its IR (the callee part is what the call graph resolves)."""
        ir = self.ir.expr(node)
        func, args = node.func, node.args
        if args:
            self.described(node)
        if (type(func) is cst.Name and func.value == "setattr" and len(args) == 3
                and isinstance(args[1].value, cst.SimpleString)):  # ``setattr(obj, "name", v)``
            obj, value = self.ir.expr(args[0].value), self.ir.expr(args[2].value)
            if obj is not None and value is not None:
                self.add(("=", ("a", obj, args[1].value.raw_value), value))
        elif type(func) is cst.Name and func.value == "setattr" and len(args) == 3:  # a computed name
            obj, value = self.ir.expr(args[0].value), self.ir.expr(args[2].value)
            if obj is not None and value is not None:
                self.add(("=", ("a", obj, ANY_ATTR), value))
        if ir is not None and ir[0] == "c":
            if ir[2] or ir[3]:  # arguments flow into the callee; the callee alone is the call site's
                self.add(("e", ir))
            return ir[1]
        return None

    def use(self, node: cst.BaseExpression, top: bool = True) -> None:
        """An expression whose value no statement records (``if cache.is_static:``, ``key in out``,
        ``x = a.flag and not b.flag``): the loads in it still run code (a property's getter,
        ``__getitem__``, ``__contains__``), recorded as ``("e", load)`` and ``("in", container)``.
        ``top``: the expression itself is such a load (not when its value is assigned)."""
        kind = type(node)
        if kind in (cst.Attribute, cst.Subscript):
            if top:
                ir = self.ir.expr(node)
                if ir is not None:
                    self.add(("e", ir))
        elif kind is cst.Comparison:
            self.use(node.left)
            for target in node.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)):
                    ir = self.ir.expr(target.comparator)
                    if ir is not None:
                        self.add(("in", ir))
                self.use(target.comparator)
        elif kind in (cst.BooleanOperation, cst.BinaryOperation):
            self.use(node.left)
            self.use(node.right)
        elif kind is cst.UnaryOperation:
            self.use(node.expression)

    def returns(self, value: cst.BaseExpression | None, keyed: bool = False) -> None:
        """``return`` (``keyed``: a ``return`` statement, which an enclosing ``if param == C:`` keys)
        and ``yield``."""
        ir = self.ir.expr(value) if value is not None else None
        if ir is None:
            return
        guard = self._keyed[-1] if keyed and self._keyed else None
        if guard is not None and guard[0] == len(self.stack):
            self.keyed_returns.setdefault(self.names[-1], set()).add(guard[1])
            self.add(("r", ir, guard[1], guard[2]))
        elif keyed and ir[0] == "c" and self.scope.kind == "function" and (param := handed_on(value, self.scope.params)):
            # ``return super().builder(op)``: the key reaches the callee (kept if ``op`` keys a return, :meth:`end`)
            self._forwards.append((self.names[-1], len(self.scope.stmts), param))
            self.add(("r", ir, param, None))
        else:
            self.add(("r", ir))

    def keyed_begin(self, test: cst.BaseExpression) -> bool:
        """An ``if`` body starts: True (and its returns keyed until :meth:`keyed_end`) when its test
        compares a parameter the function never rebinds with constants (:mod:`.keyedreturns`)."""
        flow = self.scope
        if flow.kind != "function" or not flow.params:
            return False
        found = keyed_test(test, (*flow.params, *flow.kwonly))
        node = self._defs.get(self.names[-1]) if found is not None else None
        bound = self._bound.get(self.names[-1]) if node is not None else (node, ())
        if bound is None or bound[0] is not node:
            bound = self._bound[self.names[-1]] = (node, bound_in(node))
        if node is None or found[0] in bound[1]:
            return False
        self._keyed.append((len(self.stack), *found))
        return True

    def keyed_end(self) -> None:
        self._keyed.pop()

    def imported(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            module = dotted_name(node.module) if node.module is not None else ""
            self.add(("*", "." * len(node.relative) + (module or "")))
            return
        bound: dict[str, str] = {}
        record_import(node, bound)  # the names an import binds, as the rest of the analysis reads them
        for local, dotted in bound.items():
            self._import(local, dotted)

    def _import(self, local: str, dotted: str) -> None:
        """The name is bound either way; an import of the standard library or the numeric stack
        holds no value of ours (their calls are opaque, see ``flowir``), so it records nothing."""
        self.scope.locals.add(local)
        self.rebinds.untrack(local)
        if self.optional:
            self.optional_imports.add(dotted)
        if dotted.startswith(".") or dotted.split(".", 1)[0] not in EXTERNAL_ROOTS:
            self.add(("=", ("n", local), ("i", dotted)))

    def globals_(self, names: list[str], enclosing: bool = False) -> None:
        """``global x`` / ``nonlocal x``: the name is not a local of this scope; a ``nonlocal`` one
        is the enclosing function's (a lazily built closure: ``nonlocal f; f = torch.compile(fn)``)."""
        self.scope.outer = (*self.scope.outer, *names)
        if enclosing:
            self.scope.enclosing = (*self.scope.enclosing, *names)


#: what a handler must catch for the ``try`` body's imports to be optional (the package may be missing)
IMPORT_ERRORS = frozenset(("ImportError", "ModuleNotFoundError", "Exception", "BaseException"))


def catches_import_error(stmt: cst.Try | cst.TryStar) -> bool:
    """Whether a handler of ``stmt`` catches a failed import: ``except ImportError``, a tuple holding
    it, ``except Exception`` or a bare ``except``."""
    for handler in stmt.handlers:
        if handler.type is None:
            return True
        types = handler.type.elements if isinstance(handler.type, cst.Tuple) else (handler.type,)
        for t in types:
            node = t.value if isinstance(t, cst.Element) else t
            if (dotted_name(node) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS:
                return True
    return False
