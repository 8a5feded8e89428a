"""Decode-path scoping: what the entries and capture regions reach, and nothing else."""

from __future__ import annotations

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


def test_setup_and_warmup_code_is_not_hot():
    src = """
    import torch

    class Decoder:
        def __init__(self):
            self.buf = torch.zeros(8)
            self.n = self.buf.sum().item()

        def warmup(self, x):
            torch.cuda.synchronize()

        def decode(self, x):
            return self.buf.add_(x)
    """
    assert analyze({"m.py": src}) == []


def test_guards_hide_code_and_callees_reached_only_from_guards():
    src = f"""
    import torch
    VERBOSE = False

    def stats(x):
        return {SYNC}

    class M:
        def __init__(self):
            self.debug = False
            self._profile_detail = False

        def decode(self, x):
            if VERBOSE:
                print(stats(x))
            if self.debug and x is not None:
                torch.cuda.synchronize()
            if self._profile_detail:
                torch.cuda.synchronize()
            if not torch.cuda.is_current_stream_capturing():
                torch.cuda.synchronize()
            if torch.cuda.is_current_stream_capturing():
                pass
            else:
                torch.cuda.synchronize()
            if not VERBOSE:
                pass
            else:
                torch.cuda.synchronize()
            return x
    """
    assert analyze({"m.py": src}) == []
    early = """
    import torch

    def decode(x):
        if torch.cuda.is_current_stream_capturing():
            return x
        torch.cuda.synchronize()
        return x
    """
    assert analyze({"m.py": early}) == []
    debug_helper = """
    import torch

    class M:
        def _log(self, x):
            if not self.verbose:
                return
            print(x.sum().item())

        def decode(self, x):
            self._log(x)
            return x
    """
    assert analyze({"m.py": debug_helper}) == []
    assert codes(analyze({"m.py": debug_helper}, guards=())) == ["GL101"]
    inline = """
    import torch
    DEBUG = False

    def decode(x: torch.Tensor):
        a = x.sum().item() if DEBUG else 0
        b = x if not DEBUG else x.tolist()
        return x.cpu() if DEBUG else x
    """
    assert analyze({"m.py": inline}) == []
    assert codes(analyze({"m.py": inline}, guards=())) == ["GL101", "GL102", "GL103"]
    # the capture predicate is not a name pattern: it guards whatever the configuration
    assert codes(analyze({"m.py": src}, guards=())) == ["GL101"] + ["GL106"] * 3


def test_capture_regions_are_checked_even_when_no_entry_reaches_them():
    src = """
    import torch

    def body(x: torch.Tensor):
        return x.nonzero()

    def build(x, s):
        x.sum().item()  # before capture: setup, fine
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            y = body(x)
            torch.cuda.set_device(1)
        torch.cuda.set_device(0)  # after capture: fine
        return g
    """
    findings = analyze({"m.py": src}, hot_names=())
    assert [(f.rule, f.chain) for f in findings] == [
        ("GL302", ("m.py:build", "m.py:body")),
        ("GL502", ("m.py:build",)),
    ]


def test_manual_capture_begin_end_is_a_region():
    src = """
    import torch

    def build(g, x):
        torch.cuda.set_device(0)
        g.capture_begin()
        torch.cuda.set_device(1)
        g.capture_end()

    class Runner:
        def capture(self):
            self.graph.capture_begin()
            torch.cuda.set_device(1)
            self.graph.capture_end()
            torch.cuda.set_device(0)
    """
    findings = analyze({"m.py": src}, hot_names=())
    assert [(f.rule, f.line) for f in findings] == [("GL502", 7), ("GL502", 13)]


def test_enabled_filters_rules_but_not_suppressions():
    src = f"""
    def decode(x):
        return {SYNC}  # graphlint: ignore[GL101]
    """
    assert codes(analyze({"m.py": src})) == ["GL101"]  # the runner applies suppressions
    assert analyze({"m.py": src}, enabled=frozenset({"GL102"})) == []


def test_lazy_initialisation_is_setup_not_step():
    src = """
    import torch

    def build(x):
        return x.sum().item()

    class Decoder:
        def __init__(self):
            self._runner = None

        def step(self, x):
            if self._runner is None:
                torch.cuda.synchronize()
                self._runner = build(x)
            if self._other is None:
                torch.cuda.synchronize()
            return x
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src})] == [("GL106", 16)]
    spelled = """
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            if not hasattr(self, "buf"):
                self.buf = torch.zeros(4)
            if getattr(self, "_cache", None) is None:
                self._cache = torch.empty(8)
            if not hasattr(self, "other"):
                torch.cuda.synchronize()
            return x
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": spelled})] == [("GL106", 11)]


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
    assert chains == [
        ("m.py:Decoder.step", "m.py:Decoder.regions", "m.py:Decoder._closure", "m.py:Decoder._closure.inner"),
        ("m.py:Decoder.step", "m.py:Decoder.regions", "m.py:Decoder._layer", "m.py:Block.forward_eager"),
    ]
    typed = analyze({"m.py": src}, entries=("m.py:run_all",))
    assert [f.chain for f in typed] == [("m.py:run_all", "m.py:Block.forward_eager")]


def test_missing_entries_are_listed_for_the_runner():
    from graphlint.static.link import missing_entries
    from static_helpers import options, summarize

    files = {"pkg/m.py": "class A:\n    def run(self):\n        pass\n"}
    entries = ("pkg/m.py:A.run", "./pkg/m.py:A.runn", "pkg/other.py:f")
    summaries = summarize(files)
    assert missing_entries(summaries, options(entries=entries)) == ["./pkg/m.py:A.runn", "pkg/other.py:f"]


def test_import_time_code_is_never_hot_but_module_level_capture_is_checked():
    src = """
    import torch

    TABLE = torch.arange(8).tolist()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        torch.cuda.set_device(0)
    """
    (summary,) = summarize({"m.py": src})
    assert [c.code for c in summary.data.candidates] == ["GL501", "GL502"]
    assert codes(analyze({"m.py": src})) == ["GL501", "GL502"]


def test_regions_declared_with_the_target_protocol_are_capture_code():
    src = """
    from functools import partial

    import torch
    from graphlint.dynamic.target import Region

    class Decoder:
        def __init__(self):
            self._regions = [
                Region("a", self._graph_a_fn(0)),
                Region("b", partial(self._layer, 1), device="cuda:0"),
                Region(name="eager", fn=self._eager, capturable=False),
            ]

        def _graph_a_fn(self, i: int):
            setup = torch.zeros(4)  # runs once, when the region is built

            def graph_a():
                torch.cuda.set_device(i)
            return graph_a

        def _layer(self, i: int):
            torch.cuda.synchronize()

        def _eager(self):
            return self.buf.item()
    """
    findings = analyze({"m.py": src})
    assert [(f.rule, f.chain) for f in findings] == [
        ("GL502", ("m.py:Decoder.__init__", "m.py:Decoder._graph_a_fn.graph_a")),
        ("GL106", ("m.py:Decoder.__init__", "m.py:Decoder._layer")),
        ("GL101", ("m.py:Decoder.__init__", "m.py:Decoder._eager")),
    ]
    # an eager region is a decode step only when no entry is configured
    assert codes(analyze({"m.py": src}, entries=("m.py:Decoder._layer",))) == ["GL502", "GL106"]


def test_graph_stream_passed_positionally_is_explicit():
    src = """
    import torch

    def build(s, pool):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool, s):  # graph(cuda_graph, pool=None, stream=None)
            pass
        with torch.cuda.graph(g, pool):
            pass
        return g
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src}, hot_names=())] == [("GL501", 8)]


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
