"""What counts as a tensor: host values stay quiet, tensors are caught."""

from __future__ import annotations

import pytest
from static_helpers import analyze, codes

HEADER = """
import torch
import torch.nn.functional as F
from torch import nn

class Layer(nn.Module):
    def __init__(self, dim: int, use_cache: bool):
        super().__init__()
        self.use_cache = use_cache
        self.scale_python = dim ** -0.5
        self.ratios = [0, 4, 128]
        self.weight = nn.Parameter(torch.ones(dim))
        self.register_buffer("counts", torch.zeros(dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None, a_list=(), start_pos=0):
"""


def run(body: str) -> list[str]:
    src = HEADER + "".join(f"        {line}\n" for line in body.strip().splitlines()) + "        return x\n"
    return codes(analyze({"layer.py": src}))


@pytest.mark.parametrize(
    "body",
    [
        "if self.use_cache:\n    x = x + 1",
        "if x is None:\n    return x",
        "if mask is not None and x.shape[0] > 1:\n    x = x * 2",
        "n = int(x.size(0))",
        "n = len(a_list)",
        "s = float(self.scale_python)",
        "y = x.to(torch.bfloat16)",
        "if x.dim() == 3 and x.numel() > 0:\n    pass",
        "if x.dtype == torch.float16 or x.device.type == 'cuda':\n    pass",
        "if start_pos > 0:\n    raise ValueError('decode only')",
        "h = self.proj(x)\nif h.shape[-1] != 4:\n    pass",
        "while len(a_list) > 2:\n    a_list = a_list[1:]",
        "assert x.shape[0] == 1, 'decode is one token'",
        "buf = self.counts\nbuf[0] = 0",
        "i = 0\nself.counts[i] = x[0]",
        "row = a_list[start_pos]\nif row.key > 0:\n    pass",
        "shape = torch.broadcast_shapes(x.shape, mask.shape)\nif shape[0] > 1:\n    n = int(shape[-1])",
        "if torch.result_type(x, mask) == torch.float32 or torch.can_cast(x.dtype, torch.half):\n    pass",
        "if torch.promote_types(x.dtype, mask.dtype) != x.dtype:\n    pass",
        "if torch.are_deterministic_algorithms_enabled():\n    pass",
        "if mask is None:\n    raise ValueError(f'bad {x.max().item()} {int(x.sum())}')",
        "assert mask is not None, f'got {x.sum().item()}'",
        "r = self.ratios[start_pos % 3]",
    ],
)
def test_host_values_are_not_reported(body):
    assert run(body) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("if self.counts[0] == 0:\n    pass", "GL105"),
        ("h = F.relu(x)\nif h.max() > 1:\n    pass", "GL105"),
        ("if x:\n    pass", "GL105"),
        ("y = self.proj(x)\nwhile y.sum() > 0:\n    y = y - 1", "GL105"),
        ("y = x if self.weight.any() else x * 2", "GL105"),
        ("n = float(self.weight.norm())", "GL104"),
        ("top, idx = torch.topk(x, 2)\nok = bool(idx[0])", "GL104"),
        ("m = torch.isnan(x)\ny = x[~m]", "GL303"),
        ("y = x[x > 0]", "GL303"),
        ("step = len(a_list)\nself.counts[0] = step", "GL306"),
        ("if start_pos > 0:\n    x = x * 2", "GL309"),
        ("end = start_pos + x.shape[0]\ny = x[start_pos:end]", "GL308"),
        ("c = self.counts[start_pos]", "GL308"),
        ("rows = [self.counts[p % 4] for p in range(start_pos)]", "GL308"),
    ],
)
def test_tensors_are_reported(body, expected):
    assert run(body) == [expected]


def test_forward_params_are_tensors_unless_annotated_or_host_named():
    src = """
    import torch

    class M:
        def forward(self, x, n_tokens, cfg: dict, flag=True, output_hidden_states=None, return_dict=None,
                    temperature=None, top_k=None):
            if n_tokens or cfg or flag or output_hidden_states or return_dict or temperature > 0 or top_k:
                pass
            if x:
                pass
    """
    assert [f.line for f in analyze({"m.py": src})] == [9]


def test_module_attributes_are_not_tensors_but_their_outputs_are():
    src = """
    from torch import nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(4)

        def forward(self, x):
            if self.norm:
                pass
            if self.norm(x).mean() > 0:
                pass
            return x
    """
    assert [f.line for f in analyze({"m.py": src})] == [12]


def test_annotated_assignments_declare_tensors():
    src = """
    import torch

    class M:
        def __init__(self):
            self.buf: torch.Tensor | None = None
            self.count: int = 0

        def forward(self, x):
            y: torch.Tensor = foo(x)
            if self.count or self.buf:
                pass
            if self.count or y:
                pass
    """
    assert [(f.rule, f.line, f.col) for f in analyze({"m.py": src})] == [("GL105", 11, 26), ("GL105", 13, 9)]


def test_aliases_of_torch_are_resolved():
    src = """
    import torch as T
    from torch import cuda
    from torch.cuda import synchronize as sync
    import torch.nn.functional as F

    def decode(x: T.Tensor):
        T.cuda.synchronize()
        cuda.synchronize()
        sync()
        if F.softmax(x, -1).max() > 0.5:
            pass
    """
    assert codes(analyze({"m.py": src})) == ["GL106", "GL106", "GL106", "GL105"]


def test_builtin_shadowed_by_a_local_def_is_not_a_cast():
    src = """
    import torch

    def int(value):
        return 3

    def decode(x: torch.Tensor):
        return int(x)
    """
    assert analyze({"m.py": src}) == []


