"""Building the engine: deterministic weights drawn where they live, and only the kernels it calls.

On the H200 (2026-12-02) a graphlint worker spent 12-15 s building the ``small`` preset twice while
three workers drew 274 M weights each on the host and copied them over; the weights are now drawn on
the first device (CUDA's generator on a GPU), and warm-up compiles only the kernel variants the
model's dtypes can call. On the CPU the weights must stay exactly what they were.
"""

from __future__ import annotations

import hashlib

import pytest
import torch

from dsv4 import kernels
from dsv4.config import get_config
from dsv4.kernels import registry
from dsv4.model import DSV4Model


def _digest(model: DSV4Model) -> str:
    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        h.update(name.encode())
        h.update(tensor.float().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def test_cpu_weights_are_what_they_were_before_the_weights_moved_to_the_device():
    """Pinned from the build that drew on the host and copied (main at bc95bb3): CPU results of every
    test and report stay comparable."""
    assert _digest(DSV4Model(get_config("tiny"), seed=0)) == "155ed2c5d02af56d"
    assert _digest(DSV4Model(get_config("tiny"), seed=1)) != "155ed2c5d02af56d"


def test_the_parameters_are_made_on_the_first_device_not_copied_there(monkeypatch):
    """The model is built under ``torch.device(first)``: nothing is made on the host and moved."""
    made = []
    real_empty = torch.empty

    def empty(*args, **kwargs):
        out = real_empty(*args, **kwargs)
        made.append(out.device.type)
        return out

    monkeypatch.setattr(torch, "empty", empty)
    DSV4Model(get_config("tiny"), [torch.device("meta")], seed=0)
    assert made and set(made) == {"meta"}


def test_warmup_compiles_only_the_variants_of_the_models_dtypes(monkeypatch):
    pytest.importorskip("cutlass", reason="the kernel modules import CuTeDSL")
    from dsv4.kernels import compile as compile_module

    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(registry, "cutlass_available", lambda: True)
    monkeypatch.setattr(registry, "forced_torch", lambda: False)
    monkeypatch.setattr(registry, "_ATTEMPTED", set())
    monkeypatch.setattr(compile_module, "compile_all", lambda device, wanted: asked.append(list(wanted)) or {})
    bf16 = (torch.bfloat16, torch.float32)
    kernels.warmup("cuda:0", bf16)
    assert len(asked[0]) == 7 and all(set(key) <= set(bf16) for _op, key in asked[0])
    kernels.warmup("cuda:0", (torch.float32,))  # a subset of what is compiled: nothing new
    kernels.warmup("cuda:0")  # every variant: only the fp16 ones are left
    assert len(asked) == 2 and len(asked[1]) == 4 and all(torch.float16 in key for _op, key in asked[1])
    assert len(registry.variants()) == 11 and len(registry.variants((torch.float32,))) == 3


@pytest.mark.slow
def test_importing_the_engine_does_not_import_dynamo():
    """torch.compile support (opaque kernel launches) must not cost the eager reference worker the
    4-5 s of importing torch._dynamo it paid on the H200 when dsv4.kernels imported it eagerly."""
    import subprocess
    import sys

    code = "import sys, dsv4.target; print('torch._dynamo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
