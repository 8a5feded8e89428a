"""Two instances from one factory disagree before any graph exists: say which buffer, and why.

The replay probe compares a graph instance with an eager instance, so the factory must build the
same engine twice and ``stage(step)`` must feed both the same inputs. When their eager step-0
outputs differ, nothing graphlint could say about graphs would be evidence: it is a target error
(exit 2). This module finds the cause in two fresh instances: their tensors compared by path
before any step (unseeded *weights*; uninitialised memory the step reads counts too), then after
the same ``stage(0)`` (a buffer that differs only now: unseeded *inputs*), else the step itself is
not deterministic.
"""

from __future__ import annotations

from typing import Any

import torch

from graphlint.dynamic import reach
from graphlint.dynamic.target import TargetError


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device or a.device.type == "meta":
        return a.shape == b.shape and a.dtype == b.dtype
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a, b) or torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))
    return bool(torch.equal(a, b))


def _tensors(target: Any) -> dict[reach.Path, torch.Tensor]:
    return reach.tensors_by_path({"target": target}, lambda o: isinstance(o, torch.Tensor))


def differing(a: Any, b: Any) -> list[reach.Path]:
    """The path of every tensor that differs between two instances of a target."""
    left, right = _tensors(a), _tensors(b)
    return [path for path, tensor in left.items() if path not in right or not _equal(tensor, right[path])]


def _names(paths: list[reach.Path], limit: int = 4) -> str:
    names = [reach.describe(p) for p in paths]
    return ", ".join(f"`{n}`" for n in names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def diagnose(factory, devices, options: dict[str, Any], output_diff: float) -> str:
    """Why two instances from ``factory`` disagree, as one sentence naming the buffers."""
    with torch.no_grad():
        first, second = factory(devices, **options), factory(devices, **options)
        before = differing(first, second)
        if before:
            return (f"the factory is not deterministic: two instances differ before any step in {_names(before)}: "
                    "seed the weights (torch.manual_seed or a seeded torch.Generator); a buffer left uninitialised "
                    "(torch.empty) that the step reads counts too: zero it when the target is built")
        first.stage(0)
        second.stage(0)
        staged = differing(first, second)
        if staged:
            return (f"stage() is not deterministic: after the same stage(0) two instances hold different inputs in "
                    f"{_names(staged)}: inputs must be a function of the step (teacher forcing, a seeded "
                    "generator), not fresh random numbers")
    return (f"the step is not deterministic: two instances with equal weights and inputs give outputs that differ "
            f"at step 0 (max|diff| = {output_diff:.3g}): look for atomics, unseeded sampling or uninitialised "
            "scratch buffers inside the step")


def nondeterministic(factory, devices, options: dict[str, Any], output_diff: float) -> TargetError:
    try:
        return TargetError(diagnose(factory, devices, options, output_diff))
    except Exception as exc:  # noqa: BLE001 - the diagnosis failed, the verdict stands
        return TargetError(f"two instances from the factory differ at step 0, both eager (max|diff| = "
                           f"{output_diff:.3g}); finding out why failed: {type(exc).__name__}: {exc}")
