"""Expressions as the points-to analysis reads them: a tiny, picklable IR of nested tuples.

Per-file facts (:mod:`.flows`) record what every assignment, return and call of a file moves
around, in this IR; the whole-program solver (:mod:`.pointsto`) evaluates it. Only what can carry
a class, a function, a bound method, a module, an instance or a container is kept -- and the
strings that may name one (``"str"``, ``"cat"`` below); other literals, arithmetic and comparisons
are ``None`` (they never hold a callable), which keeps summaries small. Tags (short: every summary is pickled):

- ``("n", name)``: a name, resolved when linking (function locals, enclosing functions, module
  globals, imports, builtins, as Python scopes them);
- ``("a", base, attr)``: an attribute; ``("s", base)``: an element (subscript, iteration, ``.get()``);
- ``("c", func, args, kwargs)``: a call's result; an argument is an IR or ``("*", ir)``, a keyword
  ``(name, ir)`` or ``("**", ir)``;
- ``("l", site, elements, callable)``: a container literal made at ``site`` (a file-wide number),
  ``callable`` for ``nn.Sequential``-like ones (calling it calls every element);
- ``("o", alternatives)``: ``a if c else b``, ``a or b``;
- ``("d", qualname)`` / ``("k", qualname)``: a def / class of this file;
- ``("i", dotted)``: an import (``..mod.name`` keeps its dots);
- ``("t", class_ir)``: an instance of an annotated class or a subclass (``model: Llama``);
- ``("la", ("t", class_ir))``: a container annotated as holding such instances (``list[Layer]``):
  one container per class, shared by every such annotation;
- ``("da", ("t", class_ir))``: a field annotated as a mapping of such instances (``self.kids: Dict[int,
  Node] = {}``): which class ``node.kids[k]`` is, for :mod:`.receivers` only (no points-to value);
- ``("sup", class_qualname)``: ``super()`` in a method of that class;
- ``("self", class_qualname)``: ``self`` in a method (an instance of the class or a subclass);
- ``("cls", class_qualname)``: ``cls`` in a classmethod (the class or a subclass);
- ``("g", base, prefix[, name])``: ``getattr(base, name)`` with a computed name: the attributes
  the names that reach ``name`` spell (``getattr(type(self), MODES[mode])``), and every field
  starting with the f-string's literal prefix;
- ``("str", text)``: an identifier-like string held in a container literal (``{"greedy": "_sample"}``,
  ``("q_proj", "k_proj")``) or passed as an argument (``run_workers("execute_model")``): the names a
  computed ``getattr`` may look up; and a dotted path anywhere (``"pkg.models.llama:Llama"``,
  ``MODELS = "pkg.models"``): a module or class a computed import may load (:mod:`.classpaths`);
- ``("cat", pieces)``: an f-string of literal texts and up to :data:`MAX_HOLES` expressions,
  ``f"{MODELS}.llama.Llama"``: the paths the strings reaching the expressions spell (``("modname",)``
  is ``__name__``, the module's dotted name);
- ``("dec", decorator, inner)``: ``@decorator`` applied to ``inner`` (the call runs; the name holds its
  result and ``inner``: a decorator graphlint cannot see returns the function);
- a lambda is ``("d", qualname)`` of a scope of its own (``<lambdaN>``, :meth:`.flows.FlowRecorder.lambda_scope`):
  a call binds its parameters and gets its body's value, as a def's;
- ``("scan", paths, prefixed, recursive)`` / ``("pkgpath",)``: ``pkgutil.iter_modules``, ``__path__`` (:mod:`.pkgscan`);
- ``("x",)``: an instance of a class of the standard library or the numeric stack
  (``nn.Linear(4, 4)``, ``torch.cuda.Stream()``): a library object, which calling runs no project
  code (other calls of those libraries are ``None``: tensors and numbers hold no callable).
"""

from __future__ import annotations

import sys
from typing import Callable

import libcst as cst

