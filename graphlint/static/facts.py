"""What one file's summary holds: :class:`FileSummary` (what the check reads: path, hash, suppressions,
errors) and, in its ``data``, the facts the linker reads (:class:`ModuleInfo`: functions, classes, calls,
hazard candidates).

Plain, picklable records. Call targets and class references are *descriptors* resolved only
at link time, because the class or function they name may live in a file summarized by
another worker:

- ``("name", "f")``: a bare name that is not an import (a def/class of this module, a builtin);
- ``("dotted", "pkg.mod.f")`` / ``("dotted", "..mod.f")``: resolved through the file's imports,
  relative imports keep their leading dots;
- ``("member", (root, attrs), "m" | None)``: ``self.m()``, ``self.a.b[i].m()``, ``model.blocks[i](x)``:
  follow the sub-module types of ``attrs`` from ``root`` ("self" or a class descriptor from a
  parameter annotation), then method ``m`` (or, if ``m`` is itself a sub-module attribute or
  None, its ``forward``);
- ``("super", "m")``: ``super().m(...)``;
- ``("local", "outer.inner")``: a nested def of the calling function, called or used as a value;
- ``("ref", <descriptor>)``: a bound method or module function passed as an argument
  (``Region("embed", self._embed)``, ``partial(self._layer, i)``): a callback, called later.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

Descriptor = tuple
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


class Compact:
    """Pickles as (class, field values in order): a third smaller and a quarter faster to load than
    a dataclass's instance dict, and every warm run loads every summary from the cache."""

    __slots__ = ()

    def __reduce__(self):
        cls = type(self)
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(self))
        return (cls, tuple(getattr(self, name) for name in names))


@dataclass
class CallSite(Compact):
    target: Descriptor
    in_capture: bool = False  # inside ``with torch.cuda.graph(...)``
    #: statement ordinal (within the calling function) of the first such call: what comes after a replay
    order: int = 0
    #: ids of every loop (the loop statement's ordinal) some instance of this call sits in
    loops: frozenset[int] = frozenset()
    #: only ever passed as a value (``partial(self._layer, i)``, ``torch.compile(f)``), never called here
    reference: bool = False
    once: str = ""  # made under ``if not self.<once>:`` (dropped when the class sets that flag True)
    #: made inside a loop over devices or under ``torch.cuda.device(<loop variable>)``: what it
    #: calls may capture on several devices from one process (GL501 is an error there)
    multi_device: bool = False


@dataclass
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
    #: ``torch.cuda.device(x)`` in its function)
    flags: frozenset[str] = frozenset()


@dataclass
class FunctionInfo(Compact):
    qualname: str
    name: str
    cls: str = ""  # enclosing class qualname, "" for module functions
    calls: list[CallSite] = field(default_factory=list)
    captures: bool = False  # opens a CUDA-graph capture (``with torch.cuda.graph``)
    #: compiled by a kernel DSL (``@cute.jit``, ``@cute.kernel``, ``@triton.jit``...): its ``if`` on
    #: DSL values is a device branch, not a host sync; only ``scope: anywhere`` rules apply inside
    device_code: bool = False
    #: ``@torch.compile``: "graph" with CUDA graphs (``mode="reduce-overhead"``), else "compile"
    compiled: str = ""
    #: statement ordinal of the first ``graph.replay()`` in the body, 0 when it replays none
    replay_order: int = 0
    replay_loops: tuple[int, ...] = ()  # the loops the replays sit in
    #: ids of the ``while`` / ``for ... in range(...)`` loops in the body (step loops, not collections)
    range_loops: list[int] = field(default_factory=list)
    #: runs device work itself: a torch op, a sub-module call, ``.cuda()``/``.to()``
    device_work: bool = False
    #: an interface method (``@abstractmethod``, a body of ``...``/``pass``/``raise NotImplementedError``):
    #: a call of it runs one of its overrides
    abstract: bool = False
    #: class descriptor of its return annotation (``-> BaseAttnBackend``), for ``self.x = make(...)``
    returns: Descriptor | None = None
    #: loops that feed a call's result back into its next call (see :mod:`.loops`)
    loops: list["LoopInfo"] = field(default_factory=list)
    #: parameter names in order, ``self``/``cls`` left out (matching a call's arguments when linking)
    params: tuple[str, ...] = ()
    #: parameters called inside a capture (``with torch.cuda.graph(g): fn(x)``): what callers pass
    #: there is captured (see :mod:`.passed`)
    captured_params: tuple[str, ...] = ()
    #: arguments that may be callables, per call: (callee, slot, kind, value, order) with slot the
    #: position or keyword, kind "param" (value: a parameter of this function, passed on) or
    #: "callable" (value: a descriptor, ``self._token_forward``, a module function)
    passes: list[tuple] = field(default_factory=list)


