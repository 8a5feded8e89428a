"""Device values and Python ones (issue 19, branch ``hostvalues``):

- ``cache.get(i) if cache else None`` in a hot ``forward`` whose ``cache`` is unannotated: the arm the
  test guards calls a method no tensor has on it, so it holds an object (the package's cache class) and
  Python answers the test on the host (:func:`graphlint.static.matchers.truth_test.guarded_object`); a
  tensor method there (``cache.view(-1)``) leaves it a tensor, and its test a read-back;
- ``for sigma, nxt in zip(self.sigmas[:-1], self.sigmas[1:])``: each name walks its own argument as
  ``for sigma in ...`` would (:func:`graphlint.static.looptargets.zipped`), so a chained comparison of a
  0-dim device tensor (``lo <= sigma <= hi``) is a truth test that reads it back; a zip of Python lists
  binds Python values, and its test reads nothing."""

from __future__ import annotations

import pytest

from static_helpers import analyze, decode_loop

CACHE = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

    def forward(self, x, cache=None):
        for i, block in enumerate(self.blocks):
            prev = {arm} if cache else None
            x = block(x) if prev is None else block(x) + prev
        return x
"""


@pytest.mark.parametrize("arm, reads", [("cache.get(i)", False), ("cache.view(-1)", True)])
def test_a_test_guarding_an_object_method_reads_nothing(arm, reads):
    findings = analyze({"model.py": CACHE.format(arm=arm) + decode_loop(", cache=x")})
    assert any(f.rule == "GL105" for f in findings) == reads


def test_a_statement_guarding_an_object_method_reads_nothing():
    src = CACHE.replace("prev = {arm} if cache else None", "prev = None\n            if cache:\n"
                        "                cache.update(i, x)")
    findings = analyze({"model.py": src + decode_loop(", cache=x")})
    assert not any(f.rule == "GL105" for f in findings)


SIGMAS = """
import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.sigmas = {sigmas}

    def forward(self, x):
        for sigma, nxt in zip(self.sigmas[:-1], self.sigmas[1:]):
            gamma = 0.5 if 0.1 <= sigma <= 2.0 else 0.0
            x = self.proj(x) * (gamma + 1)
        return x
"""


@pytest.mark.parametrize("sigmas, reads", [("torch.linspace(0, 1, n, device='cuda')", True),
                                           ("[0.5 * k for k in range(n)]", False)])
def test_zip_binds_each_name_to_an_element_of_its_own_argument(sigmas, reads):
    findings = analyze({"sampler.py": SIGMAS.format(sigmas=sigmas) + decode_loop()})
    assert any(f.rule == "GL105" and f.line == 14 for f in findings) == reads


GRAPH_MASK = """
import torch
from torch import nn


def graph_params(params, mask):
    starts = torch.sum(mask, dim=-1).tolist()
    return torch.tensor(starts, device=mask.device)


def pre_process(x, mask_for_graph, params):
    if mask_for_graph is not None:
        params = graph_params(params, mask_for_graph)
    return x, params


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def embed(self, x):
        h = self.proj(x)
        mask_for_graph = {value}
        if h.dim() > 3:
            return h, {other}, 0
        return (h, mask_for_graph, x.shape[0])

    def forward(self, x, params):
        h, mask_for_graph, n = self.embed(x)
        h, params = pre_process(h, mask_for_graph, params)
        return h
"""


@pytest.mark.parametrize("value, other, reads", [("None", "None", False), ("h > 0", "None", True),
                                                 ("None", "h", True)])
def test_a_position_every_return_leaves_none_decides_the_unpacking_callers_branch(value, other, reads):
    """``a, mask, n = self.embed(x)`` where every return of ``embed`` puts ``None`` at the mask's position
    (a literal, or a local bound only to one): the helper's ``if mask is not None:`` set-up never runs
    (:mod:`graphlint.static.returnedconsts`); a return that may put a tensor there leaves it hot."""
    findings = analyze({"model.py": GRAPH_MASK.format(value=value, other=other) + decode_loop(", x")})
    assert any(f.rule == "GL102" for f in findings) == reads


ROWS = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        ends = torch.tensor([3, 5, 8], dtype=torch.int32{device})
        offs = torch.cat((torch.zeros(1, dtype=ends.dtype{device}), torch.cumsum(ends[:-1], dim=0)))
        total = 0
        for o in offs:
            total += int(o)
        return self.proj(x)[:, :8] * total
"""


@pytest.mark.parametrize("device, reads", [("", False), (", device=x.device", True)])
def test_an_element_of_a_host_tensor_is_a_host_tensor(device, reads):
    """``for o in offs`` of a CPU tensor (made with no device, joined from host parts): ``int(o)`` reads
    host memory, no device (:meth:`graphlint.static.looptargets.LoopTargets.bind_loop_target`); the same
    rows of a device tensor are read back one by one."""
    findings = analyze({"model.py": ROWS.format(device=device) + decode_loop()})
    assert any(f.rule == "GL104" for f in findings) == reads


