"""Compile every CuTeDSL kernel for one device, once, at warm-up.

Shapes and strides are dynamic in the compiled code, so one compilation per dtype combination
(each module's ``DTYPE_KEYS``) serves every later call; other dtypes take the torch path. A
kernel that fails to compile or to run its smoke call warns and leaves its op on torch: the
engine keeps working, only slower.
"""

from __future__ import annotations

import warnings
from typing import Callable

import torch

from dsv4.kernels import nvfp4_kernel, rmsnorm_kernel, sinkhorn_kernel
from dsv4.kernels.cute_interop import current_stream

KERNEL_MODULES = (rmsnorm_kernel, sinkhorn_kernel, nvfp4_kernel)


def compile_all(device: torch.device) -> dict[tuple[str, tuple[torch.dtype, ...]], Callable]:
    """{(op, input dtypes): launcher with the op's public signature} for ``device``."""
    launchers: dict[tuple[str, tuple[torch.dtype, ...]], Callable] = {}
    with torch.cuda.device(device):
        stream = current_stream(device)
        for module in KERNEL_MODULES:
            try:
                for dtypes in module.DTYPE_KEYS:
                    launcher = module.make_launcher(module.compile_for(dtypes, device, stream))
                    # The first call loads the CUDA module; that must not happen in a capture.
                    launcher(*module.smoke_args(dtypes, device))
                    launchers[module.OP, dtypes] = launcher
            except Exception as error:  # noqa: BLE001 - any failure means "use torch", loudly
                warnings.warn(
                    f"dsv4.kernels: {module.OP} stays on the torch fallback, its CuTeDSL kernel "
                    f"failed to build for {device}: {type(error).__name__}: {error}",
                    RuntimeWarning,
                    stacklevel=2,
                )
        torch.cuda.current_stream(device).synchronize()  # surface launch errors here, not later
    return launchers