@dataclass
class ClassInfo(Compact):
    qualname: str
    bases: list[Descriptor] = field(default_factory=list)
    methods: set[str] = field(default_factory=set)
    #: ``self.attn = Attention(...)`` -> {"attn": [("name", "Attention")]}; ModuleList elements too.
    submodules: dict[str, list[Descriptor]] = field(default_factory=dict)
    #: what its subclasses inherit (see :mod:`graphlint.static.inherited`): parameters and buffers,
    #: tensor attributes, methods annotated ``-> Tensor``
    weight_attrs: set[str] = field(default_factory=set)
    tensor_attrs: set[str] = field(default_factory=set)
    tensor_methods: set[str] = field(default_factory=set)
    #: attributes holding callables rather than modules: ``self.ops = (self._attn, self._mlp)``,
    #: ``self._fwd = torch.compile(self._forward)`` -> {"ops": [member descriptors...]}
    callables: dict[str, list[Descriptor]] = field(default_factory=dict)
    #: ``self.backend = make_backend(...)`` -> {"backend": [("returns", <make_backend>)]}: typed by the
    #: factory's return annotation when linking (kept apart: most such attributes are tensors)
    made: dict[str, list[Descriptor]] = field(default_factory=dict)


@dataclass
class RegionDecl(Compact):
    """A callable that becomes graph code, declared by ``kind``:

    - "region": ``Region(name, fn, capturable=...)`` of graphlint's target protocol;
    - "graphed": ``torch.cuda.make_graphed_callables(fn, ...)``;
    - "compiled": ``torch.compile(fn)`` (inductor: no per-step allocations, no CUDA graph);
    - "compiled-graph": ``torch.compile(fn, mode="reduce-overhead")`` and other cudagraph modes.

    ``target`` is a descriptor of ``fn``; ``("returns", d)`` means the closures that the function
    ``d`` returns (``self._graph_a_fn(i)``). ``where`` is where it is declared (see :class:`Site`)."""

    function: str  # the function that declares the region
    cls: str
    target: Descriptor
    capturable: bool = True
    kind: str = "region"
    where: tuple = ()


@dataclass
class LoopInfo(Compact):
    """A ``for ... in range(...)`` or ``while`` loop whose ``calls`` take a value the loop body
    rebinds after the call (``logits = model(tokens[:, prev:cur]); ...; prev = cur``): the shape of
    a per-token decode loop, if a call reaches device work (decided when linking)."""

    id: int  # the loop statement's ordinal in its function
    where: tuple
    calls: list[Descriptor] = field(default_factory=list)


@dataclass
class Site(Compact):
    """Where a function captures or replays a graph (``kind``: "capture", "replay"), for ``entries``.

    ``where`` (also on :class:`RegionDecl` and :class:`LoopInfo`) is a position to look up only when
    ``graphlint entries`` prints it: (statement path, anchor class, rank), see :mod:`.positions`.
    Summaries never parse a file a second time for it."""

    kind: str
    function: str
    where: tuple = ()


@dataclass
class ModuleInfo(Compact):
    path: str
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    #: local name -> dotted target of the import (``{"T": "torch", "sync": "torch.cuda.synchronize"}``)
    imports: dict[str, str] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    regions: list[RegionDecl] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    #: module-level functions annotated ``-> Tensor`` (what other files learn when they import them)
    tensor_functions: set[str] = field(default_factory=set)
    #: attributes this file gives a value other than None: "x" (``obj.x = v``, ``setattr(obj, "x", v)``),
    #: "Cls:x" / "Cls:*" (``self.x = v`` / ``setattr(self, name, v)`` in class Cls); see ``guards.needed_attrs``
    attr_writes: set[str] = field(default_factory=set)


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
