"""What one file's summary holds: :class:`FileSummary` (what the check reads: path, hash, suppressions,
errors) and, in its ``data``, the facts the linker reads (:class:`ModuleInfo`: functions, classes, calls,
hazard candidates).

Plain, picklable records. What a call site may run is decided when linking, by the whole-program points-to
analysis (:mod:`.callgraph`): a site records its callee as a :mod:`.flowir` expression, because the class or
function it names may live in a file summarized by another worker. The one thing still named by *descriptor*
is a class's bases (``ClassInfo.bases``), which name resolution (:class:`.index.Index`) makes the hierarchy:
``("name", "Base")``, a bare name that is not an import (a class of this module), or ``("dotted", "pkg.mod.Base")`` /
``("dotted", "..mod.Base")``, through the file's imports (relative: leading dots).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from types import MappingProxyType
from typing import Any

Descriptor = tuple
_FIELD_VALUES: dict[type, Any] = {}  # class -> a function giving an instance's field values, in order


class Compact:
    """Pickles as (class, field values in order): a third smaller and a quarter faster to load than
    a dataclass's instance dict, and every warm run loads every summary from the cache. Subclasses
    are slotted dataclasses: the linking process holds every file's facts at once (on all of torch,
    instance dicts were 12 MB of its peak)."""
    __slots__ = ()

    def __reduce__(self):
        cls = type(self)
        values_of = _FIELD_VALUES.get(cls)
        if values_of is None:  # one C-level getter, not a generator of getattr calls (every record, every pickle)
            names = tuple(f.name for f in fields(self))
            getter = attrgetter(*names) if names else (lambda _: ())
            values_of = _FIELD_VALUES[cls] = getter if len(names) != 1 else (lambda obj: (getter(obj),))
        values = values_of(self)
        if any(not v and type(v) in SHARED_EMPTY for v in values):  # a loaded record pickled again: {} for the proxy
            return (_restored, (cls, tuple({} if type(v) is MappingProxyType else v for v in values)))
        return (cls, values)


#: what an empty list, set or dict of a fact becomes where the summary is loaded (the linking
#: process): one shared immutable object instead of one per field of every function (on all of
#: torch, empty sets and lists were the largest part of the link's peak). Nothing after the walk
#: adds to a fact: a mutation there fails loudly instead of leaking into every other fact.
SHARED_EMPTY: dict[type, object] = {list: (), set: frozenset(), frozenset: frozenset(), dict: MappingProxyType({})}
SHARED_EMPTY[frozenset] = SHARED_EMPTY[set]
SHARED_EMPTY[MappingProxyType] = SHARED_EMPTY[dict]


def _restored(cls, values: tuple):
    """A record as pickled, its empty containers the shared ones of :data:`SHARED_EMPTY`."""
    return cls(*[SHARED_EMPTY[type(v)] if not v and type(v) in SHARED_EMPTY else v for v in values])


@dataclass(slots=True)
class CallSite(Compact):
    #: the callee (or, for a reference, the value passed) in :mod:`.flowir` form: what the call graph resolves
    expr: tuple
    in_capture: bool = False  # inside ``with torch.cuda.graph(...)``
    #: statement ordinal (within the calling function) of the first such call: what comes after a replay
    order: int = 0
    #: ids of every loop (the loop statement's ordinal) some instance of this call sits in
    loops: frozenset[int] = frozenset()
    #: only ever passed as a value (``partial(self._layer, i)``, ``threading.Thread(target=f)``),
    #: never called here: a callback, called later on the caller's behalf
    reference: bool = False
    once: str = ""  # made under ``if not self.<once>:`` (dropped when the class sets that flag True)
    #: made inside a loop over devices or under ``torch.cuda.device(<loop variable>)``: what it
    #: calls may capture on several devices from one process (GL501 is an error there)
    multi_device: bool = False
    #: looks like a call into the project (on ``self``, a local, a parameter, an attribute, a
    #: relative import): counted as *unresolved* when it resolves to nothing
    plain: bool = False
    #: for a reference: the callee of the call it is passed to (flow IR, or ``("i", dotted)`` for a library call). A callable
    #: handed to a project function is followed through that function's parameter instead; only one handed to a library is a callback edge
    via: tuple | None = None
    #: the conditions of the branches it sits in (a conjunction, :mod:`.valuefacts` IR): the
    #: linker drops it where the values reaching it decide one false (:mod:`.argvalues`)
    cond: tuple = ()
    #: the loops whose first iteration alone makes this call (``if i == 0:``, :mod:`.iterations`)
    first_iter: tuple[int, ...] = ()
    #: its arguments, one entry per distinct spelling (:mod:`.valuefacts`); None: not known
    args: tuple | None = None
    #: (spelling, loop id, the spelling from that loop's second iteration on): arguments that pass a
    #: name the loop's body rebinds to a literal (:func:`.iterations.carried_literals`)
    later: tuple = ()
    #: what its arguments are (:func:`.argkinds.arg_kinds`: positional kinds, keyword pairs), joined
    #: over every call of this spelling; None: not known (``*args``, or not recorded)
    kinds: tuple | None = None
    #: argument slots the same on every iteration of the loops around the call (:mod:`.restaged`)
    same: tuple = ()
    always: bool = False  # no branch, early exit, handler or conditional operand around it (:mod:`.calibration`)
    carried: tuple = ()  # (slot, loop id): an argument given what the call returned before (:mod:`.carriedparams`)
    consts: tuple = ()  # (slot, sources): an argument passing a position of parameters and counters (:mod:`.graphconsts`)


@dataclass(slots=True)
class Candidate(Compact):
    """A possible hazard; the linker reports it only if its function is hot (or it is capture code)."""

    code: str
    line: int
    col: int
    function: str
    line_text: str
    name: str = ""  # what matched, substituted for ``{name}`` in the rule message
    in_capture: bool = False
    order: int = 0  # statement ordinal within its function (see ``CallSite.order``)
    loops: tuple[int, ...] = ()  # ids of the loops it sits in, outermost first
    #: context the linker weighs: "pinned" (pinned, non_blocking staging), "multi-device" (capture
    #: code inside a loop over devices), "device-selected" (after ``set_device(x)`` or under
    #: ``torch.cuda.device(x)`` in its function), "call-local" (a growing local the function bound itself)
    flags: frozenset[str] = frozenset()
    cond: tuple = ()  # as :attr:`CallSite.cond`
    #: a read-back's: the local names it reads, and its statement path (see :mod:`.stepflow`)
    reads: tuple[str, ...] = ()
    branch: tuple = ()


@dataclass(slots=True)
class FunctionInfo(Compact):
    qualname: str
    name: str
    cls: str = ""  # enclosing class qualname, "" for module functions
    calls: list[CallSite] = field(default_factory=list)
    captures: bool = False  # opens a CUDA-graph capture (``with torch.cuda.graph``)
    #: compiled by a kernel DSL (``@cute.jit``, ``@cute.kernel``, ``@triton.jit``...): its ``if`` on
    #: DSL values is a device branch, not a host sync; only ``scope: anywhere`` rules apply inside
    device_code: bool = False
    #: ``@torch.compile``: "graph" with CUDA graphs (``mode="reduce-overhead"``), "graph-dynamic" and dynamic, else "compile"
    compiled: str = ""
    #: statement ordinal of the first ``graph.replay()`` in the body, 0 when it replays none
    replay_order: int = 0
    replay_loops: tuple[tuple[tuple[int, ...], tuple], ...] = ()  # each replay's loops and ``if`` arms
    #: (statement ordinal, branch conditions) of each replay: a read in an arm no replay before it
    #: shares (the decode arm, past the prefill arm's replay) runs before its own step's replay
    replay_conds: tuple[tuple[int, tuple], ...] = ()
    #: ids of the ``while`` / ``for ... in range(...)`` loops in the body (step loops, not collections)
    range_loops: list[int] = field(default_factory=list)
    #: ids of the loops that can stop early: a ``break`` in their own body, a ``return`` (:mod:`.iterations`)
    loop_exits: list[int] = field(default_factory=list)
    #: ids of the ``while`` loops among ``range_loops``: their test can stop them (:mod:`.hoststeps`' rounds)
    while_loops: tuple[int, ...] = ()
    #: ids of the loops that retire the element they visit (:mod:`.retiring`)
    retire_loops: tuple[int, ...] = ()
    device_work: bool = False  # runs device work itself: a torch op, a sub-module call, ``.cuda()``/``.to()``
    #: training code, never a decode step: "backward" (calls ``.backward()``, ``torch.autograd``), "loss" (computes one)
    trains: str = ""
    #: always-run calls named like a loss (``self.compute_loss(...)``); calls it or its loops always run (:mod:`.losscode`)
    loss_calls: tuple = ()
    spine_calls: tuple = ()
    #: an interface method (``@abstractmethod``, a body of ``...``/``pass``/``raise NotImplementedError``): overridden
    abstract: bool = False
    #: loops that feed a call's result back into its next call (see :mod:`.loops`)
    loops: list["LoopInfo"] = field(default_factory=list)
    #: ids of the loops a ``yield`` statement sits in, and ``for x in f(...)`` loops as (loop id, where,
    #: the iterated call's callee in flow IR): a consumer of a per-token generator (:mod:`.genloops`)
    yield_loops: frozenset[int] = frozenset()
    iter_calls: tuple = ()
    delegates: tuple = ()  # ``yield from f(...)``, ``return f(...)``: f's items, handed on
    #: ``while`` loops that feed nothing back, with every call of their body: serving loops when a
    #: call reaches the model step (see :mod:`.loops`); a tuple, empty for almost every function
    serve_loops: tuple = ()
    samples: bool = False  # calls a token picker (``argmax``, ``multinomial``, ``sample``): see :mod:`.tokenless`
    #: parameter -> its default as a :mod:`.valuefacts` value (None: not a literal)
    defaults: dict[str, tuple | None] = field(default_factory=dict)
    #: how names derive from names, and what each call passes (see :mod:`.stepflow`)
    derives: list[tuple] = field(default_factory=list)
    arg_calls: list = field(default_factory=list)
    implicit_reads: list[tuple] = field(default_factory=list)
    returns_object: bool = False  # every ``return`` gives some object, and the body never falls off its end
    returned_consts: tuple = ()  # (position, literals): what every ``return`` of a tuple holds there (:mod:`.returnedconsts`)
    returns_test: tuple | None = None  # one ``return`` testing ``self`` against enum members (:mod:`.modetests`)
    query: bool = False  # a method whose body is one ``return`` calling nothing but ``self``'s methods (:mod:`.modetests`)
    #: (parameter, its returned positions, bindings to check): every return hands it back (:mod:`.handback`)
    hands_back: tuple = ()
    #: what it returns (:mod:`.valuekinds`): a kind, a tuple of kinds, "" unknown, None no value seen
    returns: object = None
    forwards: bool | None = None  # every return hands on a call's result, its ``delegates`` (:mod:`.forwardedreturns`)
    #: the tests of a ``self`` field's class a truthy result implies (:mod:`.classtests`): ``can_use_graphs()``
    class_tests: tuple = ()
    #: callee keys (``names.callee_key``) whose results a name binds (``a, b = f(x)``) or a method is called
    #: on (``f(x).to(dev)``): only there does a return fact from another walk pay for walking this file again
    bound_calls: set[str] = field(default_factory=set)
    passed_back: set[str] = field(default_factory=set)  #: callee keys it returns as is (``return f(x)``, .valuekinds)
    handed_defs: set[str] = field(default_factory=set)  #: nested defs used as values, not only called (.valueflow)
    #: names used as an index (``x[rows]``, ``x[:, rows]``): only there does a parameter's being a
    #: Python list matter (GL208; :mod:`.valueflow` learns list parameters for these alone)
    index_names: set[str] = field(default_factory=set)
    #: names in a subscript's index or slice bounds (``mask[..., :upto]``) or passed to a call the value flow
    #: follows: only there does a per-step int matter (:data:`.valuekinds.STEP`, learned for these alone)
    step_uses: set[str] = field(default_factory=set)
    sized_uses: set[str] = field(default_factory=set)  # a factory's arguments: the same, from a capture alone (.frozenargs)
    #: names read in a truth test (``if``/``while``/``assert``/``x if c else y``/a comprehension's
    #: ``if``): only there does a parameter's holding Python numbers matter (GL105: ``if
    #: input_shape[-1] > 1:`` reads nothing back; :mod:`.valueflow` learns number parameters for these alone)
    test_names: set[str] = field(default_factory=set)
    #: names whose data a cast converts (``sinks.view(...).float()``, :func:`.weightargs.cast_root`): only
    #: there does a parameter's holding a weight matter (:mod:`.valueflow` learns weight parameters for these alone)
    cast_names: set[str] = field(default_factory=set)
    read_names: set[str] = field(default_factory=set)  # ``ids.item()``: no list's method (:mod:`.overrules`)
    #: names not known as tensors reduced whole (``lens.max()``, ``torch.sum(n)``) or indexed by a Python list (``lp[i, list(ids)]``:
    #: an upload, GL208): only there does a parameter's being a device tensor matter -- the 0-dim result read back as a size
    #: or a test, the list copied -- and names a type test asks about (``torch.is_tensor(p)``: :mod:`.typetests`), ``type_tested``
    reduced_names: set[str] = field(default_factory=set)
    type_tested: set[str] = field(default_factory=set)
    #: parameters presumed tensors, unannotated (:func:`.params.param_is_tensor`): only their number facts matter
    presumed_tensors: set[str] = field(default_factory=set)
    #: parameters whose annotation says what they are -- a tensor (``n: Tensor``), a Python list (``ids: list[int]``), a
    #: position (``pos: int``) -- the kind callers pass can overrule (:mod:`.valueflow`): only their facts against it
    #: matter, and only those a truth test (a tensor's) or an index (a list's, a position's) reads are kept (:mod:`.overrules`)
    annotated_tensors: set[str] = field(default_factory=set)
    annotated_lists: set[str] = field(default_factory=set)
    annotated_ints: set[str] = field(default_factory=set)
    #: ``obj.f`` / ``self.x.f`` the walk asked about (is it a tensor?): only there does a fact about the field of ``obj``'s
    #: class matter (:mod:`.fieldkinds`); a sorted tuple, () when none: the link holds one per function (11 MB on torch)
    field_reads: tuple[str, ...] = ()
    quiet: tuple = ()  # what it launches, and its synchronizes' project calls (:mod:`.quietcalls`); () unknown


@dataclass(slots=True)
class ClassInfo(Compact):
    qualname: str
    bases: list[Descriptor] = field(default_factory=list)
    methods: set[str] = field(default_factory=set)
    #: what its subclasses inherit (see :mod:`graphlint.static.inherited`): parameters and buffers,
    #: tensor attributes, methods annotated ``-> Tensor``
    weight_attrs: set[str] = field(default_factory=set)
    tensor_attrs: set[str] = field(default_factory=set)
    tensor_methods: set[str] = field(default_factory=set)
    #: ``@dataclass`` (called or not): calling it runs a generated ``__init__`` (:mod:`.generated`)
    dataclass: bool = False
    metaclass: Descriptor | None = None  # ``class C(Base, metaclass=Meta)``
    #: a dataclass's own fields in body order (``name: T`` at class level, not ``ClassVar``): what
    #: the generated ``__init__`` binds positional arguments to
    fields: tuple[str, ...] = ()
    #: Python-int fields a method other than ``__init__`` advances (``self.offset += n``): per-step
    #: values wherever they are read, through this object or another (:mod:`.fieldkinds`)
    counters: tuple[str, ...] = ()
    #: what its body declares false, ``(name, called)`` (:func:`.classtests.false_members`): a
    #: capability a class lacks, which a guard of a capture may test (:mod:`.classguards`)
    false_members: tuple = ()
    members: tuple[str, ...] = ()  # an enum body's members, each with its own value (:mod:`.modetests`)
    late_writes: tuple[str, ...] = ()  # ``self`` fields a method other than ``__init__`` assigns (:mod:`.modetests`)
    base_args: tuple = ()  # imported classes a base is subscripted with, ``P(Patch[Runner])`` (:mod:`.frameworkhooks`)


@dataclass(slots=True)
class RegionDecl(Compact):
    """A callable that becomes graph code, declared by ``kind``:

    - "region": ``Region(name, fn, capturable=...)`` of graphlint's target protocol;
    - "graphed": ``torch.cuda.make_graphed_callables(fn, ...)``;
    - "compiled": ``torch.compile(fn)`` (inductor: no per-step allocations, no CUDA graph);
    - "compiled-graph": ``torch.compile(fn, mode="reduce-overhead")`` and other cudagraph modes.

    ``expr`` is ``fn`` in :mod:`.flowir` form: what it holds when linking is what runs (a method, a
    ``partial``'s function, the closures a factory call returns: ``self._graph_a_fn(i)``). ``where``
    is where it is declared (see :class:`Site`)."""

    function: str  # the function that declares the region
    cls: str
    expr: tuple
    capturable: bool = True
    kind: str = "region"
    where: tuple = ()
    #: a ``torch.compile`` call's own IR: its result is the compiled callable, which the points-to
    #: marks when it captures (:mod:`.compilemodes`); None for the other kinds
    call: tuple | None = None
    #: "compiled" whose ``mode=`` is read through a name (``args.compile_mode``): that name
    mode: str = ""
    #: made only under a compile switch off by default (``if use_torch_compile:``, :mod:`.optin`; eager then): its name
    opt_in: str = ""
    dynamic: bool = False  #: ``torch.compile(f, ..., dynamic=True)``: its ints are symbolic (:mod:`.symbolic`)


#: the id of the pseudo-loop an iterator's ``__next__`` body is (see :mod:`.loops`); real loop ids are
#: statement ordinals, >= 1
PROTOCOL_LOOP = 0


@dataclass(slots=True)
class LoopInfo(Compact):
    """A ``for ... in range(...)`` or ``while`` loop whose ``calls`` take a value the body rebinds after the call
    (``logits = model(tokens[:, prev:cur]); ...; prev = cur``): a per-token loop's shape, if a call reaches a model."""

    id: int  # the loop statement's ordinal in its function
    where: tuple
    #: the calls' callees in :mod:`.flowir` form (what the call graph resolves)
    exprs: list[tuple] = field(default_factory=list)
    #: those of ``exprs`` that carry only through ``self`` fields other methods store (:mod:`.fieldcarry`)
    fields: list[tuple] = field(default_factory=list)
    #: those of ``exprs`` that call a ``self`` field's callable with ids sampled the iteration before (:mod:`.sampledcarry`)
    sampled: list[tuple] = field(default_factory=list)
    picked: list[tuple] = field(default_factory=list)  # those of ``exprs`` fed ids sampled the iteration before
    forever: bool = False  # a serving ``while`` whose test calls nothing (``while True``, a flag)
    solver: bool = False  # fed back only through an integrator's update (``x = x + dt * v``): :mod:`.solverloops`
    schedule: bool = False  # a ``for`` over a sampler's schedule, no ``range`` (:mod:`.scheduleloops`)


@dataclass(slots=True)
class Site(Compact):
    """Where a function captures or replays a graph (``kind``: "capture", "replay"), for ``entries``.

    ``where`` (also on :class:`RegionDecl` and :class:`LoopInfo`) is a position to look up only when
    ``graphlint entries`` prints it: (statement path, anchor class, rank), see :mod:`.positions`.
    Summaries never parse a file a second time for it."""

    kind: str
    function: str
    where: tuple = ()


@dataclass(slots=True)
class ScopeFlow(Compact):
    """One scope's bindings for the points-to analysis (see :mod:`graphlint.static.flows`)."""

    kind: str  # "module" | "class" | "function"
    parent: str = ""  # the enclosing function's qualname (closures), "" at module level
    cls: str = ""  # for a method, and a class body: the class's qualname
    fkind: str = ""  # "m" a method, "s" a staticmethod, "c" a classmethod, "p" a property, "" a plain function
    params: tuple[str, ...] = ()  # positional parameters in order, ``self`` included
    kwonly: tuple[str, ...] = ()
    vararg: str = ""
    kwarg: str = ""
    locals: frozenset[str] | set[str] | tuple[str, ...] = field(default_factory=set)  # names this scope binds
    outer: tuple[str, ...] = ()  # ``global`` / ``nonlocal`` names
    enclosing: tuple[str, ...] = ()  # the ``nonlocal`` ones: bound in an enclosing function, not the module
    stmts: list[tuple] = field(default_factory=list)
    unless: dict[int, tuple] = field(default_factory=dict)  # a binding run where isinstance fails (:mod:`.typenarrow`)
    only: dict[tuple, tuple | None] = field(default_factory=dict)  # a call made where isinstance holds (the same)

    def call_params(self) -> tuple[str, ...]:
        """The positional parameters a call fills: a method's or classmethod's receiver is bound by it."""
        return self.params[1:] if self.fkind in ("m", "c") else self.params


@dataclass(slots=True)
class ModuleInfo(Compact):
    path: str
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    #: local name -> dotted target of the import (``{"T": "torch", "sync": "torch.cuda.synchronize"}``)
    imports: dict[str, str] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    regions: list[RegionDecl] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    #: module functions annotated ``-> Tensor``, names bound to a tensor type, imported names annotated with (:mod:`.typealiases`)
    tensor_functions: set[str] = field(default_factory=set)
    tensor_aliases: set[str] = field(default_factory=set)
    annotated_imports: set[str] = field(default_factory=set)
    #: attributes this file gives a value other than None: "x" (``obj.x = v``, ``setattr(obj, "x", v)``),
    #: "Cls:x" / "Cls:*" (``self.x = v`` / ``setattr(self, name, v)`` in class Cls); see ``guards.needed_attrs``
    attr_writes: set[str] = field(default_factory=set)
    field_resets: set[str] = field(default_factory=set)  # stores outside __init__: "x" None, "!x" not True (lazyfields)
    armed_first: dict[str, list[frozenset]] = field(default_factory=dict)  # method -> flags each def sets first (armedcalls)
    flows: dict[str, ScopeFlow] = field(default_factory=dict)  # per scope (module, class, function): what points-to reads
    #: field name -> the :mod:`.valuefacts` values this file stores into it (``obj.x = v``, ``self.x = param``);
    #: ``owned_stores``: the same, each with the object it stores into where known (:mod:`.selffields`)
    field_stores: dict[str, list] = field(default_factory=dict)
    owned_stores: dict[str, list] = field(default_factory=dict)
    tensor_stores: dict[str, bool] = field(default_factory=dict)  # each store a device tensor? (fieldstores)
    #: attributes advanced in place (``cache.seq_len += n``): per-step state (:mod:`.stepflow`)
    advanced_attrs: set[str] = field(default_factory=set)
    #: what ``try: ... except ImportError`` imports (dotted): an optional kernel (:mod:`.unresolvedkinds`)
    optional_imports: set[str] = field(default_factory=set)
    #: names that may hold a CUDA-graph compile mode, (callee, position) of positional mode literals (:mod:`.compilemodes`)
    graph_modes: tuple[str, ...] = ()
    graph_mode_args: tuple[tuple[str, int], ...] = ()
    default_device: bool = False  # the file sets a default device other than the CPU (:mod:`.defaultdevice`)
    #: function -> the parameters a return of it is keyed by (:mod:`.keyedreturns`)
    keyed_returns: dict[str, set[str]] = field(default_factory=dict)
    denorm: list[tuple] = field(default_factory=list)  # weight_norm removals over module trees (:mod:`.denorm`)


@dataclass(frozen=True)
class Suppression:
    """A ``# graphlint: ignore[...]`` comment and the lines it covers.

    At line end it covers that line (for a multi-line statement, the whole statement);
    on its own line it covers the next statement. ``codes`` empty means every rule.
    A code entry may be a code (``GL101``) or a rule name (``host-sync-item``).
    """

    comment_line: int
    first_line: int
    last_line: int
    codes: tuple[str, ...] = ()
    reason: str = ""
    comment_col: int = 0  # 1-based column of ``# graphlint:`` (where GL001/GL003 point)
    #: why the comment is malformed (``ignore(GL102)``, ``ignore GL102``): it suppresses nothing, GL003 says so
    problem: str = ""


@dataclass
class FileSummary:
    """One file, summarized. Fields the check reads: ``path``, ``sha256``, ``skip_file``,
    ``suppressions``, ``errors`` (GL000-style problems as ``(line, col, message)``) and
    ``lines`` (source line count). Everything in ``data`` is the analyzer's own."""

    path: str
    sha256: str
    skip_file: bool = False
    suppressions: list[Suppression] = field(default_factory=list)
    errors: list[tuple[int, int, str]] = field(default_factory=list)
    lines: int = 0
    data: Any = None