from graphlint.static.classpaths import path_like
from graphlint.static.libir import library_ir
from graphlint.static.pkgscan import OWN_PATH

IR = tuple
#: top-level modules whose calls are opaque to the analysis (their results hold nothing it tracks):
#: the standard library and the numeric stack an engine imports. Dropped when a file is
#: summarized, which keeps the facts of library-heavy code small; the calls that pass a callable
#: through (:data:`KEPT`) stay.
EXTERNAL_ROOTS = frozenset(getattr(sys, "stdlib_module_names", ())) | {"torch", "numpy", "triton", "cutlass"}
FOREIGN = ("x",)
#: annotations of a mapping whose second argument types its values (``Dict[int, Node]``)
MAPPINGS = frozenset(("dict", "mapping", "mutablemapping", "ordereddict", "defaultdict"))
#: the attribute ``setattr(obj, name, v)`` stores with a computed ``name`` (no load reads it back)
ANY_ATTR = "?"
KEPT = frozenset(("compile", "make_graphed_callables", "partial", "MethodType", "Thread", "Process", "Timer",
                  "ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict", "OrderedDict", "deque",
                  "script", "cached_property", "SimpleNamespace", "defaultdict",
                  "lru_cache", "cache", "wraps", "import_module", "deepcopy"))
#: the most expressions of an f-string that may spell a path (:meth:`IRBuilder.path_string`)
MAX_HOLES = 2
CONSTANTS = frozenset(("True", "False", "None", "NotImplemented", "Ellipsis", "__name__", "__file__"))
#: the builtins whose calls the linker models (values flow through them, :mod:`.flowlink`); every
#: other builtin call (``isinstance``, ``len``, ``print``...) is opaque
BUILTINS_KEPT = frozenset(("list", "tuple", "set", "frozenset", "sorted", "reversed", "iter", "dict", "next", "type",
                           "enumerate", "zip", "setattr", "staticmethod", "classmethod", "property", "map", "filter"))
OPAQUE_BUILTINS = frozenset(n for n in dir(__import__("builtins")) if not n.startswith("_")) - BUILTINS_KEPT
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
#: container displays: ``[Block()] * n`` and ``[a] + rest`` hold their elements (other arithmetic holds nothing)
DISPLAYS = (cst.List, cst.Tuple, cst.ListComp)


