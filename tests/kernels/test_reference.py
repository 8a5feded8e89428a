"""The torch references against a plain loop oracle, and the CPU side of the dispatch."""

from __future__ import annotations

import pytest
import torch

import dsv4.kernels as kernels
from dsv4.kernels import reference

import kernels_loop_oracle as loop


def test_rms_norm_matches_loop_oracle():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 48, generator=gen, dtype=torch.float64).float()
    w = torch.randn(48, generator=gen).float()
    expected = torch.tensor(loop.rms_norm(x.tolist(), w.tolist(), 1e-6))
    torch.testing.assert_close(reference.rms_norm(x, w, 1e-6), expected, rtol=1e-5, atol=1e-6)


def test_rms_norm_keeps_dtype_and_writes_into_out():
    x = torch.randn(3, 32).bfloat16()
    w = torch.randn(32)
    out = torch.empty_like(x)
    result = kernels.rms_norm(x, w, 1e-5, out=out)
    assert result is out and out.dtype == torch.bfloat16
    expected = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5) * w)
    torch.testing.assert_close(out, expected.bfloat16())


@pytest.mark.parametrize("n", [1, 4, 6])
def test_sinkhorn_matches_loop_oracle(n):
    logits = torch.randn(3, n, n, generator=torch.Generator().manual_seed(n)) * 3
    expected = torch.tensor([loop.sinkhorn(m, 20, 1e-6) for m in logits.tolist()])
    result = kernels.sinkhorn(logits)
    assert result.dtype == torch.float32
    torch.testing.assert_close(result, expected, rtol=1e-5, atol=1e-6)


def test_sinkhorn_is_near_doubly_stochastic_for_bf16_logits():
    logits = torch.randn(2, 7, 4, 4).bfloat16()
    out = torch.empty(2, 7, 4, 4)
    p = kernels.sinkhorn(logits, iters=30, out=out)
    assert p is out
    torch.testing.assert_close(p.sum(-2), torch.ones(2, 7, 4), atol=1e-4, rtol=0)
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 7, 4), atol=1e-2, rtol=0)


@pytest.mark.parametrize("seed", range(4))
def test_nvfp4_matches_loop_oracle(seed):
    gen = torch.Generator().manual_seed(seed)
    # mixed magnitudes so some blocks get tiny (sub-normal, even zero) E4M3 scales
    x = torch.randn(4, 64, generator=gen) * torch.logspace(-4, 1, 64)
    expected = torch.tensor(loop.nvfp4_fake_quant(x.flatten().tolist())).reshape(x.shape)
    torch.testing.assert_close(reference.nvfp4_fake_quant(x), expected, rtol=1e-6, atol=0)


def test_e2m1_rounding_ties_go_to_even_codes():
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.75, -5.0])
    expected = torch.tensor([0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, -1.0, -4.0])
    assert torch.equal(reference.e2m1_round(ties), expected)


def test_nvfp4_all_zero_input_gives_zeros_not_nan():
    out = torch.full((2, 16), float("nan"))
    assert torch.equal(kernels.nvfp4_fake_quant(torch.zeros(2, 16), out=out), torch.zeros(2, 16))


def test_nvfp4_rejects_a_last_dim_not_divisible_by_16():
    with pytest.raises(ValueError, match="divisible by 16"):
        kernels.nvfp4_fake_quant(torch.zeros(2, 24))


def test_cpu_tensors_use_the_torch_backend(monkeypatch):
    monkeypatch.setenv("DSV4_KERNELS", "cutedsl")
    compiled = dict(kernels.registry._COMPILED)  # other tests in this process may have warmed a GPU
    kernels.warmup("cpu")  # a no-op: nothing to compile for a CPU
    operands = (torch.ones(1, 4), torch.ones(4))
    assert kernels.registry.compiled_kernel("rms_norm", operands, None, torch.float32) is None
    assert kernels.registry._COMPILED == compiled


@pytest.mark.parametrize("value, forced", [("torch", True), ("cutedsl", False), ("", False), (" Torch ", True)])
def test_dsv4_kernels_env_picks_the_backend(monkeypatch, value, forced):
    monkeypatch.setenv("DSV4_KERNELS", value)  # empty: the default, cutedsl where it can run
    assert kernels.registry.forced_torch() is forced


@pytest.mark.slow
def test_under_torch_compile_a_kernel_launch_is_a_graph_break_not_traced(monkeypatch):
    """CuTeDSL's launch path is not traceable (on the GPU dynamo failed at its stream handle, so
    every region errored); the launch must be an opaque call: one graph break at the op's line."""
    launched = []

    def fake_launcher(x, weight, eps, out=None):  # stands in for a compiled CuTeDSL kernel
        launched.append(torch.compiler.is_compiling())
        return reference.rms_norm(x, weight, eps, out=out)

    monkeypatch.setattr(kernels, "compiled_kernel", lambda *args: fake_launcher)

    def step(x, w):
        y = x * 2
        return kernels.rms_norm(y, w, 1e-6) + 1

    x, w = torch.randn(2, 8), torch.ones(8)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(step)(x, w)
    assert explained.graph_break_count == 1
    [reason] = explained.break_reasons
    assert any(f.filename == __file__ and "kernels.rms_norm" in (f.line or "") for f in reason.user_stack)
    torch._dynamo.reset()
    compiled = torch.compile(step, backend="eager")
    torch.testing.assert_close(compiled(x, w), step(x, w))
    assert launched and not any(launched)  # the launcher itself ran eagerly, outside the trace
    torch._dynamo.reset()
