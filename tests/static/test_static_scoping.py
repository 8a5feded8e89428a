"""Decode-path scoping: what the entries and capture regions reach, and nothing else."""

from __future__ import annotations

import pytest

from static_helpers import analyze, codes, summarize

SYNC = "x.sum().item()"


def test_only_code_reachable_from_entries_is_reported():
    src = f"""
    import torch

    def helper(x):
        return {SYNC}

    def unused(x):
        return {SYNC}

    def decode_step(x):
        return helper(x)
    """
    findings = analyze({"m.py": src})
    assert [(f.function, f.chain) for f in findings] == [("helper", ("m.py:decode_step", "m.py:helper"))]


def test_explicit_entries_replace_the_hot_name_patterns():
    src = f"""
    def forward(x):
        return {SYNC}

    def run_once(x):
        return {SYNC}
    """
    assert [f.function for f in analyze({"m.py": src}, entries=("m.py:run_once",))] == ["run_once"]
    assert [f.function for f in analyze({"m.py": src})] == ["forward"]


def test_custom_hot_names():
    src = f"""
    def generate_token(x):
        return {SYNC}

    def forward(x):
        return {SYNC}
    """
    assert [f.function for f in analyze({"m.py": src}, hot_names=("generate_*",))] == ["generate_token"]


def test_pytest_functions_are_not_default_entries():
    src = f"""
    def test_decode_step(x):
        return {SYNC}
    """
    assert analyze({"test_m.py": src}) == []
    assert [f.function for f in analyze({"test_m.py": src}, hot_names=("test_*",))] == ["test_decode_step"]


def test_absolute_and_aliased_imports_across_modules():
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": f"def fused(x):\n    return {SYNC}\n",
        "pkg/engine.py": """
            import pkg.ops as ops
            from pkg.ops import fused as f2

            def decode(x):
                return ops.fused(x) + f2(x)
        """,
    }
    findings = analyze(files, entries=("pkg/engine.py:decode",))
    assert [f.chain for f in findings] == [("pkg/engine.py:decode", "pkg/ops.py:fused")]


def test_relative_imports_and_package_reexports():
    files = {
        "src/pkg/__init__.py": "from .kernels import launch\n",
        "src/pkg/kernels.py": "import torch\n\ndef launch(x):\n    torch.cuda.synchronize()\n",
        "src/pkg/sub/__init__.py": "",
        "src/pkg/sub/layer.py": """
            from .. import launch
            from ..kernels import launch as direct

            def step(x):
                launch(x)
                direct(x)
        """,
    }
    findings = analyze(files, entries=("src/pkg/sub/layer.py:step",))
    assert codes(findings) == ["GL106"]
    assert findings[0].chain == ("src/pkg/sub/layer.py:step", "src/pkg/kernels.py:launch")


@pytest.mark.parametrize("root", ["/home/u/.venv/lib/site-packages/", ".cache/", "/abs/"])
def test_relative_imports_resolve_under_dot_directories_and_absolute_paths(root):
    """A corpus under ``.venv`` checked by absolute path lost every relative import (an empty
    module-name part): 47 of 76 findings on the bench corpus depended on the working directory."""
    files = {
        f"{root}pkg/__init__.py": "",
        f"{root}pkg/kernels.py": "import torch\n\ndef launch(x):\n    torch.cuda.synchronize()\n",
        f"{root}pkg/layer.py": "from .kernels import launch\n\ndef step(x):\n    launch(x)\n",
    }
    findings = analyze(files, entries=(f"{root}pkg/layer.py:step",))
    assert codes(findings) == ["GL106"]


def test_submodules_module_lists_and_indexed_experts():
    src = f"""
    import torch
    from torch import nn

    class Attention(nn.Module):
        def forward(self, x):
            return {SYNC}

    class Expert(nn.Module):
        def forward(self, x):
            return x.tolist()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()
            self.experts = nn.ModuleList([Expert() for _ in range(4)])

        def run(self, x, e: int):
            return self.attn(x) + self.experts[e](x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Block() for _ in range(2))

        def run(self, x):
            for layer in self.layers:
                x = layer.run(x, 0)
            return x
    """
    findings = analyze({"m.py": src}, entries=("m.py:Model.run",))
    assert [(f.rule, f.chain) for f in findings] == [
        ("GL101", ("m.py:Model.run", "m.py:Block.run", "m.py:Attention.forward")),
        ("GL102", ("m.py:Model.run", "m.py:Block.run", "m.py:Expert.forward")),
    ]


def test_inheritance_self_methods_and_super():
    files = {
        "base.py": f"""
            class Base:
                def prepare(self, x):
                    return {SYNC}

                def finish(self, x):
                    return x.cpu()
        """,
        "child.py": """
            from base import Base

            class Child(Base):
                def finish(self, x):
                    return super().finish(x)

                def run(self, x):
                    return self.prepare(x) + self.finish(x)
        """,
    }
    findings = analyze(files, entries=("child.py:Child.run",))
    assert [(f.rule, f.chain[-1]) for f in findings] == [
        ("GL101", "base.py:Base.prepare"),
        ("GL103", "base.py:Base.finish"),
    ]