class IRBuilder:
    """cst expressions -> IR. ``bind`` is told the names a comprehension or walrus binds (they
    become locals of the enclosing function: flow-insensitive, as the whole analysis is);
    ``cls`` answers the enclosing class, for ``super()``."""

    def __init__(self, bind: Callable[[cst.BaseExpression, IR | None], None], cls: Callable[[], str],
                 imports: dict[str, str], is_tensor: Callable[[cst.BaseExpression], bool],
                 object_method: Callable[[cst.Attribute], bool] = lambda func: False):
        self.bind, self.cls, self.imports, self.is_tensor = bind, cls, imports, is_tensor
        #: ``kv_cache.get_pos()`` on a parameter only presumed a tensor: an object's method (:func:`.params.object_method`)
        self.object_method = object_method
        self.lam: Callable[[cst.Lambda], str] | None = None  # a lambda -> its scope's qualname
        self.site = 0
        self.memo: dict[int, IR | None] = {}  # per statement: nested calls are converted once
        #: every IR tuple made in this file, by value: equal subtrees are one object, which the
        #: summary's pickle then writes once (``self.x`` is in most statements of a class)
        self.shared: dict[IR, IR] = {}

    def new_site(self) -> int:
        self.site += 1
        return self.site

    def clear(self) -> None:
        self.memo.clear()

    def expr(self, node: cst.BaseExpression | None) -> IR | None:
        if node is None:
            return None
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        out = self._expr(node)
        if out is not None:
            out = self.shared.setdefault(out, out)
        self.memo[key] = out
        return out

    def _expr(self, node: cst.BaseExpression) -> IR | None:
        kind = type(node)
        if kind is cst.Name:
            return OWN_PATH if node.value == "__path__" else None if node.value in CONSTANTS else ("n", node.value)
        if kind is cst.Attribute:
            base = self.expr(node.value)
            return ("a", base, node.attr.value) if base is not None else None
        if kind is cst.Call:
            return self.call(node)
        if kind is cst.Subscript:
            base = self.expr(node.value)
            if base is None:
                return None
            if any(type(el.slice) is cst.Slice for el in node.slice):
                return base  # ``self.layers[:n]``: a slice holds the same elements
            return ("s", base)
        if kind in (cst.List, cst.Tuple, cst.Set):
            elements = self.elements(node.elements)
            if kind is cst.Tuple and not elements:
                return None  # an immutable container of nothing tracked holds nothing, ever
            return ("l", self.new_site(), elements, 0)
        if kind is cst.Dict:
            values = tuple(v for el in node.elements if isinstance(el, cst.DictElement)
                           and (v := self.element(el.value)) is not None)
            stars = tuple(("*s", v) for el in node.elements if isinstance(el, cst.StarredDictElement)
                          and (v := self.expr(el.value)) is not None)
            return ("l", self.new_site(), values + stars, 0)
        if kind in COMPREHENSIONS:
            return self.comprehension(node)
        if kind is cst.IfExp:
            return self.union((self.expr(node.body), self.expr(node.orelse)))
        if kind is cst.BooleanOperation:
            return self.union((self.expr(node.left), self.expr(node.right)))
        if kind is cst.BinaryOperation and type(node.operator) in (cst.Multiply, cst.Add) \
                and (type(node.left) in DISPLAYS or type(node.right) in DISPLAYS):
            return self.union((self.expr(node.left), self.expr(node.right)))  # ``[Block()] * n``, ``[a] + rest``
        if kind is cst.Lambda:  # a function of its own, its parameters bound by each call (:mod:`.flows`)
            return ("d", self.lam(node)) if self.lam is not None else None
        if kind is cst.SimpleString or kind is cst.FormattedString:
            return self.path_string(node)
        if kind is cst.Await:
            return self.expr(node.expression)
        if kind is cst.NamedExpr:
            value = self.expr(node.value)
            self.bind(node.target, value)
            return value
        return None

    @staticmethod
    def union(alternatives: tuple) -> IR | None:
        alts = tuple(a for a in alternatives if a is not None)
        if not alts:
            return None
        return alts[0] if len(alts) == 1 else ("o", alts)

    def element(self, node: cst.BaseExpression) -> IR | None:
        """An element of a container literal: strings that could name an attribute are kept."""
        if type(node) is cst.SimpleString and node.raw_value.isidentifier():
            return ("str", node.raw_value)
        return self.expr(node)

    def path_string(self, node: cst.SimpleString | cst.FormattedString) -> IR | None:
        """A string that may name a module or a class by its dotted path (:func:`.classpaths.path_like`),
        or an f-string with one expression whose literal parts may belong to one."""
        if type(node) is cst.SimpleString:
            text = node.raw_value if node.prefix.lower() in ("", "r", "u") else ""
            return ("str", text) if path_like(text) else None
        pieces: list = []
        for part in node.parts:
            if type(part) is cst.FormattedStringText:
                if pieces and type(pieces[-1]) is str:
                    pieces[-1] += part.value
                else:
                    pieces.append(part.value)
                continue
            if part.format_spec is not None or part.conversion is not None:
                return None
            inner = part.expression
            value = ("modname",) if type(inner) is cst.Name and inner.value == "__name__" else self.expr(inner)
            if value is None:
                return None
            pieces.append(value)
        holes = sum(type(p) is not str for p in pieces)
        if not 1 <= holes <= MAX_HOLES or not path_like("".join(p if type(p) is str else "x" for p in pieces)):
            return None
        return ("cat", tuple(pieces))

    def elements(self, elements) -> tuple:
        out = []
        for el in elements:
            value = self.element(el.value)
            if value is not None:
                out.append(("*s", value) if isinstance(el, cst.StarredElement) else value)
        return tuple(out)

    def comprehension(self, node) -> IR:
        clause = node.for_in
        while clause is not None:  # ``for k, v in d.items()``: the targets are (flow-insensitive) locals
            source = self.expr(clause.iter)
            self.bind(clause.target, ("s", source) if source is not None else None)
            clause = clause.inner_for_in
        elt = self.expr(node.value if isinstance(node, cst.DictComp) else node.elt)
        if elt is None and isinstance(node, cst.GeneratorExp):
            return None  # a generator of nothing tracked yields nothing, ever
        return ("l", self.new_site(), (elt,) if elt is not None else (), 0)

    def call(self, node: cst.Call) -> IR | None:
        func = node.func
        if type(func) is cst.Name and func.value == "super" and (not node.args or own_super(node, self.cls())):
            cls = self.cls()
            return ("sup", cls) if cls else None
        if type(func) is cst.Name and func.value == "getattr" and len(node.args) >= 2:
            base, name = self.expr(node.args[0].value), node.args[1].value
            if base is None:
                return None
            if isinstance(name, cst.SimpleString):
                got = ("a", base, name.raw_value)
            elif isinstance(name, cst.FormattedString):
                first = name.parts[0] if name.parts else None
                got = ("g", base, first.value if isinstance(first, cst.FormattedStringText) else "")
            else:
                names = self.expr(name)
                got = ("g", base, "", names) if names is not None else ("g", base, "")
            default = self.expr(node.args[2].value) if len(node.args) > 2 else None
            return self.union((got, default))
        kept, value = library_ir(node, self.imports, self.expr, self.union)  # :mod:`.libir`
        if kept:
            return value
        if self.opaque(func):
            return FOREIGN if _last(func)[:1].isupper() and self.external(func) else None
        f = self.expr(func)
        if f is None:
            return None
        return ("c", f, *self.arguments(node.args))

    def opaque(self, func: cst.BaseExpression) -> bool:
        """A call of the standard library or the numeric stack (``torch.zeros``, ``os.path.join``),
        or a tensor's method (``x.view(...)``): nothing the analysis tracks comes out."""
        root = func
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is not cst.Name:
            return False
        if func is root and root.value in OPAQUE_BUILTINS and root.value not in self.imports:
            return True
        last = func.attr.value if type(func) is cst.Attribute else func.value
        dotted = self.imports.get(root.value)
        if dotted is not None and dotted.split(".", 1)[0] in EXTERNAL_ROOTS and last not in KEPT:
            return True
        return type(func) is cst.Attribute and type(func.value) is cst.Name and self.is_tensor(func.value) \
            and not self.object_method(func)

    def arguments(self, args) -> tuple[tuple, tuple]:
        positional, keywords = [], []
        starred = False  # after ``*xs`` positions are unknown
        for arg in args:
            # a literal name passed on (``self._run_workers("execute_model")``) is a ``("str", ...)``:
            # the helper's ``getattr(worker, method)`` looks that attribute up (:mod:`.flowlink`)
            value = self.element(arg.value) if not arg.star else self.expr(arg.value)
            if arg.star == "**":
                if value is not None:
                    keywords.append(("**", value))
            elif arg.keyword is not None:
                keywords.append((arg.keyword.value, value))
            elif starred:
                continue
            elif arg.star == "*":
                starred = True
                if value is not None:
                    positional.append(("*", value))
            else:
                positional.append(value)
        while positional and positional[-1] is None:
            positional.pop()
        return tuple(positional), tuple(k for k in keywords if k[1] is not None)

    def annotation(self, node: cst.BaseExpression | None) -> IR | None:
        """``Llama``, ``Optional["Cache"]``, ``A | None``, ``list[Layer]`` -> what a value so
        annotated holds: an instance of the class (or a subclass), or a container of them."""
        if node is None:
            return None
        if type(node) is cst.SimpleString:
            text = node.raw_value
            return ("t", ("n", text)) if text.isidentifier() and text[:1].isupper() else None
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:
            return self.union((self.annotation(node.left), self.annotation(node.right)))
        if type(node) is cst.Subscript:
            wrapper = _last(node.value)
            items = tuple(self.annotation(el.slice.value) for el in node.slice if type(el.slice) is cst.Index)
            if wrapper in ("Optional", "Union"):
                return self.union(items)
            if wrapper.lower() in ("list", "sequence", "mutablesequence", "tuple", "iterable", "collection",
                                   "modulelist"):
                elements = tuple(i for i in items if i is not None)
                return ("la", elements[0]) if len(elements) == 1 and elements[0][0] == "t" else (
                    ("l", self.new_site(), elements, 0) if elements else None)
            return None
        if not _last(node)[:1].isupper() or self.external(node):
            return None  # a builtin, or a class of the libraries calls into are opaque for: no value of ours
        cls = self.expr(node)
        return ("t", cls) if cls is not None else None

    def mapping(self, node: cst.BaseExpression) -> IR | None:
        """``Dict[int, Node]`` (or ``Optional`` of one) -> ``("da", ("t", Node))``: a field's
        annotation only (:meth:`.flows.FlowRecorder.annotated`), for :mod:`.receivers`."""
        if not isinstance(node, cst.Subscript):
            return None
        items = [el.slice.value for el in node.slice if isinstance(el.slice, cst.Index)]
        wrapper = _last(node.value)
        if wrapper == "Optional" and len(items) == 1:
            return self.mapping(items[0])
        if wrapper.lower() not in MAPPINGS or len(items) != 2:
            return None
        value = self.annotation(items[1])
        return ("da", value) if value is not None and value[0] == "t" else None

    def external(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` (``torch.Tensor``, ``Tensor``, ``Optional``) names something imported
        from the standard library or the numeric stack (:data:`EXTERNAL_ROOTS`)."""
        while type(node) is cst.Attribute:
            node = node.value
        dotted = self.imports.get(node.value) if type(node) is cst.Name else None
        return dotted is not None and dotted.split(".", 1)[0] in EXTERNAL_ROOTS


def _last(node: cst.BaseExpression) -> str:
    while type(node) is cst.Attribute:
        return node.attr.value
    return node.value if type(node) is cst.Name else ""


def last_name(expr: IR) -> str | None:
    """The name a callee's IR ends in: ``f`` of ``("n", "f")`` and of ``("a", base, "f")``, else None."""
    if expr[0] == "n":
        return expr[1]
    if expr[0] == "a":
        return expr[2]
    return None


def render(ir: IR | None) -> str:
    """An IR expression as the code it came from, roughly: ``self.model.forward``, ``REG[...]``."""
    if ir is None:
        return "..."
    tag = ir[0]
    if tag == "n":
        return ir[1]
    if tag == "a":
        return f"{render(ir[1])}.{ir[2]}"
    if tag == "s":
        return f"{render(ir[1])}[...]"
    if tag == "c":
        return f"{render(ir[1])}(...)"
    if tag == "g":
        return f"getattr({render(ir[1])}, ...)"
    if tag == "i":
        return ir[1]
    if tag in ("self", "cls"):
        return tag
    if tag == "sup":
        return "super()"
    return "..."


def own_super(node: cst.Call, cls: str) -> bool:
    """``super(C, self)`` (or ``cls``) with ``C`` the enclosing class: the Python 2 spelling of
    ``super()``, as older model code writes it; another class named there skips part of the MRO
    and stays unresolved."""
    if not cls or len(node.args) != 2:
        return False
    first, second = node.args[0].value, node.args[1].value
    return type(first) is cst.Name and first.value == cls.rpartition(".")[2] \
        and type(second) is cst.Name and second.value in ("self", "cls")

