"""Tell a :class:`~graphlint.dynamic.recorder.Recorder` when the program captures and replays CUDA graphs.

Patched while recording, restored after (and patched only once torch is imported: a command that
never imports torch never pays for it):

- ``torch.cuda.CUDAGraph.capture_begin`` / ``capture_end`` and ``torch.cuda.graph.__enter__`` /
  ``__exit__``: a capture (nested counting, so ``torch.cuda.graph`` calling ``capture_begin`` is
  one capture). ``torch.cuda.make_graphed_callables`` and torch.compile's CUDA-graph trees capture
  through these, so they are seen too;
- ``torch.cuda.CUDAGraph.replay``: a replay of that graph (graph trees replay through it);
- ``torch.compile``: a function or module compiled with CUDA graphs (``mode="reduce-overhead"`` or
  ``"max-autotune"``, ``options={"triton.cudagraphs": True}``, ``backend="cudagraphs"``) runs in a
  graph tree, not as Python: its own function is recorded as ``captured`` whenever it is called.

Nothing here needs CUDA: the patches only notify the recorder and call the original, so tests
drive them on the CPU with an emulated graph (tests/dynamic/graph_emulator.py).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
from typing import Any, Callable

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


class GraphHooks:
    def __init__(self, recorder) -> None:
        self.recorder = recorder
        self._restore: list[tuple[Any, str, Any]] = []
        self._finder: _AfterTorch | None = None

    def install(self) -> None:
        if "torch.cuda.graphs" in sys.modules:
            self._patch()
        else:
            self._finder = _AfterTorch(self._patch)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore.clear()

    def __enter__(self) -> "GraphHooks":
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def _set(self, owner, name: str, make: Callable[[Any], Any]) -> None:
        original = owner.__dict__.get(name, getattr(owner, name, None))
        if original is None:
            return
        self._restore.append((owner, name, original))
        setattr(owner, name, make(original))

    def _patch(self) -> None:
        if self._restore:
            return
        import torch
        from torch.cuda import graphs

        rec = self.recorder

        def begin(original):
            @functools.wraps(original)
            def capture_begin(graph, *args, **kwargs):
                result = original(graph, *args, **kwargs)
                rec.capture_begin()  # only once it has begun: what runs from here on is captured
                return result
            return capture_begin

        def end(original):
            @functools.wraps(original)
            def capture_end(graph, *args, **kwargs):
                try:
                    return original(graph, *args, **kwargs)
                finally:
                    rec.capture_end()
            return capture_end

        def replay(original):
            @functools.wraps(original)
            def replay(graph, *args, **kwargs):
                rec.replay(id(graph))
                return original(graph, *args, **kwargs)
            return replay

        def enter(original):
            @functools.wraps(original)
            def __enter__(ctx, *args, **kwargs):
                result = original(ctx, *args, **kwargs)
                rec.capture_begin()
                return result
            return __enter__

        def exit_(original):
            @functools.wraps(original)
            def __exit__(ctx, *args, **kwargs):
                try:
                    return original(ctx, *args, **kwargs)
                finally:
                    rec.capture_end()
            return __exit__

        self._set(graphs.CUDAGraph, "capture_begin", begin)
        self._set(graphs.CUDAGraph, "capture_end", end)
        self._set(graphs.CUDAGraph, "replay", replay)
        self._set(graphs.graph, "__enter__", enter)
        self._set(graphs.graph, "__exit__", exit_)
        self._set(torch, "compile", lambda original: _compile_hook(original, rec))


def _compile_hook(original, rec):
    @functools.wraps(original)
    def compile(model=None, *args, **kwargs):
        if _uses_cudagraphs(kwargs):
            if model is None:  # ``@torch.compile(mode=...)``: the decorator gets the function later
                decorator = original(*args, **kwargs)

                def decorate(fn):
                    _note(rec, fn)
                    return decorator(fn)
                return decorate
            _note(rec, model)
        return original(model, *args, **kwargs)
    return compile


def _uses_cudagraphs(kwargs: dict) -> bool:
    options = kwargs.get("options") or {}
    return (kwargs.get("mode") in CUDAGRAPH_MODES or kwargs.get("backend") == "cudagraphs"
            or bool(isinstance(options, dict) and options.get("triton.cudagraphs")))


def _note(rec, target) -> None:
    code = target_code(target)
    if code is not None:
        rec.compiled_graph(code)


def target_code(target):
    """The code object whose body a compiled callable runs: a function's, a method's, a module's
    ``forward`` (also through ``module.compile()``, which compiles the bound ``_call_impl``)."""
    while isinstance(target, functools.partial):
        target = target.func
    owner = getattr(target, "__self__", None)
    if owner is not None and getattr(target, "__name__", "") in ("_call_impl", "__call__", "_wrapped_call_impl"):
        target = owner
    forward = getattr(type(target), "forward", None)
    if forward is not None and not hasattr(target, "__code__"):
        target = forward
    target = getattr(target, "__func__", target)
    while hasattr(target, "__wrapped__"):
        target = target.__wrapped__
    return getattr(target, "__code__", None)


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Calls ``then()`` once ``import torch`` has finished (its ``torch.cuda.graphs`` is loaded by then)."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Then(spec.loader, self)
        return spec


class _Then(importlib.abc.Loader):
    def __init__(self, loader, finder: _AfterTorch) -> None:
        self.loader, self.finder = loader, finder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        self.finder.then()

    def __getattr__(self, name):  # get_resource_reader, is_package, ...: the real loader's
        return getattr(self.loader, name)
