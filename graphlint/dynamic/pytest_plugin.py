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
from pathlib import Path
from typing import Any, Callable

import pytest


@dataclass
class CaptureCheck:
    capture_tested: bool
    failures: list[str] = field(default_factory=list)
    inventory: Any = None


class GraphCapture:
    """Errors read like the CLI's: a bad spec, an option the factory cannot take, a factory that
    refuses its options or raises -- one ``graphlint: error: ...`` line, no traceback from inside
    graphlint. A relative ``FILE.py`` is looked up from the working directory, then from pytest's
    rootdir, and its project goes on ``sys.path`` as for the CLI (:mod:`graphlint.dynamic.loading`)."""

    def __init__(self, rootdir: Path | None = None) -> None:
        self.rootdir = rootdir

    def require_gpu(self) -> None:
        torch = _torch()
        if not torch.cuda.is_available():
            pytest.skip("graph_capture: no CUDA device, so no trial capture")

    def __call__(self, target: str | Callable[..., Any], *, gpus: list[int] | None = None, soak_steps: int = 0,
                 **options: Any) -> CaptureCheck:
        torch = _torch()
        from graphlint.dynamic.target import TargetError
        from graphlint.gate import capture_failures

        try:
            target, factory = self._resolve(target, options)
        except TargetError as exc:
            refused = str(exc)  # failed outside the except block: no "during handling" second copy
        else:
            refused = ""
        if refused:
            pytest.fail(f"graphlint: error: {refused}", pytrace=False)
        cuda = torch.cuda.is_available()
        if not isinstance(target, str) and cuda:
            target = _as_spec(target, options) or target
        if isinstance(target, str):
            from graphlint.dynamic.run import Request, run_inventory

            inv = run_inventory(Request(target=target, options=options, gpus=gpus, soak_steps=soak_steps,
                                        trace=not cuda, graph=cuda))
        else:
            inv = _in_process(factory, options, gpus, soak_steps, cuda)
        refused = next((d.meta["target_error"] for d in inv.devices if d.meta.get("target_error")), "")
        if refused:
            pytest.fail(f"graphlint: error: {refused}", pytrace=False)
        check = CaptureCheck(capture_tested=cuda, failures=capture_failures(inv), inventory=inv)
        if check.failures:
            pytest.fail("graph capture check failed:\n  " + "\n  ".join(check.failures), pytrace=False)
        return check

    def _resolve(self, target, options):
        """(target, factory): a spec made absolute, both checked against ``options`` up front."""
        from graphlint.dynamic.target import check_options, load_factory

        if isinstance(target, str):
            where, sep, name = target.rpartition(":")
            if sep and where.endswith(".py") and not Path(where).is_absolute() and not Path(where).exists() \
                    and self.rootdir is not None and (self.rootdir / where).is_file():
                target = f"{self.rootdir / where}:{name}"
            factory = load_factory(target)
        else:
            factory = target
        check_options(factory, options, where="graph_capture options")
        return target, factory


def _torch():
    try:
        import torch
    except ImportError as exc:
        from graphlint import DISTRIBUTION

        pytest.fail(f"graphlint: error: graph_capture needs torch ({exc}): pip install '{DISTRIBUTION}[engine]'",
                    pytrace=False)
    return torch


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
    import threading

    import torch

    from graphlint.dynamic.combine import caveat_failed_captures
    from graphlint.dynamic.target import TargetError
    from graphlint.dynamic.worker import GRAPH_PROBES, TRACE_PROBES, crashed
    from graphlint.inventory import Inventory
    from graphlint.rules import runtime_rules

    rules = runtime_rules()
    inv = Inventory(target=getattr(factory, "__qualname__", repr(factory)), command="graph_capture fixture",
                    date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    torch=torch.__version__, cuda=cuda)
    labels = [str(torch.device("cuda", i)) for i in (gpus if gpus is not None else range(torch.cuda.device_count()))]

    def probe(label: str) -> None:
        try:  # as in a worker process: a crash is the probes' outcome, not a traceback from graphlint
            if cuda:
                from graphlint.dynamic.graph_probe import run_graph_phase

                result = caveat_failed_captures(run_graph_phase(factory, [torch.device(label)], options, rules, label,
                                                                soak_steps=soak_steps))
            else:
                from graphlint.dynamic.tracer import trace_phase

                result = trace_phase(factory, [torch.device("cpu")], options, rules, "cpu")
        except TargetError as exc:  # reported by the caller, like a worker's refusal
            result = crashed(label, GRAPH_PROBES if cuda else TRACE_PROBES, exc)
            result.meta["target_error"] = str(exc)
        except Exception as exc:
            result = crashed(label, GRAPH_PROBES if cuda else TRACE_PROBES, exc)
        inv.devices.append(result)

    for label in labels if cuda else ["cpu"]:
        # In a thread of its own, as run_inventory's phases: the test function's frame is not on the
        # stack, so it cannot win the attribution of ops that run only in library code (transformers)
        thread = threading.Thread(target=probe, args=(label,))
        thread.start()
        thread.join()
    return inv


@pytest.fixture
def graph_capture(request) -> GraphCapture:
    """Assert that a target captures and replays (tracer-only without CUDA; see the module doc)."""
    return GraphCapture(rootdir=Path(str(request.config.rootpath)))
