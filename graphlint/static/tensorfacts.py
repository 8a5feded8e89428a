"""What the tensor oracle (:mod:`.tensors`) knows per class and per function while a file is walked.

Kept apart from the oracle's questions so each file stays readable: these are the facts the walk
fills in (names that are tensors, host data, positions...), the oracle only reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ClassFacts:
    tensor_attrs: set[str] = field(default_factory=set)
    bool_attrs: set[str] = field(default_factory=set)
    module_attrs: set[str] = field(default_factory=set)
    tensor_methods: set[str] = field(default_factory=set)  # ``def m(self, ...) -> Tensor``
    host_builders: dict[str, int] = field(default_factory=dict)  # ``device=None`` methods (static.hostbuilders)
    weight_attrs: set[str] = field(default_factory=set)  # nn.Parameter / register_buffer: constant per step
    param_containers: set[str] = field(default_factory=set)  # nn.ParameterDict / ParameterList (:mod:`.weightargs`)
    host_attrs: set[str] = field(default_factory=set)  # ``self.history = []``, ``self.ratios = (0, 4)``
    pinned_attrs: set[str] = field(default_factory=set)  # ``self.staging = torch.empty(n, pin_memory=True)``
    #: fields every store of which (so far) is a uniform draw, and those some other store fills (:mod:`.acceptance`)
    uniform_attrs: set[str] = field(default_factory=set)
    other_uniform: set[str] = field(default_factory=set)
    pageable_attrs: set[str] = field(default_factory=set)  # ``self.ids = torch.tensor(ids)`` (static.pageable)
    layer_attrs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # ``self.embed = nn.Embedding(..)``: its tensors
    list_attrs: set[str] = field(default_factory=set)  # ``self.banned = list(ids)``: a Python list (see is_list_value)
    other_attrs: set[str] = field(default_factory=set)  # stored something else besides (not None): never a list
    set_true: set[str] = field(default_factory=set)  # ``self._prepared = True``: one-time flags
    #: method -> the ``self`` attributes it assigns (``runonce.once_flag``'s disarming calls)
    method_writes: dict[str, set[str]] = field(default_factory=dict)
    #: fields a method other than ``__init__`` advances with ``+=`` / ``-=`` (:meth:`.scopes.Scopes.prescan`)
    counters: set[str] = field(default_factory=set)


@dataclass
class FunctionFacts:
    tensors: set[str] = field(default_factory=set)
    bools: set[str] = field(default_factory=set)
    #: local name -> the ``self`` attribute holding the sub-module(s) it names (``for layer in self.layers``)
    module_aliases: dict[str, str] = field(default_factory=dict)
    #: host ints derived from a per-step position parameter (see ``params.POSITION_NAMES``)
    positions: set[str] = field(default_factory=set)
    #: positions that are the counter of a fixed-length loop -> (the loop, begun in a capture) (:mod:`.fixedcounters`)
    fixed_counters: dict[str, tuple[int, bool]] = field(default_factory=dict)
    #: positions bound in the function -> the parameters they come from, None: not only those (:mod:`.graphconsts`)
    position_roots: dict[str, frozenset | None] = field(default_factory=dict)
    #: ints a step loop moves without a position's name -> the loops that move them (:mod:`.looppositions`)
    loop_positions: dict[str, frozenset] = field(default_factory=dict)
    #: host values copied from device data (``n = t.item()``, ``for c in t.tolist()``, ``off += c``;
    #: see :mod:`.readbacks`)
    readbacks: set[str] = field(default_factory=set)
    #: of those, the ones made only from reads of parameters -> those parameters (:mod:`.hostparams`)
    readback_roots: dict[str, frozenset] = field(default_factory=dict)
    #: names known to hold Python data: parameters with a non-tensor annotation or a literal
    #: default, locals bound to literals, comprehensions, ``len()``/``int()``/``.item()``...
    hosts: set[str] = field(default_factory=set)
    shapes: set[str] = field(default_factory=set)  # hosts read from tensor shapes alone (``cstwalk.shape_only``)
    #: names bound to a device picked per layer (``device = self.layer_devices[i]``)
    picked_devices: set[str] = field(default_factory=set)
    #: local names holding sub-modules or objects of a class (``attn = Attention()``, ``layers = [Block()
    #: ...]``, ``model: Llama``): what ``self.x = name`` makes a sub-module attribute (see :mod:`.bindings`)
    modules: set[str] = field(default_factory=set)
    #: names bound to pinned host memory (``torch.empty(n, pin_memory=True)``, ``x.pin_memory()``)
    pinned: set[str] = field(default_factory=set)
    cpu: set[str] = field(default_factory=set)  # host tensors (see :mod:`.cputensors`)
    off_cuda: set[str] = field(default_factory=set)  # of those, the ones a device test sent away (:mod:`.devicenarrow`)
    pageable: set[str] = field(default_factory=set)  # built by a device-less factory (see :mod:`.pageable`)
    origins: dict[str, str] = field(default_factory=dict)  # name -> ``key#i``: a call's result (static.valuekinds)
    #: names last bound to a call passing ``validate_args=False`` (a ``torch.distributions`` object that
    #: skips its argument checks, the host read of GL109): see :func:`.valuekinds.note_origin`
    unvalidated: set[str] = field(default_factory=set)
    scalars: set[str] = field(default_factory=set)  # 0-dim device tensors (see :mod:`.scalars`)
    device_caches: set[str] = field(default_factory=set)  # ``cache = StaticCache(...)``: a length on the device (:mod:`.statelength`)
    vectors: set[str] = field(default_factory=set)  # 1-D device tensors (see :mod:`.scalars`)
    #: names last bound to a dict display naming a device (``kw = dict(device=d, dtype=t)``): a
    #: factory's ``**kw`` puts it there (:func:`.scalars.device_of`)
    device_kwargs: set[str] = field(default_factory=set)
    #: local dict -> ((key, kind), ...) of the display it was bound to, once: what ``**d`` passes (:mod:`.splatkinds`)
    splat_kinds: dict[str, tuple] = field(default_factory=dict)
    #: local -> the ``obj.f`` field spelling it was bound to (:mod:`.carried`)
    carried: dict[str, str] = field(default_factory=dict)
    lists: set[str] = field(default_factory=set)  # names last bound to a Python list (see is_list_value)
    row_lists: set[str] = field(default_factory=set)  # lists of Python lists (see :mod:`.listrows`)
    #: parameters defaulting to ``None`` (``position_ids=None``): see ``guards.fills_default``
    optional: set[str] = field(default_factory=set)
    #: unannotated parameters taken for tensors only because a hot function has them (``forward``)
    presumed: set[str] = field(default_factory=set)
    #: name -> the loop that advances it (``n += 1``), while walking that loop (:func:`.valuekinds.step_kind`)
    advanced: dict[str, int] = field(default_factory=dict)
    #: Python numbers: what ``for i in range(n)`` or ``BLOCK_N = 16`` binds, while not rebound, or a
    #: local the function binds once, to a number literal (:mod:`.oncebound`)
    ints: set[str] = field(default_factory=set)
    #: the function's def, how often it binds each name and its plain ``name = value`` assignments
    #: (collected when first asked: :mod:`.oncebound`)
    defn: object = None
    bindings: object = None
    assigned: object = None
    #: local -> the ``self`` field it holds a host read of; fields converted to that read (:mod:`.hostconversions`)
    host_reads: dict[str, str] = field(default_factory=dict)
    converted: set[str] = field(default_factory=set)
    #: names last bound to ``int(...)``, ``len(...)``...: a Python number whatever its operand, only an
    #: argument's kind (:func:`.argkinds.arg_kinds`: ``n = int(k - 1)`` then ``pad(x, n)``)
    numbers: set[str] = field(default_factory=set)
    #: names last bound to an element-wise comparison of values the oracle cannot place (``m = ids ==
    #: tok`` with ``ids`` an untyped parameter): a boolean mask wherever it indexes a tensor (:mod:`.masks`)
    compared: set[str] = field(default_factory=set)
    #: names last bound to a uniform draw / to a comparison with one (:mod:`.acceptance`)
    uniform: set[str] = field(default_factory=set)
    accepts: set[str] = field(default_factory=set)
    #: parameters never rebound (yet): an argument naming one passes on what the caller was given
    #: (:func:`.argkinds.arg_kinds`, ``^name``)
    params: set[str] = field(default_factory=set)
    #: the ``*args`` and ``**kwargs`` parameter names (None where absent): a call handing both on
    #: unchanged (``return self.step(*args, **kwargs)``) forwards what its own callers pass
    star_params: tuple = (None, None)
    #: parameters every caller passes a value of a known kind (a ``param:`` fact of :mod:`.valueflow`,
    #: never None): ``if p is None:`` does not run while ``p`` is not rebound (:mod:`.branchwalk`)
    given: set[str] = field(default_factory=set)
    #: parameters every caller passes a tensor of some kind: ``if not torch.is_tensor(p):`` does not
    #: run while ``p`` is not rebound (:mod:`.typetests`)
    given_tensors: set[str] = field(default_factory=set)
    #: host tensors built from host data alone, no device copy among their sources (:mod:`.cputensors`)
    host_made: set[str] = field(default_factory=set)
    #: parameters rebound only to slices of themselves (``key = key[n:]``): a tensor's kind stays
    sliced_params: set[str] = field(default_factory=set)
    #: parameters some caller hands a parameter or buffer of its module, while not rebound (:mod:`.weightargs`)
    weights: set[str] = field(default_factory=set)
    #: ``obj.f`` / ``self.x.f`` spelling -> what the object's class field holds (:mod:`.fieldkinds`)
    fields: dict[str, str] = field(default_factory=dict)
    reads: set[str] = field(default_factory=set)  # the spellings asked about (``FunctionInfo.field_reads``)
    #: a comprehension's target -> the name it iterates, one ``[]`` per level (``r`` in ``for r in rows``:
    #: ``rows[]``): how its field reads are spelled (the flow IR does not bind comprehension targets)
    elements: dict[str, str] = field(default_factory=dict)
    #: local -> ``obj.m()``: bound to what a method of another object returns; asked about as a field
    #: fact only once the local bounds a subscript (:mod:`.fieldkinds`: a getter of a per-step int)
    calls: dict[str, str] = field(default_factory=dict)
    #: parameter -> the class its annotation names (``other: BlockWeights`` -> "BlockWeights"; :mod:`.loadedfields`)
    param_classes: dict[str, str] = field(default_factory=dict)
