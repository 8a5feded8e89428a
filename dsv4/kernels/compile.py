"""Compile every CuTeDSL kernel for one device, once, at warm-up.

Shapes and strides are dynamic in the compiled code, so one compilation per dtype combination
serves every later call; a dtype combination not listed here takes the torch path.
"""

from __future__ import annotations

from typing import Callable

import torch

from dsv4.kernels import nvfp4_kernel, rmsnorm_kernel, sinkhorn_kernel
from dsv4.kernels.cute_interop import KERNEL_DTYPES, current_stream

# rms_norm keys are (x dtype, weight dtype): the norm weight is either x's dtype or fp32.
RMS_NORM_DTYPES = tuple(
    (x, w) for x in KERNEL_DTYPES for w in dict.fromkeys((x, torch.float32))
)


def compile_all(device: torch.device) -> dict[tuple[str, tuple[torch.dtype, ...]], Callable]:
    """{(op, input dtypes): launcher with the op's public signature} for ``device``."""
    launchers: dict[tuple[str, tuple[torch.dtype, ...]], Callable] = {}
    with torch.cuda.device(device):
        stream = current_stream(device)
        for x_dtype, w_dtype in RMS_NORM_DTYPES:
            compiled = rmsnorm_kernel.compile_rms_norm(x_dtype, w_dtype, device, stream)
            launchers["rms_norm", (x_dtype, w_dtype)] = rmsnorm_kernel.make_launcher(compiled)
        for dtype in KERNEL_DTYPES:
            compiled = sinkhorn_kernel.compile_sinkhorn(dtype, device, stream)
            launchers["sinkhorn", (dtype,)] = sinkhorn_kernel.make_launcher(compiled)
            compiled = nvfp4_kernel.compile_nvfp4(dtype, device, stream)
            launchers["nvfp4_fake_quant", (dtype,)] = nvfp4_kernel.make_launcher(compiled)
    return launchers