@pytest.mark.parametrize(
    "body",
    [
        "import numpy as np\narr = np.zeros(3)\nv = arr.item()",
        "import numpy as np\nv = np.float32(1.0).item()",
        "sizes = [1, 2]\nv = sizes.item()",
        "n = x.size(0)\nv = n.item()",
        "import numpy as np\narr = np.ones(4)\nrows = arr.sum().tolist()",
    ],
)
def test_item_on_host_data_is_not_a_sync(body):
    assert run(body) == []


def test_item_on_a_sum_of_tensors_is_still_a_sync():
    assert run("total = sum(x.unbind(0))\nv = total.item()") == ["GL101"]
    # the builtin max() compares two tensors: ``a < b`` is read back (GL104), then ``.item()`` again
    assert run("v = max(x.sum(), x.mean()).item()") == ["GL101", "GL104"]


def test_containers_of_tensors_and_metadata_methods_are_host_values():
    """From graphlint on torch itself: ``param_set: set[torch.Tensor]`` made ``not
    param_set.isdisjoint(...)`` a tensor truth test, and ``mask.dense_dim() != ...`` too."""
    src = """
        import torch
        from typing import Optional

        def forward(x: torch.Tensor, mask: torch.Tensor, groups: list[torch.Tensor], y: Optional[torch.Tensor]):
            params: set[torch.Tensor] = set()
            if not params.isdisjoint(groups):
                pass
            if mask.dense_dim() != x.dense_dim() or mask.ndim > 2:
                pass
            if groups:
                pass
            if y:
                pass
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src})] == [("GL105", 13)]  # only `if y:`


def test_is_tensor_like_is_not_a_like_factory():
    src = """
        import torch
        from torch.overrides import is_tensor_like

        def forward(x: torch.Tensor):
            if torch.overrides.is_tensor_like(x) or is_tensor_like(x):
                return torch.zeros_like(x)
    """
    assert codes(analyze({"m.py": src})) == ["GL202"]


@pytest.mark.parametrize("annotation, tensor", [
    ("torch.Tensor", True), ("Optional[torch.Tensor]", True), ("torch.Tensor | None", True),
    ("Union[None, torch.Tensor]", True), ("Annotated[torch.Tensor, 'x']", True),
    ("float | torch.Tensor", False), ("Union[float, torch.Tensor]", False), ("list[torch.Tensor]", False),
    ("Optional[list[torch.Tensor]]", False), ("None", False),
])
def test_tensor_annotations(annotation, tensor):
    """torch's SGD: ``weight_decay: float | Tensor = 0`` then ``if weight_decay < 0.0`` is a float check."""
    src = f"""
        import torch
        from typing import Annotated, Optional, Union

        def forward(x: {annotation}):
            if x < 0.0:
                pass
    """
    assert codes(analyze({"m.py": src})) == (["GL105"] if tensor else [])


def test_distributed_ids_and_autograd_ctx_are_host_parameters():
    src = """
        import torch

        class Gather(torch.autograd.Function):
            @staticmethod
            def forward(ctx, tensor, local_rank, world_size):
                if ctx.needs_input_grad[0] and local_rank == 0 and world_size > 1:
                    return tensor
                if tensor.sum() > 0:
                    return tensor
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src})] == [("GL105", 9)]


def test_device_backend_queries_are_host_values():
    src = """
        import torch

        def forward(x: torch.Tensor):
            accelerator = torch.accelerator.current_accelerator(check_available=True)
            if accelerator and accelerator.type == "cuda" and torch.xpu.is_available():
                return x
    """
    assert codes(analyze({"m.py": src})) == []


def test_constant_values_and_init_only_attributes_are_not_python_scalar_writes():
    """transformers' logits processors write ``-float("inf")`` and ``self.filter_value`` (set once
    in ``__init__``): the same number every step, so a graph replays them correctly."""
    src = """
        import torch

        class Processor:
            def __init__(self, filter_value: float = -float("inf")):
                self.filter_value = filter_value
                self.count = 0

            def __call__(self, scores: torch.Tensor, keep: torch.Tensor, step: int):
                scores[:, 5] = -float("inf")
                scores[keep] = self.filter_value
                scores[:, 0] = self.count
                scores.fill_(step)
                self.count += 1
                return scores

        def build_processors():
            return [Processor()]  # a ``__call__`` is an entry once the analysed code builds its class
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src}) if f.rule == "GL306"] == [("GL306", 12), ("GL306", 13)]


def test_dict_and_str_methods_do_not_return_tensors():
    """transformers' ``_decoder_has_type(decoder_config, ...)`` matches ``*decode*``, so its
    unannotated parameter is presumed a tensor; ``.get("type")`` says it is a dict."""
    src = """
        def _decoder_has_type(decoder_config, decoder_type):
            if decoder_config.get("type") == "ByteFallback" or decoder_config.get("name", "").startswith("b"):
                return True
            if decoder_config:
                return False
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src})] == [("GL105", 5)]  # the bare one stays


def test_an_empty_literal_copies_nothing_and_a_foreign_cuda_method_is_no_tensor_cuda():
    """``torch.tensor([], device=d)`` is a zero-size placeholder; ``codec.cuda(q, meta=m)`` passes
    what ``Tensor.cuda(device, non_blocking, memory_format)`` does not take: another object's method."""
    src = """
    import torch

    def decode_step(x: torch.Tensor, codec):
        empty = torch.tensor([], dtype=x.dtype, device=x.device)
        codec.cuda(x, meta={"bits": 4}, device=x.device)
        return torch.tensor([1], device=x.device), empty, x.cuda(non_blocking=True)
    """
    assert [(f.line, f.rule) for f in analyze({"m.py": src})] == [(7, "GL204"), (7, "GL403")]
