"""The target protocol: how graphlint drives an engine it knows nothing about.

A *factory* (``--target path/to/file.py:make_target``) is called as
``factory(devices: list[torch.device], **options) -> Target`` and must build the engine
deterministically (same weights for the same options), because the replay probe builds two
instances and compares a graph-replayed one with an eager one.

A :class:`Target` splits one decode step into three parts:

* ``stage(step)`` -- host-side staging of step ``step``'s inputs into the engine's static
  buffers (token ids, positions). It is never captured. Inputs must be a deterministic
  function of ``step`` (teacher forcing), so two instances see the same inputs and the
  replay probe can change inputs from step to step.
* ``regions()`` -- the step as an ordered list of :class:`Region`. Running every region's
  ``fn`` in order, after ``stage(step)``, performs the step. A capturable region's ``fn``
  must read and write only static buffers so that a CUDA graph of it can be replayed.
  ``capturable=False`` marks a deliberately eager region (e.g. attention between graphs).
* ``output()`` -- the step's result (logits), read after the last region.

A target with no ``regions`` method is treated as one region named ``step`` calling
``target.step()``. :class:`ModuleTarget` adapts a plain ``nn.Module`` decode step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable


@dataclass
class Region:
    name: str
    fn: Callable[[], Any]
    device: Any = "cpu"  # torch.device or str; where the region's kernels run
    capturable: bool = True
    # Optional: the source of the region, for attributing findings when a probe has no frame.
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Target(Protocol):
    devices: list[Any]

    def stage(self, step: int) -> None: ...

    def regions(self) -> list[Region]: ...

    def output(self) -> Any: ...


def regions_of(target: Any) -> list[Region]:
    """The target's regions, or one region wrapping ``target.step`` when it declares none."""
    if hasattr(target, "regions"):
        regions = list(target.regions())
        if regions:
            return regions
    step = getattr(target, "step", None)
    if step is None:
        raise TypeError(f"{type(target).__name__} has neither regions() nor step()")
    devices = getattr(target, "devices", None) or ["cpu"]
    return [Region(name="step", fn=step, device=devices[0])]
