"""What every seed-lab fault shares: its spec, and a full-graph decoder that plants it.

A fault is a :class:`FaultDecoder`: a subclass of the full-graph decoder that differs from it
only at the planted line(s), each marked ``# fault: NAME``. Two ways to plant one:

* **In the step** -- override one stage of :class:`~dsv4.full_graph.FullGraphDecoder`
  (``_embed``, ``_layer``, ``stage``, the regions).
* **In a component** -- a *variant*: a subclass of ``Attention``, ``MoE``, ``Router``,
  ``HyperConnection`` or ``Block`` that overrides one method and adds no state of its own
  (anything it needs is allocated in ``adopt()``, once, before the first step). The decoder
  installs it in every layer of a structural copy of the model: same parameters and buffers
  (shared, not copied), the variant's methods. The model the decoder was given is untouched,
  so a clean decoder and a faulty one can share it.

Decision -- no monkeypatching: nothing in torch, dsv4 or graphlint is replaced at runtime.
Every planted line is ordinary source on the decode path, so ``graphlint check`` reads it the
way it reads any engine. A variant is installed by re-classing a component *of the copy*,
which is how a subclass instance is made from an existing module without re-initialising it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import ClassVar

from torch import nn

from dsv4.full_graph import FullGraphDecoder
from dsv4.model import DSV4Model

MARKER = "# fault:"


@dataclass(frozen=True)
class Fault:
    """One planted fault and what each half of graphlint should report about it.

    ``static``: rules ``graphlint check`` reports at the planted line; ``cpu``: runtime rules the
    tracer reports there on the CPU; ``gpu``: runtime rules reported there on one GPU (tracer,
    sync-debug, capture); ``gpu_region``: runtime rules reported for the whole region (replay
    mismatches and empty graphs name the region, not a line); ``symptom``: what the GPU shows
    (``capture error``, ``empty graph``, ``stale replay``, ``slower step``, ``slower eager step``:
    only where a region runs eagerly, ``memory growth``, ``none``). ``blind`` says, per half or
    probe, why it cannot see the fault (every empty expectation has its reason). ``gpus=2``: the fault only does harm across two devices (issue
    13); one GPU shows what it can, and ``gpu2`` names the runtime rules expected at the planted
    line with the layers split over two GPUs (not yet run: no machine with two was lent).
    ``control``: a row the seed marks fine by design: nothing may report it.
    """

    name: str
    seed: tuple[str, ...]
    summary: str
    static: tuple[str, ...] = ()
    category: str = ""
    cpu: tuple[str, ...] = ()
    gpu: tuple[str, ...] = ()
    gpu_region: tuple[str, ...] = ()
    symptom: str = "none"
    blind: dict[str, str] = field(default_factory=dict)
    gpus: int = 1
    gpu2: tuple[str, ...] = ()
    control: bool = False


class Variant(nn.Module):
    """Mixin for component variants: ``adopt()`` allocates what the variant needs, once."""

    def adopt(self) -> None:
        """Called when the fault decoder installs the variant, before any step."""


def _component(block: nn.Module, path: str) -> tuple[nn.Module | None, str, nn.Module]:
    """(parent, attribute, component) for a dotted path below a block ("" is the block)."""
    parent, attr, node = None, "", block
    for part in [p for p in path.split(".") if p]:
        parent, attr, node = node, part, getattr(node, part)
    return parent, attr, node


def with_variants(model: DSV4Model, variants: dict[str, type[nn.Module]]) -> DSV4Model:
    """A copy of ``model`` sharing its tensors, with ``variants`` installed in every block
    (``{"attn": SomeAttention, "moe.router": SomeRouter, "": SomeBlock}``)."""
    tensors = [*model.parameters(), *model.buffers(), *(t for pair in model.ropes.values() for t in pair)]
    twin = copy.deepcopy(model, {id(t): t for t in tensors})
    for block in twin.blocks:
        for path, variant in variants.items():
            _parent, _attr, node = _component(block, path)
            if not isinstance(node, nn.Module) or not issubclass(variant, type(node)):
                raise TypeError(f"{variant.__name__} is not a variant of {type(node).__name__} at {path!r}")
            if "__init__" in vars(variant):
                raise TypeError(f"{variant.__name__} must not define __init__: allocate in adopt()")
            node.__class__ = variant
            if isinstance(node, Variant):
                node.adopt()
    return twin


class FaultDecoder(FullGraphDecoder):
    """The full-graph decoder with one fault planted (see the module docstring).

    ``variants``: component classes installed in every layer. ``self_capturing``: the decoder
    captures its own graphs even under graphlint's target (whose harness otherwise captures
    each region itself), because the fault is in how the engine captures.
    """

    fault: ClassVar[Fault]
    variants: ClassVar[dict[str, type[nn.Module]]] = {}
    self_capturing: ClassVar[bool] = False

    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        super().__init__(with_variants(model, self.variants) if self.variants else model, use_graphs)
        self.prepare()

    def prepare(self) -> None:
        """Allocate what the fault needs (once, before any step)."""
