"""The graph_capture fixture: registered through the pytest11 entry point, asserts capturability."""

from __future__ import annotations

from importlib import metadata

import pytest
import torch

from dynamic_helpers import ROOT, TARGETS, spec
from graphlint.dynamic.pytest_plugin import GraphCapture
from graphlint.dynamic.target import load_factory


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _installed() -> bool:
    try:
        metadata.distribution("cuda-graphlint")
    except metadata.PackageNotFoundError:
        return False
    return True


# The entry point exists only in an installed graphlint; a source tree on PYTHONPATH (the GPU
# machine) has none, and `pytest -p graphlint.dynamic.pytest_plugin` registers the fixture there.
@pytest.mark.skipif(not _installed(), reason="cuda-graphlint is not installed: no pytest11 entry point to find")
def test_fixture_is_registered(graph_capture):
    assert isinstance(graph_capture, GraphCapture)


def test_clean_target_passes_and_says_whether_capture_was_tested():
    check = GraphCapture()(spec("plain_module.py"))
    assert check.failures == [] and check.capture_tested == torch.cuda.is_available()


# Without CUDA the fixture runs the tracer (the .item() is GL190); with CUDA it runs capture and
# replay, where the .item() is a failed capture (GL590).
SYNC_CODE = "GL590" if torch.cuda.is_available() else "GL190"


def test_hazards_fail_the_test_with_every_failure_listed():
    with pytest.raises(pytest.fail.Exception, match=rf"hazards\.py:\d+ {SYNC_CODE}"):
        GraphCapture()(spec("hazards.py"))


def test_factory_callables_are_checked_like_specs():
    factory = load_factory(f"{TARGETS / 'plain_module.py'}:make_target")
    assert GraphCapture()(factory, dim=16).failures == []
    # the tracer flags the bincount on a CPU; on a GPU (worker processes) its capture fails
    with pytest.raises(pytest.fail.Exception, match="GL590" if torch.cuda.is_available() else "GL390"):
        GraphCapture()(load_factory(f"{TARGETS / 'hazards.py'}:make_target"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="documents the no-CUDA behaviour")
def test_require_gpu_skips_without_cuda():
    with pytest.raises(pytest.skip.Exception, match="no CUDA"):
        GraphCapture().require_gpu()


def test_module_level_factories_go_to_worker_processes_on_a_gpu(monkeypatch):
    """A failing capture in the test process would taint every later capture of the session."""
    from graphlint.dynamic import pytest_plugin, run
    from graphlint.inventory import Inventory

    factory = load_factory(f"{TARGETS / 'plain_module.py'}:make_target")
    assert pytest_plugin._as_spec(factory, {"dim": 16}) == f"{TARGETS / 'plain_module.py'}:make_target"
    assert pytest_plugin._as_spec(lambda devices: None, {}) is None
    assert pytest_plugin._as_spec(factory, {"dtype": torch.float32}) is None  # not JSON: stays in process
    requests = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(run, "run_inventory", lambda req: requests.append(req) or Inventory("t", "c", "d", "v", True))
    assert GraphCapture()(factory, dim=16).failures == []
    assert requests and requests[0].target.endswith("plain_module.py:make_target") and requests[0].options == {"dim": 16}
