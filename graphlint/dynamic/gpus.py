"""How many CUDA devices the inventory can use, asked without importing torch when NVML can say
(the workers then start about 3 s earlier), and whether ``--gpus`` names only those."""

from __future__ import annotations

import ctypes
import os


def _nvml_count() -> int | None:
    """GPUs NVML sees (what ``torch.cuda.device_count`` reports without CUDA_VISIBLE_DEVICES), without
    importing torch: the workers start about 3 s earlier. ``None`` when NVML cannot say."""
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return None  # its syntax (indices, UUIDs, MIG) is torch's to read
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() != 0:
            return None
        count = ctypes.c_uint(0)
        ok = nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0
        nvml.nvmlShutdown()
        return count.value if ok else None
    except (OSError, AttributeError):
        return None


def gpu_count() -> int:
    """Visible CUDA devices (0 without CUDA): NVML when it can say, else torch."""
    count = _nvml_count()
    if count is None:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return count


def validate_gpus(gpus: list[int] | None, device_count: int, cpu: bool = False) -> str:
    """An error message for GPU indices that do not exist, else ''. Asking for GPUs where there is
    none (or together with ``--cpu``) is a usage error too, never silently a CPU run: a CI job that
    meant to test capture on GPU 0 must not pass on the tracer alone."""
    if gpus and cpu:
        return f"--gpus {','.join(map(str, gpus))} and --cpu contradict each other (--cpu probes on the CPU only)"
    if gpus and device_count == 0:
        return (f"--gpus {','.join(map(str, gpus))}: no CUDA device is visible here (torch sees none); without "
                "--gpus the tracer runs on the CPU and says that capture was skipped")
    bad = [g for g in gpus or [] if not 0 <= g < device_count]
    if bad:
        return f"--gpus {','.join(map(str, bad))}: only {device_count} CUDA device(s) visible"
    return ""
