"""Compile every CuTeDSL kernel for one device, once, at warm-up.

Shapes and strides are dynamic in the compiled code, so one compilation per dtype combination
(each module's ``DTYPE_KEYS``) serves every later call; other dtypes take the torch path. A
kernel that fails to compile or to launch warns and leaves its op on torch: the engine keeps
working, only slower. A kernel that launches but never finishes raises instead (its stream is
blocked for good, so nothing after it could run); every step is logged on ``dsv4.kernels``.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Callable

import torch

from dsv4.kernels import nvfp4_kernel, rmsnorm_kernel, sinkhorn_kernel
from dsv4.kernels.cute_interop import current_stream

KERNEL_MODULES = (rmsnorm_kernel, sinkhorn_kernel, nvfp4_kernel)
# A smoke launch on a few dozen values finishes in microseconds; this only bounds a hang.
SMOKE_DEADLINE_S = 30.0

log = logging.getLogger("dsv4.kernels")


class KernelHangError(RuntimeError):
    """A warm-up launch did not finish: the device stream is stuck behind it."""


def compile_all(device: torch.device, wanted=None) -> dict[tuple[str, tuple[torch.dtype, ...]], Callable]:
    """{(op, input dtypes): launcher with the op's public signature} for ``device``; ``wanted``:
    only these (op, input dtypes) pairs (default: every variant)."""
    launchers: dict[tuple[str, tuple[torch.dtype, ...]], Callable] = {}
    with torch.cuda.device(device):
        stream = current_stream(device)
        for module in KERNEL_MODULES:
            try:
                for dtypes in module.DTYPE_KEYS:
                    if wanted is None or (module.OP, dtypes) in wanted:
                        launchers[module.OP, dtypes] = _build(module, dtypes, device, stream)
            except KernelHangError:
                raise
            except Exception as error:  # noqa: BLE001 - any failure means "use torch", loudly
                warnings.warn(
                    f"dsv4.kernels: {module.OP} stays on the torch fallback, its CuTeDSL kernel "
                    f"failed to build for {device}: {type(error).__name__}: {error}",
                    RuntimeWarning,
                    stacklevel=2,
                )
    return launchers


def _build(module, dtypes: tuple[torch.dtype, ...], device: torch.device, stream) -> Callable:
    what = f"{module.OP}{tuple(str(d).removeprefix('torch.') for d in dtypes)} on {device}"
    started = time.monotonic()
    launcher = module.make_launcher(module.compile_for(dtypes, device, stream))
    log.info("compiled %s in %.2f s", what, time.monotonic() - started)
    # The first call loads the CUDA module; that must not happen inside a capture.
    launcher(*module.smoke_args(dtypes, device))
    _wait_or_raise(device, what)
    log.info("smoke launch of %s finished", what)
    return launcher


def _wait_or_raise(device: torch.device, what: str) -> None:
    done = torch.cuda.Event()
    done.record(torch.cuda.current_stream(device))
    deadline = time.monotonic() + SMOKE_DEADLINE_S
    while not done.query():
        if time.monotonic() > deadline:
            raise KernelHangError(
                f"dsv4.kernels: the CuTeDSL kernel {what} did not finish within "
                f"{SMOKE_DEADLINE_S:.0f} s of its warm-up launch; run with DSV4_KERNELS=torch"
            )
        time.sleep(0.001)
