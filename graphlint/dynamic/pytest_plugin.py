"""pytest plugin: the ``graph_capture`` fixture asserts that a target captures and replays.

    def test_decoder_captures(graph_capture):
        graph_capture("my_engine/target.py:make_target", decoder="graphs")

Decision: without CUDA the fixture does not skip; it runs the tracer-only check, as
``graphlint capture-test`` does, so a CPU CI still fails on a ``.item()`` or a
``nonzero`` in a capturable region. The returned :class:`CaptureCheck` says
``capture_tested=False`` then; call ``graph_capture.require_gpu()`` first to skip instead.
A target spec (``FILE.py:FACTORY``) runs in per-GPU worker processes like the CLI, and so does a
factory callable defined at module level with JSON-able options (it is turned into its spec):
a failed capture leaves state behind in its process, and in the test process it would taint
every later capture of the session. Any other callable (a closure, a lambda, options that do not
survive JSON) runs in the test process; prefer module-level factories on GPUs.

Loaded by every pytest run through the ``pytest11`` entry point: it imports nothing heavy at
import time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest


@dataclass
class CaptureCheck:
    capture_tested: bool
    failures: list[str] = field(default_factory=list)
    inventory: Any = None


class GraphCapture:
    def require_gpu(self) -> None:
        import torch

        if not torch.cuda.is_available():
            pytest.skip("graph_capture: no CUDA device, so no trial capture")

    def __call__(self, target: str | Callable[..., Any], *, gpus: list[int] | None = None, soak_steps: int = 0,
                 **options: Any) -> CaptureCheck:
        import torch

        from graphlint.dynamic.results import failures

        cuda = torch.cuda.is_available()
        if not isinstance(target, str) and cuda:
            target = _as_spec(target, options) or target
        if isinstance(target, str):
            from graphlint.dynamic.run import Request, run_inventory

            inv = run_inventory(Request(target=target, options=options, gpus=gpus, soak_steps=soak_steps,
                                        trace=not cuda, graph=cuda))
        else:
            inv = _in_process(target, options, gpus, soak_steps, cuda)
        check = CaptureCheck(capture_tested=cuda, failures=failures(inv), inventory=inv)
        if check.failures:
            pytest.fail("graph capture check failed:\n  " + "\n  ".join(check.failures), pytrace=False)
        return check


def _as_spec(factory: Callable[..., Any], options: dict[str, Any]) -> str | None:
    """``FILE.py:NAME`` for a module-level function whose options survive JSON, else None."""
    import inspect
    import json

    qualname = getattr(factory, "__qualname__", "")
    if not qualname or "." in qualname or "<" in qualname:
        return None  # a method, a closure or a lambda: a worker could not import it by name
    try:
        json.dumps(options)
        path = inspect.getsourcefile(factory)
    except (TypeError, ValueError):
        return None
    return f"{path}:{qualname}" if path else None


def _in_process(factory, options, gpus, soak_steps, cuda):
    import datetime

    import torch

    from graphlint.dynamic.results import Inventory, caveat_failed_captures, runtime_rules

    rules = runtime_rules()
    inv = Inventory(target=getattr(factory, "__qualname__", repr(factory)), command="graph_capture fixture",
                    date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    torch=torch.__version__, cuda=cuda)
    if cuda:
        from graphlint.dynamic.replay import run_graph_phase

        for index in gpus if gpus is not None else range(torch.cuda.device_count()):
            dev = torch.device("cuda", index)
            result = run_graph_phase(factory, [dev], options, rules, str(dev), soak_steps=soak_steps)
            inv.devices.append(caveat_failed_captures(result))
        return inv
    from graphlint.dynamic.tracer import trace_phase

    inv.devices.append(trace_phase(factory, [torch.device("cpu")], options, rules, "cpu"))
    return inv


@pytest.fixture
def graph_capture() -> GraphCapture:
    """Assert that a target captures and replays (tracer-only without CUDA; see the module doc)."""
    return GraphCapture()
