"""Code installed into modules the analysis cannot see into, and the calls that may run it.

Quantizers and patching utilities change a model they did not build: ``layer.forward = lambda x:
fast(layer, x)``, ``m.forward = partial(hook, m)``, ``types.MethodType(fn, m)``, ``setattr(m,
"forward", fn)``, or ``setattr(parent, name, QuantLinear(child))`` -- on a Hugging Face model, or
on whatever object a loader handed them. Calling that model later (``self.model(ids)`` inside a
captured step) runs the installed code, but no value flow says so: the model is a library object
(``("X",)``) or holds nothing the analysis knows.

**The rule (decided).** *Installed code* is what the checked code stores on an object that holds
no value of the project (a library object, or an unknown one; post-solve, so the object's values
are final):

- a callable stored as its ``forward`` (a function, a bound method, a ``partial``/``MethodType``,
  a lambda, a function of its own);
- an instance of a project module -- a class with a ``forward`` -- that the checked code builds
  (``QuantLinear(child)``, or a factory returning one), stored as any attribute of it
  (``setattr(model, name, make(child))``, ``model.layers[0].mlp = Lora()``). Not an element
  (``params["act"] = GELU()``: measured on torchchat, a dictionary of settings), not ``self`` handed
  on (``state.model = self``: a back-reference, and a value flow-insensitive sets spread widely --
  measured on lightllm, it took a model's ``forward`` for a layer installed into its own inputs).

The same stores spelled otherwise: ``obj.__dict__["forward"] = fn.__get__(obj)`` is
``setattr(obj, "forward", ...)`` (:func:`dict_store`); under a computed name (``obj.__dict__[name]``,
``setattr(obj, name, fn)`` in a binding helper) a callable counts when what it binds is itself a
``forward`` (``Fi.forward.__get__(module)``: a module's forward bound onto another module -- the helper's
``extra_repr`` binding installs nothing that runs). Not a project module *class* stored on a library
module (``modeling_llama.LlamaRMSNorm = Ours``): measured on chattts (fresh13), its forward in the pool
made every library call -- a weight-normed head in the sampler -- "run the model" (two false warnings).

Stores on project objects are excluded: those already flow through their fields
(``self.forward = self.fast`` is a target of that class's calls only). *Calls that may run it*:
a call that resolves to no project code and calls an object directly -- a library object or an
unknown one: a field of ``self`` (``self.model(x)``), or a name or element holding a library
object (``model(x)``, ``layers[i](x)``), not a method of another object (``self.tokenizer.decode(x)``,
``model.generate(x)``: named methods, not the module's ``__call__``) and not an import. A field of
``self`` that a library base class provides (``self.post_init()``) holds a library object too and
so counts: harmless where nothing is installed, and rare on a decode path. Each such call gets every installed
target; its being unresolved is still reported (the library model itself stays unseen).

Sound for the shapes above, and cheap: the stores are kept as node pairs while compiling and
read once after the solve; an engine that installs nothing pays one empty list.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.flowir import ANY_ATTR
from graphlint.static.patched import OUTSIDE
from graphlint.static.libfields import library_fields
from graphlint.static.libpipelines import marker


FuncId = tuple[str, str]
#: values that run code when called (the pool takes nothing else for a ``forward`` store)
CALLABLE = frozenset(("F", "M", "W", "Pa"))
#: values that are the project's own objects: a store on one is followed through its fields
PROJECT = frozenset(("I", "S", "C", "Sup", "Mod", "Ns", "L"))


class Installed:
    def __init__(self, objects):
        self.o, self.s = objects, objects.s
        #: (object node, value node, attribute) of every attribute store not on ``self``
        self.stores: list[tuple[int, int, str]] = []
        self._targets: list[FuncId] | None = None
        self._library_fields: frozenset[str] | None = None

    def store(self, obj: int, value: int, attr: str) -> None:
        """Kept while compiling: ``obj.attr = value``, ``setattr(obj, name, value)``."""
        self.stores.append((obj, value, attr))

    def targets(self) -> list[FuncId]:
        """Every installed function, after the solve (computed once)."""
        if self._targets is None:
            found: dict[FuncId, None] = {}
            values = self.s.values
            for obj, value, attr in self.stores:
                held = values(obj)
                if self.project_held(held):
                    continue
                for v in values(value):
                    if (v[0] in CALLABLE and (attr == "forward" or attr == ANY_ATTR and binds_forward(v))) \
                            or (v[0] == "I" and self.is_module(v)):
                        found.update(dict.fromkeys(fid for fid, _, _ in self.o.callees(v) if fid is not None))
            self._targets = sorted(found)
            self.stores = []
        return self._targets

    def project_held(self, held: list) -> bool:
        """Whether a store goes to a project object's field (followed there, not installed): one that
        holds a project value -- unless it also holds a library module and its only project values
        are instances of plain classes, no module (a graph wrapper stored on that model's ``forward``,
        reaching the name through a computed ``getattr``): the library module is patched too."""
        project = [v for v in held if v[0] in PROJECT]
        return bool(project) and (not any(v[0] in OUTSIDE for v in held)
                                  or any(v[0] != "I" or self.is_module(v) for v in project))

    def is_module(self, v) -> bool:
        hit = self.o.index.find_method(self.o.ref(v), "forward")
        return hit is not None

    def runs(self, values: list, expr: tuple) -> bool:
        """Whether a call whose callee ``expr`` holds ``values`` may run installed code: it holds
        nothing of the project, and it calls an object directly -- a field of ``self`` holding a
        library object or nothing known (``self.model(x)``: a model handed to the constructor), a
        name or element holding a library object (``model(x)`` after ``from_pretrained``); a method
        of another object (``self.tokenizer.decode(x)``) is not the module's ``__call__``, and a
        name holding nothing known is a helper's callback parameter far more often than a model
        (measured on the whole of torch: such names made optimizer and guard loops per-token)."""
        # compiled with CUDA graphs: what it wraps runs; a library pipeline's marker (:mod:`.libpipelines`) is outside
        values = [v for v in values if v[0] != "G" and not marker(v)]
        if any(v[0] not in OUTSIDE for v in values):  # a library object the project patched is one too
            return False
        if expr[0] == "a" and expr[1] == ("n", "self"):
            # a field of ``self`` holding a library model or one never given (``self.model``), unless it only
            # ever holds an imported module's attribute: a kernel binding (:mod:`.libfields`)
            if self._library_fields is None:
                self._library_fields = library_fields(self.o.by_path.values())
            return expr[2] not in self._library_fields
        return expr[0] in ("n", "s") and any(v[0] == "X" for v in values)  # a name or element holding a library object


def binds_forward(v: tuple) -> bool:
    """Whether a callable is, or binds, a function named ``forward`` (``Fi.forward``, its
    ``__get__``/``MethodType``/``partial`` binding, a decorated one)."""
    while v[0] in ("Pa", "W"):
        v = v[1] if v[0] == "Pa" else v[3]
    return v[0] in ("F", "M") and v[2].rsplit(".", 1)[-1] == "forward"


def dict_store(base: tuple, index) -> tuple | None:
    """``obj.__dict__[k] = v``: the store target ``("a", obj, k)`` -- an attribute of ``obj`` by the
    instance dictionary, ``k`` a literal or computed (:data:`ANY_ATTR`); None for any other subscript."""
    if base[0] != "a" or base[2] != "__dict__" or len(index) != 1 or type(index[0].slice) is not cst.Index:
        return None
    key = index[0].slice.value
    return ("a", base[1], key.raw_value if type(key) is cst.SimpleString else ANY_ATTR)


def own_field(flow, obj: tuple) -> tuple[str, str] | None:
    """``(class, field)`` when a method installs on a submodule of its own instance: ``self.model``,
    or a local bound only to it (``model = getattr(self, "model")``). Code installed so is tied to
    that field -- ``self.model(...)`` of that class's instances runs it -- not to every library call
    (measured on a GLIDE drafter: its forward, installed on its own ``self.model``, was taken for the
    forward of every model the engine captures)."""
    if flow is None or not flow.cls or flow.fkind != "m" or not flow.params or flow.params[0] != "self":
        return None
    own = ("n", "self")
    if obj[0] == "a" and obj[1] == own:
        return flow.cls, obj[2]
    if obj[0] != "n":
        return None
    bound = {st[2] for st in flow.stmts if st[0] == "=" and st[1] == obj}
    if len(bound) == 1:
        (value,) = bound
        if value[0] == "a" and value[1] == own:
            return flow.cls, value[2]
    return None