SKIPS = """
import torch
from torch import nn


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(16, 8) for _ in range(3)])

    def forward(self, x, skips):
        for {loop}:
            x = torch.cat((x, skips[i]), dim=1)
            x = self.blocks[i](x)
        return x
"""


@pytest.mark.parametrize("loop, grows", [("i, block in enumerate(self.blocks)", False), ("i in range(len(skips))", True)])
def test_a_join_in_a_loop_over_layers_grows_nothing_from_step_to_step(loop, grows):
    """A U-Net's ``x = torch.cat((x, skips[i]))`` in a loop over its blocks runs as often every call: an
    activation joined, handed back only once a block replaced it; the same join in a loop over data
    (``range(len(skips))``) is a tensor carried round and grown."""
    findings = analyze({"blocks.py": SKIPS.format(loop=loop) + decode_loop(", x")})
    assert any(f.rule == "GL207" for f in findings) == grows


ROW_CACHES = """
import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, cache=None):
        k = self.proj(x)
        rows = []
        for i in range(x.shape[0]):
            prev = cache[i] if cache else None
            rows.append(k[i:i + 1] if prev is None else prev + k[i:i + 1])
        return torch.cat(rows), rows


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()

    def forward(self, x, cache=None):
        rows = [c for c in cache] if cache is not None else None
        x, new = self.attn(x, cache={rows})
        return x
"""


@pytest.mark.parametrize("rows, reads", [("rows", False), ("None", False), ("x * 2", True)])
def test_a_parameter_every_hot_caller_passes_a_list_or_none_is_tested_on_the_host(rows, reads):
    """``prev = cache[i] if cache else None`` on a parameter presumed a tensor: its one caller hands it the
    per-row list or ``None`` (:mod:`graphlint.static.truthkinds`), so Python answers the test; a tensor
    handed instead is read back."""
    findings = analyze({"model.py": ROW_CACHES.format(rows=rows) + decode_loop(", cache=[]")})
    assert any(f.rule == "GL105" and f.function == "Attn.forward" for f in findings) == reads


OBJECT_CACHE = """
import torch
from torch import nn


class KVCache:
    def __init__(self, n):
        self.layers = [None] * n
{extra}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, cache=None):
        x = self.proj(x)
        return x * 2 if cache else x


def loop(x, n):
    model, cache = Model(), KVCache(2)
    for _ in range(n):
        out = model(x, cache=cache)
        x = out.argmax(-1)
    return x
"""


@pytest.mark.parametrize("extra, reads", [("", False), ("    def __len__(self):\n        return len(self.layers)\n", True)])
def test_an_instance_of_a_class_without_truth_methods_is_tested_on_the_host(extra, reads):
    """Every hot call passes the package's ``KVCache()``, a class with neither ``__bool__`` nor ``__len__``:
    ``if cache`` is Python's identity answer; a class that defines ``__len__`` is left to the report (its
    length could be computed from anything)."""
    findings = analyze({"model.py": OBJECT_CACHE.format(extra=extra)})
    assert any(f.rule == "GL105" for f in findings) == reads


def test_a_parameter_a_splat_may_fill_is_not_left_to_its_default():
    """``self.attn(x, **extra)`` of the forward's own ``**extra``: it may hand ``cache`` a tensor (the loop passes a
    ``mask`` through it), so the default ``None`` decides nothing."""
    src = ROW_CACHES.format(rows="rows").replace("x, new = self.attn(x, cache=rows)", "x, new = self.attn(x, **extra)")
    src = src.replace("def forward(self, x, cache=None):\n        rows", "def forward(self, x, cache=None, **extra):\n        rows")
    findings = analyze({"model.py": src + decode_loop(", cache=[], mask=x")})
    assert any(f.rule == "GL105" and f.function == "Attn.forward" for f in findings)


def test_the_no_tensor_kinds_are_the_value_kinds():
    """:mod:`graphlint.static.truthkinds` spells the kinds (it sits below :mod:`.valuekinds` in the imports)."""
    from graphlint.static import truthkinds, valuekinds
    assert truthkinds.NO_TENSOR == (valuekinds.NONE, valuekinds.LIST, valuekinds.NUMBER)
    assert truthkinds.NONE == valuekinds.NONE


UNPATCH = """
import math
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, grid):
        out = []
        for u, v in zip(x, grid.cuda().tolist()):
            out.append(self.proj(u[:math.prod(v)]))
        return torch.stack(out)
"""


def test_a_zipped_row_of_a_host_copy_is_no_read_back_of_its_own():
    """``for u, v in zip(x, grid.cuda().tolist())``: the zip binds tensor facts only -- ``u[:math.prod(v)]``
    is no second report of the ``.tolist()`` read (reported where it happens), as before the zip was read."""
    findings = analyze({"head.py": UNPATCH + decode_loop(", x")})
    assert any(f.rule == "GL102" for f in findings) and not any(f.rule == "GL311" for f in findings)
