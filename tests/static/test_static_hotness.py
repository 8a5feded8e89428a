"""What is hot and what is not: setup, guards, lazy initialisation, import time, and capture
regions that are always checked (issue 2 items 4 and 6)."""

from __future__ import annotations

from static_helpers import analyze, codes, summarize

SYNC = "x.sum().item()"


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


def test_a_predicate_named_like_setup_is_hot_where_its_caller_is():
    """``is_dummy`` asks about a state every step; ``dummy_run`` is a warm-up phase."""
    src = """
    import torch

    class Cache:
        @property
        def is_dummy(self):
            return self.flags.sum().item() > 0

        def dummy_run(self, x):
            torch.cuda.synchronize()

    class Decoder:
        def __init__(self):
            self.cache = Cache()

        def decode(self, x):
            self.cache.dummy_run(x)
            if self.cache.is_dummy:
                return x
            return x
    """
    found = analyze({"m.py": src})
    assert [(f.rule, f.function) for f in found] == [("GL101", "Cache.is_dummy")]


def test_the_init_a_metaclass_wraps_around_a_dataclass_runs_each_time_one_is_built():
    """A record built every step: the wrapper a metaclass installs as its ``__init__`` is no set-up
    code for being named ``__init__`` (a module's constructor still is)."""
    src = """
    import dataclasses
    import torch

    class Meta(type):
        def __setattr__(cls, name, value):
            init = value

            def __init__(self, *args, **kwargs):
                kwargs["n"] = kwargs["t"].sum().item()
                init(self, *args, **kwargs)

            super().__setattr__(name, __init__)

    class Output(metaclass=Meta):
        pass

    @dataclasses.dataclass
    class StepOutput(Output):
        t: object = None

    class Decoder:
        def __init__(self):
            self.n = torch.zeros(1).sum().item()

        def decode(self, x):
            return StepOutput(t=x)
    """
    found = analyze({"m.py": src})
    assert [(f.rule, f.function) for f in found] == [("GL101", "Meta.__setattr__.__init__")]


def test_guards_hide_code_and_callees_reached_only_from_guards():
    src = f"""
    import torch
    VERBOSE = False

    def stats(x):
        return {SYNC}

    class M:
        def __init__(self, debug=False, profile=False):  # options a caller sets: values not known
            self.debug = debug
            self._profile_detail = profile

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


def test_guard_names_match_case_insensitively_and_environment_switches_are_guards():
    src = f"""
    import os
    import torch
    from os import getenv
    DEBUG_MODE = False

    def decode(x):
        if DEBUG_MODE:
            print({SYNC})
        if os.environ.get("GRAPHLINT_VERBOSE"):
            print({SYNC})
        if getenv("Debug"):
            torch.cuda.synchronize()
        if os.environ.get("BATCH"):
            return {SYNC}
        return x
    """
    assert [(f.rule, f.line) for f in analyze({"m.py": src})] == [("GL101", 15)]
