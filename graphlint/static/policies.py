"""Methods a load-time policy replaces by a function described as data.

Sharding and patching frameworks describe a replacement instead of making it: a record (a dict
literal ``{"forward": fast_forward}``, often inside a description object
``Desc(method_replacement={...})``) names the method and holds the function, and the record is tied
to the class it is for -- the class handed to the same call (``add_replacement(description={...},
target_key=LlamaForCausalLM)``) or the key it is stored under (``policy[Llama] = Desc(...)``). A
sharder later walks the model and applies it (``setattr(module, name, MethodType(fn, module))``),
often in code outside the checked paths. No value flow reaches the model from the record, so the
function was never a target of the model's calls.

**The rule (decided).** A record's function is a replacement of ``cls.method`` for every class the
record is tied to:

- a *project* class: the function is bound as that class's attribute (as ``MethodType`` binds it:
  its first parameter is the instance), so calls of the method on the class's instances run it --
  a sound tie, evidence like any other;
- no project class (a library class, ``transformers``' ``LlamaForCausalLM``, whose instances the
  analysis holds only as library objects): a ``forward`` replacement may run wherever a library
  model is called, as code installed into one does (:mod:`.installed`), but which policy applies to
  which model is data the analysis does not read -- a family of policies, any class. Those targets
  are *weak*: code reached only through them keeps its findings as warnings (:mod:`.contexts`).
  So are those of a project class's method that records replace by different functions (a family of
  policies -- ``DiffusionPipe.forward`` by one per pipeline -- chosen by a key the analysis does not
  decide).

Records are found when summarising (:func:`records`): a string key that is an identifier mapped to
an expression, in a dict literal passed to a call (or to a call passed to one) together with at
least one other name or attribute spelled as a class (the class candidates), or in a call stored under a
subscript.
"""

from __future__ import annotations

import libcst as cst

FuncId = tuple[str, str]
#: values a record may hold that run code when the method is called
CALLABLE = frozenset(("F", "M", "W", "Pa"))


def _entries(node: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """``{"forward": fn}``: (method, value) of the string-keyed entries of a dict literal."""
    if type(node) is not cst.Dict:
        return []
    out = []
    for el in node.elements:
        if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
            name = el.key.raw_value
            if name.isidentifier() and isinstance(el.value, (cst.Name, cst.Attribute)):
                out.append((name, el.value))
    return out


def _dicts(call: cst.Call, depth: int) -> list[tuple[str, cst.BaseExpression]]:
    """The records among a call's arguments, and (``depth`` 2) among those of a call passed to it."""
    found = []
    for arg in call.args:
        found += _entries(arg.value)
        if depth > 1 and type(arg.value) is cst.Call:
            found += _dicts(arg.value, depth - 1)
    return found


def _class_named(node: cst.BaseExpression) -> bool:
    """A name or attribute spelled as a class (``LlamaForCausalLM``, ``layers.Norm``)."""
    name = node.value if type(node) is cst.Name else node.attr.value if type(node) is cst.Attribute else ""
    return name[:1].isupper()


def records(call: cst.Call, key: cst.BaseExpression | None = None):
    """(method, value expression, class candidate expressions) of the replacement records of a
    call: ``key`` is the subscript the call's value is stored under (``policy[Cls] = Desc(...)``);
    without one, the call's other name or attribute arguments are the candidates."""
    found = _dicts(call, 2)
    if not found:
        return []
    if key is not None:
        classes = [key] if _class_named(key) else []
    else:  # ``trace_module(func, {"forward": inputs}, ...)`` names no class: no record (measured on torch)
        classes = [a.value for a in call.args if _class_named(a.value)]
    if not classes:
        return []
    return [(method, value, classes) for method, value in found]


class Policies:
    """The link's half: ties each record to its classes while solving, keeps the library-tied ones."""

    def __init__(self, objects):
        self.o, self.s = objects, objects.s
        #: (method, value node, class nodes) of every record
        self.records: list[tuple[str, int, list[int]]] = []
        self._weak: list[FuncId] | None = None
        self._library: list[FuncId] = []

    def record(self, method: str, value: int, classes: list[int]) -> None:
        self.records.append((method, value, classes))
        for node in classes:
            self.s.watch(node, (Policies._tie, self, method, value))

    def _tie(self, method: str, value: int, values) -> None:
        for v in values:  # a replacement replaces: the class (or a base) has the method already
            if v[0] == "C" and self.o.class_attr(self.o.index.mro(self.o.ref(v)), method) \
                    and self.o.once(("policy", method, value, v)):
                dst = self.o.cattr(v[1], v[2], method)
                self.s.watch(value, (Policies._bind, self, v, dst))

    def _bind(self, cls: tuple, dst: int, values) -> None:
        """``MethodType(fn, instance)``: the function's first parameter is an instance of the class."""
        out = []
        for v in values:
            if v[0] == "F":
                flow = self.o.flow(v[1], v[2])
                if flow is not None and flow.params and not flow.cls:
                    self.s.add_values(self.s.node(("v", v[1], v[2], flow.params[0])), (("S", cls[1], cls[2]),))
                    out.append(("Pa", v, 1))
                    continue
            if v[0] in CALLABLE:
                out.append(v)
        self.s.add_values(dst, out)

    def weak(self) -> list[FuncId]:
        """After the solve: the replacements whose tie is weak -- a ``forward`` replacement of a record
        tied to no project class (any class), and every replacement of a project class's method that
        two records replace by different functions (a family of policies: which one applies is data)."""
        if self._weak is None:
            found: dict[FuncId, None] = {}
            library: dict[FuncId, None] = {}
            by_method: dict[tuple, set[FuncId]] = {}
            values = self.s.values
            for method, value, classes in self.records:
                held = {v for node in classes for v in values(node) if v[0] == "C"}
                tied = sorted(v for v in held if self.o.class_attr(self.o.index.mro(self.o.ref(v)), method))
                fids = {fid for v in values(value) if v[0] in CALLABLE for fid, _, _ in self.o.callees(v) if fid is not None}
                for cls in tied:
                    by_method.setdefault((cls, method), set()).update(fids)
                if not held and method == "forward":
                    library.update(dict.fromkeys(sorted(fids)))
            for fids in by_method.values():
                if len(fids) > 1:
                    found.update(dict.fromkeys(sorted(fids)))
            self._library = sorted(library)
            self._weak = sorted(found.keys() | library.keys())
            self.records = []
        return self._weak

    def library(self) -> list[FuncId]:
        """The ``forward`` replacements tied to no project class: a library model's call may run them."""
        self.weak()
        return self._library
