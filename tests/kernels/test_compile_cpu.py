"""Every CuTeDSL kernel compiles for Hopper on a machine without a GPU (``CUTE_DSL_ARCH``)."""

from __future__ import annotations

import importlib.util
import re
from unittest import mock

import pytest
import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("cutlass") is None,
    reason="nvidia-cutlass-dsl not installed (pip install -e '.[kernels]')",
)

CPU = torch.device("cpu")
# Each kernel module with the PTX instruction proving its key step was lowered as intended.
SIGNATURE_INSTRUCTION = {
    "rmsnorm_kernel": "shfl.sync.bfly",  # the warp reduction of the sum of squares
    "sinkhorn_kernel": "ex2.approx",  # the softmax exponential
    "nvfp4_kernel": "cvt.rn.satfinite.e4m3x2.f32",  # hardware E4M3 rounding of block scales
}


def _cases():
    for name in SIGNATURE_INSTRUCTION:
        module = importlib.import_module(f"dsv4.kernels.{name}")
        for dtypes in module.DTYPE_KEYS:
            yield pytest.param(module, dtypes, id=f"{module.OP}-{'-'.join(map(str, dtypes))}")


@pytest.fixture(scope="module")
def compile_ptx(tmp_path_factory):
    """``cute.compile`` for sm_90a whatever this machine has, returning the PTX.

    Keeping the PTX makes the DSL write it to its dump directory (read once, at import), so
    that directory is pointed at a temporary one on the DSL's settings object.
    """
    import cutlass.cute as cute
    from cutlass.cutlass_dsl import CuTeDSL

    from dsv4.kernels.cute_interop import default_stream

    dump_dir = str(tmp_path_factory.mktemp("cute_dump"))
    with mock.patch.object(CuTeDSL._get_dsl().envar, "dump_dir", dump_dir):

        def compile_module(module, dtypes) -> str:
            args = module.example_args(dtypes, CPU)
            options = cute.compile[cute.GPUArch("sm_90a"), cute.KeepPTX]
            return options(module.launch, *args, default_stream()).artifacts.PTX

        yield compile_module


CASES = list(_cases()) if importlib.util.find_spec("cutlass") else []


def shuffles_under_lane_guard(ptx: str) -> list[str]:
    """Full-warp ``shfl.sync`` (member mask -1) inside a branch taken by some lanes only.

    Lanes skipping the branch never reach that shuffle, so the lanes inside wait for them
    forever: the rms_norm warm-up hang on the first H200 run (``warp_idx()`` under
    ``if lane_idx() == 0``). Guards recognised: a predicate set from ``%laneid`` or ``%tid``.
    """
    lines = [line.strip() for line in ptx.splitlines()]
    lane_regs = {m.group(1) for line in lines if (m := re.match(r"mov\.u32\s+(%r\d+), %(laneid|tid\.x);", line))}
    guards = {m.group(1) for line in lines
              if (m := re.match(r"setp\.\S+\s+(%p\d+), (%r\d+)", line)) and m.group(2) in lane_regs}
    found = []
    for i, line in enumerate(lines):
        branch = re.match(r"@!?(%p\d+) bra\s+(\S+);", line)
        if not branch or branch.group(1) not in guards:
            continue
        for inner in lines[i + 1:]:
            if inner == branch.group(2) + ":":
                break
            if inner.startswith("shfl.sync") and inner.rstrip(";").endswith("-1"):
                found.append(inner)
    return found


def test_the_lane_guard_check_finds_the_shuffle_that_hung():
    hung = """mov.u32 %r19, %laneid;
    setp.ne.b32 %p3, %r19, 0;
    @%p3 bra $L__BB0_5;
    shr.u32 %r20, %r40, 5;
    shfl.sync.idx.b32 %r21, %r20, 0, 31, -1;
    $L__BB0_5:"""
    assert shuffles_under_lane_guard(hung) == ["shfl.sync.idx.b32 %r21, %r20, 0, 31, -1;"]
    converged = "shfl.sync.idx.b32 %r5, %r20, 0, 31, -1;\n" + hung.replace("shfl.sync.idx.b32 %r21, %r20, 0, 31, -1;", "")
    assert shuffles_under_lane_guard(converged) == []


@pytest.mark.parametrize("module, dtypes", CASES)
@pytest.mark.slow
def test_kernel_compiles_for_hopper(compile_ptx, module, dtypes):
    ptx = compile_ptx(module, dtypes)
    assert ".target sm_90a" in ptx
    assert SIGNATURE_INSTRUCTION[module.__name__.rsplit(".", 1)[1]] in ptx
    assert shuffles_under_lane_guard(ptx) == []


def test_a_warm_up_launch_that_never_finishes_raises_instead_of_hanging(monkeypatch):
    from dsv4.kernels import compile as kernel_compile

    class NeverDone:
        def record(self, stream):
            pass

        def query(self):
            return False

    monkeypatch.setattr(torch.cuda, "Event", NeverDone)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: None)
    monkeypatch.setattr(kernel_compile, "SMOKE_DEADLINE_S", 0.01)
    with pytest.raises(kernel_compile.KernelHangError, match="rms_norm.*DSV4_KERNELS=torch"):
        kernel_compile._wait_or_raise(torch.device("cuda", 0), "rms_norm('bfloat16',)")
