"""What a record's field holds, for the value rounds (:mod:`.valueflow`): kinds through object fields.

``GenerationResult(finished=done[i], ...)`` yields objects whose ``finished`` is a 0-dim device
tensor, so ``if result.finished:`` in the consumer reads one back; ``TransformerInput(pos=cur)``
hands a per-step int to the model, whose ``start = inp.pos`` slices by it; a ``@property`` that
returns a device tensor makes ``bool(self.stop.finished[i])`` a read. The walk of the reading
file sees none of that: the value was stored in another function (often another file).

Flow-insensitive and per class field, as the points-to reads objects:

- what a class's field holds: for a record (``@dataclass``, a pydantic ``BaseModel``, a
  ``NamedTuple``), the keyword every constructor call passes it (:attr:`.CallSite.kinds`); for a
  plain class, the ``__init__`` parameter its only stores (``self.f = f``, in ``__init__``) take,
  as every call passes it (:class:`.paramkinds.ParamKinds`); for a ``@property``, what the getter
  returns. Every store must agree: one store of anything else, a positional or ``**`` call, a call
  spelled with the class's name that the resolution does not follow, a record's method storing it,
  and the field is unknown (a store ``obj.f = v`` from outside the class is not looked for). A
  literal ``None``/``True``/``False`` (or a field left at its default) is a placeholder that joins
  with anything, as ``return None`` does (:mod:`.valuekinds`): ``finished=False`` while the prompt
  is echoed, a tensor once tokens are sampled. A plain class's field nothing else decides is a device
  tensor when every store of its name anywhere is one (:func:`.fieldstores.tensor_fields`).
- a counter (:attr:`.facts.ClassInfo.counters`: ``self.offset += n`` in a method) is a per-step
  int, and so is what a method returns from one (``cache.usable_length()``, spelled with ``()``).
- which class a receiver is: ``self.x`` whose every store in its class is a project class's
  instance (``Cls(...)``, an annotated parameter) or a literal; a local or parameter whose every
  binding is one (``inp: Inp``, ``r = Rec(...)``). Every class must agree on the field.

The walk notes which ``obj.f`` spellings it asked about (``FunctionInfo.field_reads``); only those
get a fact, ``field:<function>:<spelling>=<kind>``, read back by :func:`.kindfacts.seed_params`.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from graphlint.static.carried import CARRY, stored_from_outside
from graphlint.static.facts import FunctionInfo, ModuleInfo
from graphlint.static.fieldclasses import FieldClasses
from graphlint.static.fieldstores import HOST_STORE, SAME_STORE, computed_elsewhere, number_fields, tensor_fields
from graphlint.static.flowir import last_name
from graphlint.static.hostfields import handed_host
from graphlint.static.index import Index
from graphlint.static.paramkinds import ParamKinds, origin_kind
from graphlint.static.receivers import Receivers
from graphlint.static.valuekinds import HOST, MASK, NUMBER, SCALAR, STEP, TENSOR, UNKNOWN

ClassRef = tuple[ModuleInfo, str]
#: the kinds a field fact may say: a device tensor, a 0-dim one, a pageable host tensor, a per-step
#: int, a Python number
FIELD_KINDS = (TENSOR, SCALAR, HOST, STEP, NUMBER)
#: base classes whose constructor takes the fields as keywords (a generated ``__init__``)
RECORD_BASES = frozenset(("BaseModel", "NamedTuple"))
TENSORS = frozenset((TENSOR, SCALAR, HOST))


def field_facts(infos: list[ModuleInfo], index: Index, fields: FieldClasses, agreed: ParamKinds,
                receivers: Receivers) -> dict[str, set[str]]:
    """{path: {``field:...`` facts}} for the field reads the walks noted."""
    hosted = {a for info in infos for a, values in info.field_stores.items() if HOST_STORE in values} | handed_host(infos)
    if not hosted and not any(fn.field_reads for info in infos for fn in info.functions.values()):
        return {}
    kinds = FieldKinds(infos, index, fields, agreed, receivers)
    names = _field_names(infos) | hosted | kinds.advanced.keys() | kinds.numbered | kinds.tensored[0]
    out: dict[str, set[str]] = defaultdict(set)
    for attr in sorted(hosted):
        for info, qualname in kinds.host_methods(attr):
            out[info.path].add(f"field:{qualname}:self.{attr}={HOST}")
    for info in infos:
        for fn in info.functions.values():
            for spelled in fn.field_reads:
                if spelled.rpartition(".")[2] not in names:
                    continue
                kind = kinds.read(info, fn, spelled)
                if kind in FIELD_KINDS:
                    out[info.path].add(f"field:{fn.qualname}:{spelled}={kind}")
    return out


class FieldKinds:
    def __init__(self, infos: list[ModuleInfo], index: Index, fields: FieldClasses, agreed: ParamKinds,
                 receivers: Receivers):
        self.index, self.fields, self.agreed = index, fields, agreed
        self.receivers = receivers
        self.infos = infos
        self._built: dict[tuple[str, str], list[tuple]] | None = None
        self.lost: set[str] = set()
        self.memo: dict[tuple[str, str, str], str] = {}
        self._advanced: dict[str, tuple[str, str]] | None = None
        self._hosted: dict[str, bool] = {}
        self._stores: dict[str, list] | None = None
        self._numbered: set[str] | None = None
        self.project = {c.rpartition(".")[2] for i in infos for c in i.classes}  # the project's class names
        self.outside: dict[str, bool] = {}  # field name -> stored on another object somewhere (static.carried)
        self.tensored = tensor_fields(infos)  # stored a tensor not known on the host, wherever stored

    @property
    def built(self) -> dict[tuple[str, str], list[tuple]]:
        """Class (path, qualname) -> its constructor calls (site, caller's module, caller); gathered
        the first time a field of a class is asked about (most projects' reads resolve no class)."""
        if self._built is None:
            self._built = self._constructions()
        return self._built

    def _constructions(self) -> dict[tuple[str, str], list[tuple]]:
        built: dict[tuple[str, str], list[tuple]] = defaultdict(list)
        fields = self.fields
        spelled, followed = Counter(), Counter()  # a class's name -> calls spelled with it / resolved
        for info in self.infos:
            for fn in info.functions.values():
                for site in fn.calls:
                    last = last_name(site.expr)
                    if last is None or not last[:1].isupper():
                        continue
                    spelled[last] += 1
                    ref = fields.class_of(info, site.expr) if not site.reference else None
                    if ref is not None:
                        followed[last] += 1
                        built[(ref[0].path, ref[1])].append((site, info, fn))
        self.lost = {name for name, n in spelled.items() if followed[name] != n}
        return built

    # -- receivers --------------------------------------------------------------------------------
    def read(self, info: ModuleInfo, fn: FunctionInfo, spelled: str) -> str:
        """The kind ``spelled`` (``obj.f`` / ``self.x.f``) has in ``fn``, else unknown."""
        receiver, _, attr = spelled.rpartition(".")
        classes = self._receiver(info, fn, receiver)
        if not classes:
            # an untyped parameter's ``params.seqlen_offset``: the one class advancing it (:meth:`advanced`);
            # else a host tensor if every store of the name anywhere is one (``self.runner.host_ids[i]``)
            owner = self.advanced.get(attr) if "." not in receiver and receiver != "self" else None
            return STEP if owner is not None else HOST if self.host_everywhere(attr) else UNKNOWN
        return _agree(self.field(ref, attr) for ref in classes)

    @property
    def advanced(self) -> dict[str, tuple[str, str]]:
        """Field name -> the one project class declaring it, for fields the project advances with
        ``obj.f += n`` in a loop, ``obj`` a local or parameter, and never otherwise in place (``obj.f
        -= 1``): a counter the host step loop advances from outside, ``inference_params.seqlen_offset
        += 1`` -- a per-step int wherever it is read, as a class's own counter is. A name two classes
        declare is no one's; ``metas[i].n += 1`` (an element's count) is no step counter."""
        if self._advanced is None:
            self._advanced = _advanced_fields(self.infos)
        return self._advanced

    def _receiver(self, info: ModuleInfo, fn: FunctionInfo, receiver: str) -> list[ClassRef]:
        if receiver.startswith("self."):
            if not fn.cls:
                return []
            values = [(owner, flow, v) for owner, flow, by_field in self.fields.methods(info, fn.cls)
                      for v in by_field.get(receiver[5:], ())]
        else:
            return self.receivers.of_name(info, fn.qualname, receiver) if "." not in receiver else []
        out: dict = {}
        for owner, flow, value in values:
            if value is None:
                continue  # a literal (``self.stop = None``), arithmetic: holds no object
            annotated = {st[1][1]: st[2] for st in flow.stmts if st[0] == "=" and st[1][0] == "n"
                         and st[2] is not None and st[2][0] == "t"}
            one: dict = {}
            self.fields.classes_in(value, owner, annotated, one, 0)
            if not one:
                return []  # something else may be stored (a call's result, an element, a parameter)
            out.update(one)
        return [ref for ref, _ in out.values()]

    # -- fields ---------------------------------------------------------------------------------
    def field(self, ref: ClassRef, attr: str) -> str:
        key = (ref[0].path, ref[1], attr)
        if key not in self.memo:
            self.memo[key] = UNKNOWN  # while computed
            self.memo[key] = self._field(ref, attr)
        return self.memo[key]

    def _field(self, ref: ClassRef, attr: str) -> str:
        if attr.endswith("()"):  # ``n = cache.usable_length(...)``: a per-step int its method returns
            method = self.index.find_method(ref, attr[:-2])
            return STEP if method is not None and method[0].functions[method[1]].returns == STEP else UNKNOWN
        if any(attr in owner.classes[cls].counters for owner, cls in self.index.mro(ref) if cls in owner.classes):
            return STEP  # ``self.cache.offset``, which the cache's methods advance
        if any(self.advanced.get(attr) == (owner.path, cls) for owner, cls in self.index.mro(ref)):
            return STEP  # ``params.offset``, which the host step loop advances from outside
        method = self.index.find_method(ref, attr)
        if method is not None:
            flow = method[0].flows.get(method[1])
            shape = method[0].functions[method[1]].returns
            if shape == MASK:  # a property returning a mask: a tensor field
                shape = TENSOR
            return shape if flow is not None and flow.fkind == "p" and isinstance(shape, str) else UNKNOWN
        info, cls = ref
        if attr in self.numbered and self._own(ref) and not self._record(ref):
            return NUMBER  # ``self.max_splits = 16``, and no store anywhere of anything else
        if not self.built or cls.rpartition(".")[2] in self.lost:  # (``built`` gathers ``lost`` too)
            return UNKNOWN
        if self._record(ref):
            if any(attr in by_field for _, _, by_field in self.fields.methods(info, cls)):
                return UNKNOWN  # a method stores the field too (``self.done = ...``)
            return self._keyword(ref, attr)
        found = self._stored(ref, attr)
        if found != UNKNOWN or not self._own(ref):
            return found  # else every store of the name anywhere: a host tensor, a device tensor
        return HOST if self.host_everywhere(attr) else TENSOR if attr in self.tensored[0] and not any(
            c in self.tensored[1] for _, c in (*self.index.mro(ref), *self.index.subclasses(ref))) else UNKNOWN

    @staticmethod
    def _record(ref: ClassRef) -> bool:
        """A record class: its generated constructor stores its fields, positional arguments too."""
        klass = ref[0].classes[ref[1]]
        return klass.dataclass or any(type(b) is tuple and len(b) > 1 and isinstance(b[1], str)
                                      and b[1].rpartition(".")[2] in RECORD_BASES for b in klass.bases)

    @property
    def numbered(self) -> set[str]:
        """Fields every store of which is a number (:func:`.fieldstores.number_fields`)."""
        if self._numbered is None:
            self._numbered = number_fields(self.stores, self.project)
        return self._numbered

    @property
    def stores(self) -> dict[str, list]:
        """Field name -> (module, stored value) for every store the walks recorded."""
        if self._stores is None:
            self._stores = defaultdict(list)
            for info in self.infos:
                for name, values in info.field_stores.items():
                    self._stores[name].extend((info, v) for v in values)
        return self._stores

    # -- fields every store of which is a host tensor -------------------------------------------
    def host_everywhere(self, attr: str) -> bool:
        """Every store of a field named ``attr`` anywhere in the project (``self.key = ...``,
        ``node.key = ...``, a constructor's keyword) is a host tensor, a literal ``None``, the
        same-named field of an object or a slice of it (``self.key = self.key[n:]``), or a parameter
        every call passes a host tensor; and no ``setattr`` with a computed name. By name, over
        every object: sound for a project class whose fields only the project sets."""
        if attr not in self._hosted:
            self._hosted[attr] = False  # while computed: a parameter that takes the field itself
            self._hosted[attr] = self._all_host(attr)
        return self._hosted[attr]

    def _all_host(self, attr: str) -> bool:
        if not computed_elsewhere(self.stores, self.project, copies=True):
            return False  # a ``setattr`` with a computed name (``Cls(**kw)`` runs the class's own stores)
        host = False
        for info, value in self.stores.get(attr, ()):
            if value == HOST_STORE:
                host = True
            elif value == SAME_STORE or value == ("c", None):
                continue
            elif value is not None and value[0] == "p" and value[1] in info.functions \
                    and self.agreed.passed(info, info.functions[value[1]], value[2]) == HOST:
                host = True
            else:
                return False
        return host

    def _own(self, ref: ClassRef) -> bool:
        """Every base of the class is a project class (a library base may set any field)."""
        for info, cls in self.index.mro(ref):
            for base in info.classes[cls].bases:
                if self.index.class_ref(info, base) is None and base[-1] != "object":
                    return False
        return True

    def host_methods(self, attr: str) -> list[tuple[ModuleInfo, str]]:
        """The methods of the classes storing ``self.<attr>`` (and their subclasses') where it is a host tensor."""
        target = ("a", ("n", "self"), attr)
        owners: dict[tuple[str, str], ClassRef] = {}
        for info in self.infos:
            stored = {owner[1] for owner, _ in info.owned_stores.get(attr, ())  # ``self.free = torch.ones(n)``:
                      if owner is not None and owner[0] == "self" and owner[1] in info.classes}  # not in the flow IR
            stored |= {flow.cls for flow in info.flows.values() if flow.kind == "function" and flow.cls in info.classes
                       and any(st[0] in ("=", "set") and st[1] == target for st in flow.stmts)}
            for cls in sorted(stored):
                for ref in ((info, cls), *self.index.subclasses((info, cls))):
                    owners[(ref[0].path, ref[1])] = ref
        out = []
        for ref in (owners[key] for key in sorted(owners)):
            if self.field(ref, attr) == HOST:
                klass = ref[0].classes[ref[1]]
                out.extend((ref[0], f"{ref[1]}.{m}") for m in sorted(klass.methods) if f"{ref[1]}.{m}" in ref[0].functions)
        return out

    def _keyword(self, ref: ClassRef, attr: str) -> str:
        """A record's field: what every constructor call passes its keyword."""
        kinds = []
        for site, info, fn in self.built.get((ref[0].path, ref[1]), ()):
            if site.kinds is None or site.kinds[0] or site.args is None \
                    or any(spelling[2] is not False or spelling[3] is not False for spelling in site.args):
                return UNKNOWN  # nothing known, positional fields, splats
            if all(_placeholder(spelling, attr) for spelling in site.args):
                continue
            kind = dict(site.kinds[1]).get(attr, UNKNOWN)
            if kind.startswith(CARRY) and not stored_from_outside(self.infos, attr, self.outside) and (ref[0].path, ref[1]) \
                    in {(r[0].path, r[1]) for r in self._receiver(info, fn, kind[1:].rpartition(".")[0])}:
                continue  # ``State(step=step + 1)``, ``step = state.step``: what the field held (static.carried)
            kinds.append(origin_kind(kind, info, fn, self.index, self.agreed.passed))
        return _agree(kinds)

    def _stored(self, ref: ClassRef, attr: str) -> str:
        """A plain class's field: the ``__init__`` parameter its only stores take."""
        kinds = []
        target = ("a", ("n", "self"), attr)
        for owner, cls in self.index.mro(ref):
            for qualname, flow in owner.flows.items():
                if flow.kind != "function" or flow.cls != cls:
                    continue
                for st in flow.stmts:
                    if st[0] != "=" or st[1] != target:
                        continue
                    value = st[2]
                    if value is None or qualname.rpartition(".")[2] != "__init__" or value[0] != "n" \
                            or value[1] not in (*flow.params[1:], *flow.kwonly) or qualname not in owner.functions:
                        return UNKNOWN  # a literal or a tensor expression (the flow IR does not say), elsewhere
                    kinds.append(self._passed(ref, flow, owner.functions[qualname], value[1]))
        return _agree(kinds)

    def _passed(self, ref: ClassRef, init, fn: FunctionInfo, param: str) -> str:
        """What every constructor call of the class passes ``__init__``'s ``param`` (its default, or a
        literal ``None``/``True``/``False``: a placeholder)."""
        params = list(init.params[1:])
        default = fn.defaults.get(param)
        kinds = []
        for site, info, caller in self.built.get((ref[0].path, ref[1]), ()):
            if site.kinds is None or site.args is None or len(site.kinds[0]) > len(params) \
                    or any(spelling[2] is not False or spelling[3] is not False for spelling in site.args):
                return UNKNOWN
            if all(_literal(_argument(spelling, params, param), default) for spelling in site.args):
                continue
            passed = dict(zip(params, site.kinds[0]))
            passed.update(site.kinds[1])
            kinds.append(origin_kind(passed.get(param, UNKNOWN), info, caller, self.index, self.agreed.passed))
        return _agree(kinds)


def _field_names(infos: list[ModuleInfo]) -> set[str]:
    """Every name some class could answer a field fact for: a record's class-body names, a
    property, a field ``__init__`` stores a parameter in (a cheap filter before resolving receivers:
    on torch's own files most reads are of library objects)."""
    names: set[str] = set()
    for info in infos:
        for klass in info.classes.values():  # counters, and getters that may return one
            if klass.counters:
                names.update(klass.counters)
                names.update(f"{m}()" for m in klass.methods)
        for qualname, flow in info.flows.items():
            if flow.kind == "class" and qualname in info.classes:
                names.update(flow.locals)
            elif flow.kind == "function" and flow.cls:
                if flow.fkind == "p":
                    names.add(qualname.rpartition(".")[2])
                elif qualname.endswith(".__init__"):
                    names.update(st[1][2] for st in flow.stmts if st[0] == "=" and type(st[1]) is tuple
                                 and len(st[1]) == 3 and st[1][0] == "a" and st[1][1] == ("n", "self")
                                 and st[2] is not None and st[2][0] == "n")
    return names


def _advanced_fields(infos: list[ModuleInfo]) -> dict[str, tuple[str, str]]:
    """See :attr:`FieldKinds.advanced` (``ModuleInfo.advanced_attrs``: ``+f`` for ``obj.f += n`` in a
    loop, ``-f`` for ``f`` changed in place otherwise). The declaring classes: a class-body name, or
    a field ``__init__`` stores."""
    marks = {a for info in infos for a in info.advanced_attrs}
    advanced = {a[1:] for a in marks if a[:1] == "+" and "-" + a[1:] not in marks}
    if not advanced:
        return {}
    owners: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for info in infos:
        for qualname, flow in info.flows.items():
            if flow.kind == "class" and qualname in info.classes:
                for name in advanced.intersection(flow.locals):
                    owners[name].add((info.path, qualname))
            elif flow.kind == "function" and flow.cls and qualname.endswith(".__init__"):
                for st in flow.stmts:
                    if st[0] == "=" and type(st[1]) is tuple and len(st[1]) == 3 and st[1][0] == "a" \
                            and st[1][1] == ("n", "self") and st[1][2] in advanced:
                        owners[st[1][2]].add((info.path, flow.cls))
    return {name: next(iter(found)) for name, found in owners.items() if len(found) == 1}


def _agree(kinds) -> str:
    """One kind; tensors of different kinds (a device one here, a pageable one there) are a tensor."""
    found = set(kinds)
    if len(found) > 1 and found <= TENSORS:
        return TENSOR
    return found.pop() if len(found) == 1 else UNKNOWN


def _placeholder(spelling: tuple, attr: str) -> bool:
    """The keyword is left out (the field's default) or given a literal ``None``/``True``/``False``."""
    named = dict(spelling[1])
    return attr not in named or _literal(named[attr], None)


_ABSENT = ("absent",)


def _argument(spelling: tuple, params: list[str], param: str):
    """The :mod:`.valuefacts` value a call spelling passes ``param``; :data:`_ABSENT` when left out."""
    named = dict(spelling[1])
    if param in named:
        return named[param]
    i = params.index(param) if param in params else len(spelling[0])
    return spelling[0][i] if i < len(spelling[0]) else _ABSENT


def _literal(value, default) -> bool:
    """A literal ``None``/``True``/``False`` (a left-out argument: its default, when one of those)."""
    if value is _ABSENT:
        value = default
    return value is not None and value[0] == "c" and value[1] in (None, True, False)
