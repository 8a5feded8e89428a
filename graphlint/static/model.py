"""What one file's summary holds for the linker (``FileSummary.data``).

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

from dataclasses import dataclass, field

Descriptor = tuple


@dataclass
class CallSite:
    target: Descriptor
    in_capture: bool = False  # inside ``with torch.cuda.graph(...)``


@dataclass
class Candidate:
    """A possible hazard; the linker reports it only if its function is hot (or it is capture code)."""

    code: str
    line: int
    col: int
    function: str
    line_text: str
    name: str = ""  # what matched, substituted for ``{name}`` in the rule message
    in_capture: bool = False


@dataclass
class FunctionInfo:
    qualname: str
    name: str
    cls: str = ""  # enclosing class qualname, "" for module functions
    calls: list[CallSite] = field(default_factory=list)
    captures: bool = False  # opens a CUDA-graph capture (``with torch.cuda.graph``)
    #: compiled by a kernel DSL (``@cute.jit``, ``@cute.kernel``, ``@triton.jit``...): its ``if`` on
    #: DSL values is a device branch, not a host sync; only ``scope: anywhere`` rules apply inside
    device_code: bool = False


@dataclass
class ClassInfo:
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


@dataclass
class RegionDecl:
    """``Region(name, fn, capturable=...)`` of graphlint's target protocol: ``fn`` is decode-step
    code by declaration. ``target`` is a descriptor of ``fn``; ``("returns", d)`` means the closures
    that the function ``d`` returns (``self._graph_a_fn(i)``)."""

    function: str  # the function that declares the region
    cls: str
    target: Descriptor
    capturable: bool = True


@dataclass
class ModuleInfo:
    path: str
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    #: local name -> dotted target of the import (``{"T": "torch", "sync": "torch.cuda.synchronize"}``)
    imports: dict[str, str] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    regions: list[RegionDecl] = field(default_factory=list)
    #: module-level functions annotated ``-> Tensor`` (what other files learn when they import them)
    tensor_functions: set[str] = field(default_factory=set)
