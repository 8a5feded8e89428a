"""On a GPU: the CuTeDSL kernels against the references, and inside CUDA graphs.

The capture tests change the inputs after capture and compare the replay with a fresh eager
result. That is what catches a kernel launched without torch's current stream: it runs eagerly
during capture, the graph records nothing for it, and a replay leaves the capture-time output.
"""

from __future__ import annotations

import faulthandler
import importlib.util

import pytest
import torch

import dsv4.kernels as kernels
from dsv4.kernels import reference

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
needs_cutlass = pytest.mark.skipif(
    importlib.util.find_spec("cutlass") is None or kernels.registry.forced_torch(),
    reason="needs nvidia-cutlass-dsl (pip install -e '.[kernels]') and DSV4_KERNELS unset or cutedsl",
)

DEVICE = torch.device("cuda", 0)
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


@pytest.fixture(scope="module", autouse=True)
def warm():
    # a host-side hang in compilation or module loading prints every thread's stack
    faulthandler.dump_traceback_later(90, exit=True)
    try:
        kernels.warmup(DEVICE)
    finally:
        faulthandler.cancel_dump_traceback_later()


def _inputs(op: str, dtype: torch.dtype, rows: int, gen: torch.Generator):
    """Positional operands of ``op`` (scaled so every op sees non-trivial values)."""
    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=DEVICE).to(dtype)

    if op == "rms_norm":
        return (randn(rows, 1024) * 3, randn(1024), 1e-6)
    if op == "sinkhorn":
        return (randn(rows, 4, 4) * 2,)
    return (randn(rows, 512) * torch.logspace(-3, 1, 512, device=DEVICE).to(dtype),)


OPS = {
    "rms_norm": kernels.rms_norm,
    "sinkhorn": kernels.sinkhorn,
    "nvfp4_fake_quant": kernels.nvfp4_fake_quant,
}
REFERENCES = {
    "rms_norm": reference.rms_norm,
    "sinkhorn": reference.sinkhorn,
    "nvfp4_fake_quant": reference.nvfp4_fake_quant,
}


def _close(op: str, result: torch.Tensor, expected: torch.Tensor) -> bool:
    """Within rounding of the output dtype; NVFP4 may differ by one grid step on rare ties.

    (torch divides by a scalar as a multiply by its reciprocal, so a value sitting on an E2M1
    midpoint can round the other way; a step is at most a third of the block's amax.)
    """
    diff = (result.float() - expected.float()).abs()
    scale = expected.float().abs().max().clamp(min=1.0)
    if op == "nvfp4_fake_quant":
        return bool((diff > 0).float().mean() <= 1e-3 and diff.max() <= scale / 3)
    tolerance = 1e-5 if op == "sinkhorn" else 1e-2
    return bool(diff.max() <= tolerance * scale)


def _tensors(args) -> tuple[torch.Tensor, ...]:
    return tuple(a for a in args if isinstance(a, torch.Tensor))


@needs_cutlass
def test_warmup_switches_the_backend_to_cutedsl():
    assert kernels.backend() == "cutedsl"


@needs_cutlass
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 3, 300])
def test_kernel_matches_reference(op, dtype, rows):
    args = _inputs(op, dtype, rows, torch.Generator(DEVICE).manual_seed(rows))
    out_dtype = torch.float32 if op == "sinkhorn" else dtype
    assert kernels.registry.compiled_kernel(op, _tensors(args), None, out_dtype) is not None
    result, expected = OPS[op](*args), REFERENCES[op](*args)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    assert _close(op, result, expected)


def _replays_fresh(op: str, run) -> bool:
    """Capture ``run(args, out)``, copy new inputs in, replay: does the output follow them?"""
    def make_args(seed: int):
        return _inputs(op, torch.bfloat16, 8, torch.Generator(DEVICE).manual_seed(seed))

    static_args = make_args(0)
    out = run(static_args, None)  # eager warm-up; also allocates the static output
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream(device=DEVICE)
    with torch.cuda.device(DEVICE), torch.cuda.stream(stream):
        try:
            with torch.cuda.graph(graph, stream=stream):
                run(static_args, out)
        except RuntimeError:
            return False  # a capture that fails outright counts as caught too
    fresh_args = make_args(1)
    for static, fresh in zip(_tensors(static_args), _tensors(fresh_args)):
        static.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    return _close(op, out, REFERENCES[op](*fresh_args))


def _public(op):
    return lambda args, out: OPS[op](*args, out=out)


def _without_stream(op):
    return lambda args, out: kernels._launch_without_stream(op, *args, out=out)


@pytest.mark.parametrize("op", OPS)
def test_ops_replay_with_new_inputs_in_a_cuda_graph(op):
    assert _replays_fresh(op, _public(op))


@pytest.mark.parametrize("op", OPS)
def test_torch_fallback_replays_with_new_inputs_in_a_cuda_graph(op, monkeypatch):
    monkeypatch.setenv("DSV4_KERNELS", "torch")
    assert _replays_fresh(op, _public(op))


@pytest.mark.parametrize("op", OPS)
def test_a_kernel_launched_without_the_current_stream_replays_stale(op):
    """Whichever backend is active: the hook graphlint's planted-hazard fixture relies on."""
    assert not _replays_fresh(op, _without_stream(op))