def test_callbacks_closures_and_typed_parameters_are_followed():
    src = """
    from functools import partial
    import torch
    from torch import nn

    class Block(nn.Module):
        def forward_eager(self, x):
            return x.tolist()

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def run_all(model: Model, x):
        for block in model.blocks:
            block.forward_eager(x)

    class Region:
        def __init__(self, name, fn):
            self.fn = fn

    class Decoder:
        def __init__(self, model: Model):
            self.model = model

        def regions(self):
            return [Region("a", partial(self._layer, 0)), Region("b", self._closure())]

        def _layer(self, i: int):
            self.model.blocks[i].forward_eager(None)

        def _closure(self):
            def inner():
                torch.cuda.synchronize()
            return inner

        def step(self):
            for region in self.regions():
                region.fn()
    """
    chains = sorted(f.chain for f in analyze({"m.py": src}, entries=("m.py:Decoder.step",)))
    # the points-to call graph follows the callbacks into ``Region.fn`` and out of ``region.fn()``
    assert chains == [
        ("m.py:Decoder.step", "m.py:Decoder._closure.inner"),
        ("m.py:Decoder.step", "m.py:Decoder._layer", "m.py:Block.forward_eager"),
    ]
    typed = analyze({"m.py": src}, entries=("m.py:run_all",))
    assert [f.chain for f in typed] == [("m.py:run_all", "m.py:Block.forward_eager")]


def test_missing_entries_are_listed_for_the_runner():
    from graphlint.static.link import missing_entries
    from static_helpers import options

    files = {"pkg/m.py": "class A:\n    def run(self):\n        pass\n"}
    entries = ("pkg/m.py:A.run", "./pkg/m.py:A.runn", "pkg/other.py:f")
    summaries = summarize(files)
    assert missing_entries(summaries, options(entries=entries)) == ["./pkg/m.py:A.runn", "pkg/other.py:f"]


def test_self_method_in_a_base_class_reaches_subclass_overrides():
    src = """
    import torch.nn as nn

    class Base(nn.Module):
        def forward(self, x):
            return self.inner(x)

        def inner(self, x):
            return x

    class Sub(Base):
        def inner(self, x):
            return x.sum().item()
    """
    (finding,) = analyze({"m.py": src})
    assert (finding.rule, finding.chain) == ("GL101", ("m.py:Base.forward", "m.py:Sub.inner"))


def test_module_lists_built_in_a_local_list_first():
    src = """
    import torch.nn as nn

    class A(nn.Module):
        def forward(self, x):
            return x.sum().item()

    class B(nn.Module):
        def forward(self, x):
            return x.tolist()

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            layers = []
            for _ in range(n):
                layers.append(A())
            self.layers = nn.ModuleList(layers)
            experts = [B() for _ in range(n)]
            self.experts = nn.Sequential(*experts)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.experts(x)
    """
    found = analyze({"m.py": src}, entries=("m.py:Model.forward",))
    assert [(f.rule, f.chain[-1]) for f in found] == [("GL101", "m.py:A.forward"), ("GL102", "m.py:B.forward")]


def test_cutedsl_launch_rule_is_checked_anywhere_and_only_for_kernel_launches():
    """A ``@cute.jit`` launcher is never reached from a decode entry (a compiled object calls it),
    so GL504 looks everywhere; ``.launch()`` without ``grid=`` is someone else's method."""
    src = """
        import cutlass.cute as cute

        @cute.jit
        def launch(mX, mO):
            kernel(mX, mO).launch(grid=[1, 1, 1], block=[128, 1, 1])

        def start(rocket, pool):
            rocket.launch()
            pool.launch(workers=4)
    """
    assert codes(analyze({"k.py": src})) == ["GL504"]


def test_kernel_dsl_functions_are_device_code_not_host_steps():
    """``if`` on a CuTeDSL/Triton value is a device branch; torch's own CuTeDSL top-k kernel
    (a ``@cute.jit __call__``) was flagged as a host step before."""
    src = """
        import cutlass.cute as cute
        import torch
        import triton

        class TopK:
            @cute.jit
            def __call__(self, mX, stream):
                self.kernel(mX).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)

            @cute.kernel
            def kernel(self, mX: cute.Tensor):
                v = mX[0]
                if v > 0:
                    mX[0] = v.to(int)

        @triton.autotune(configs=[], key=["n"])
        @triton.jit
        def add_kernel(x_ptr, n):
            if n > 0:
                pass

        @cute.jit
        def launch(mX):
            kernel_fn(mX).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def forward(x: torch.Tensor):
            if x.sum() > 0:
                return x
    """
    found = {(f.rule, f.function) for f in analyze({"k.py": src})}
    assert found == {("GL504", "launch"), ("GL105", "forward")}


def test_a_list_annotated_with_an_interface_holds_every_implementation():
    """``self.layers = layers`` with ``layers: list[Layer] | None``: ``self.layers[i].store(k)``
    runs any implementation of ``Layer`` (the dynamic KV cache of an HF-style cache stack)."""
    src = """
    import torch
    from abc import ABC, abstractmethod

    class Layer(ABC):
        @abstractmethod
        def store(self, k): ...

    class Growing(Layer):
        def store(self, k):
            self.keys = torch.cat([self.keys, k], dim=-2)
            return self.keys

    class Stack:
        def __init__(self, layers: list[Layer] | None = None):
            self.layers = layers if layers is not None else []

        def update(self, k, i: int):
            return self.layers[i].store(k)

    def decode_step(stack: Stack, k: torch.Tensor):
        return stack.update(k, 0)
    """
    assert [(f.line, f.rule, f.function) for f in analyze({"m.py": src})] == [(11, "GL207", "Growing.store")]


def test_a_one_time_flag_set_by_a_base_class_makes_the_subclass_branch_one_time():
    src = """
    import torch

    class Base:
        def fill(self, k):
            self.scale = torch.ones(1, device=k.device)
            self.ready = True

    class Sub(Base):
        def store(self, k):
            if not self.ready:
                self.fill(k)
            return k * 2

    def decode_step(layer: Sub, k: torch.Tensor):
        return layer.store(k)
    """
    assert analyze({"m.py": src}) == []
