"""The seed lab: every row of the seed inventory as a fault planted in the full-graph decoder.

Each fault is a :class:`~dsv4.faults.base.FaultDecoder` named like its seed row, selected by
name (``python -m dsv4 generate --fault NAME``, ``graphlint inventory --option fault=NAME``),
with its planted line marked ``# fault: NAME`` and its expectations (which static and runtime
rules should report it, and why a half cannot) in its :class:`~dsv4.faults.base.Fault`.
:mod:`dsv4.faults.seed` maps every row of the seed inventory to its faults, or says why none
applies. ``python -m dsv4.faults report`` runs both halves on every fault and writes the table.

Decision: ``pyproject.toml`` excludes ``dsv4/faults`` from ``graphlint check`` (so ``graphlint
check dsv4/`` keeps its documented result: the findings are the eager reference decoder's);
the lab checks it with its own config, :data:`LAB_CONFIG`, which excludes nothing.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from dsv4.faults.base import MARKER, Fault, FaultDecoder
from dsv4.faults.capture import (CaptureWithoutStream, FromDlpackInCapture, KernelWithoutStream,
                                 SetDeviceInCapture)
from dsv4.faults.layers import (CompressorBoundaryItem, CompressorReturnsNone, ContiguousCopy, MhcItem,
                                MhcNewOutput, NormWeightFp32Cast, PositionsToRopeDevice, PythonNComp)
from dsv4.faults.moe import (BincountCounts, FullPerStep, GsaCopyFromView, LikeFactoryClamp, OffsetsBranch,
                             OffsetsPythonWrite, PerStepScaleBuffer, RouterFp32WeightCast, TokenToLayerDevice,
                             ZerosGemmOut)
from dsv4.faults.step import (CudaSynchronize, GrowingHistory, HostSampling, LayerLoopToDevice, PageableH2D,
                              PerStepXBuffer, PinnedTokenCopy, ProfileSyncGuarded, ScalarTokenWrite, VerboseItem,
                              WarmupItem)

__all__ = ["FAULTS", "LAB_CONFIG", "Fault", "FaultDecoder", "fault_decoder", "planted"]

PACKAGE = Path(__file__).resolve().parent
LAB_CONFIG = PACKAGE / "graphlint.toml"

_ALL: tuple[type[FaultDecoder], ...] = (
    # 1 host syncs, 2 per-step allocations
    MhcItem, WarmupItem, HostSampling, VerboseItem, PerStepScaleBuffer, ZerosGemmOut, FullPerStep,
    LikeFactoryClamp, ContiguousCopy, MhcNewOutput, PerStepXBuffer,
    # 3 data-dependent control flow
    ScalarTokenWrite, PageableH2D, PinnedTokenCopy, OffsetsPythonWrite, OffsetsBranch, BincountCounts,
    CompressorBoundaryItem, CompressorReturnsNone, PythonNComp,
    # 4/8 cross-device, 5 synchronize
    LayerLoopToDevice, PositionsToRopeDevice, TokenToLayerDevice, CudaSynchronize, ProfileSyncGuarded,
    # 6 allocations inside capture
    GsaCopyFromView, RouterFp32WeightCast, NormWeightFp32Cast,
    # 7/9 capture hygiene, Phase 1
    SetDeviceInCapture, FromDlpackInCapture, KernelWithoutStream, CaptureWithoutStream, GrowingHistory,
)
FAULTS: dict[str, type[FaultDecoder]] = {cls.fault.name: cls for cls in _ALL}


def fault_decoder(name: str) -> type[FaultDecoder]:
    if name not in FAULTS:
        raise ValueError(f"unknown fault {name!r} (`python -m dsv4.faults list` names them all)")
    return FAULTS[name]


@functools.lru_cache(maxsize=1)
def _markers() -> dict[str, list[tuple[Path, int]]]:
    found: dict[str, list[tuple[Path, int]]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MARKER in text and not text.lstrip().startswith("#"):
                name = text.split(MARKER, 1)[1].split()[0]
                found.setdefault(name, []).append((path, number))
    return found


def planted(name: str) -> list[tuple[Path, int]]:
    """(file, line) of every line marked ``# fault: NAME``, the planted line first."""
    lines = _markers().get(name)
    if not lines:
        raise LookupError(f"fault {name!r} has no `{MARKER} {name}` marker in {PACKAGE}")
    return lines


def enclosing_function(path: Path, line: int) -> str:
    """The qualified name of the innermost function around ``line`` (``Class.method``)."""
    best: tuple[int, str] = (0, "")

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{child.name}"
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        child.lineno <= line <= child.end_lineno and child.lineno > best[0]:
                    best = (child.lineno, qual)
                visit(child, qual + ".")

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return best[1]
