"""Glue between torch tensors/streams and CuTeDSL: the two places the seed got wrong.

``from_dlpack`` exports with ``__dlpack__(stream=-1)``, which torch refuses for a tensor on a
device other than the current one, so every conversion and launch runs under
``torch.cuda.device(t.device)``. Every launch gets torch's *current* stream explicitly: a kernel
left on the default stream runs eagerly while a graph is being captured on a side stream, and
the captured graph then replays without it.
"""

from __future__ import annotations

import torch

import cuda.bindings.driver as cuda
from cutlass.cute.runtime import from_dlpack

TORCH_TO_CUTLASS_NAMES = {
    torch.float32: "Float32",
    torch.bfloat16: "BFloat16",
    torch.float16: "Float16",
}
# Input dtypes every kernel is compiled for at warm-up; anything else takes the torch path.
KERNEL_DTYPES = tuple(TORCH_TO_CUTLASS_NAMES)


def as_cute(t: torch.Tensor):
    """A CuTe view of a contiguous tensor with dynamic shape and strides (innermost stride 1)."""
    return from_dlpack(t).mark_layout_dynamic(leading_dim=t.dim() - 1)


def as_cute_static(t: torch.Tensor):
    """A CuTe view with the tensor's shape baked in (for fixed-size operands such as scalars)."""
    return from_dlpack(t)


def current_stream(device: torch.device) -> cuda.CUstream:
    return cuda.CUstream(torch.cuda.current_stream(device).cuda_stream)


def default_stream() -> cuda.CUstream:
    """Stream handle 0, exactly what a CuTeDSL ``launch()`` without ``stream=`` uses."""
    return cuda.CUstream(0)
