"""Issue 10: a first target in a project that was never pip-installed, and the errors around it.

The CLI, its worker processes and the ``graph_capture`` fixture all load ``FILE.py:FACTORY``
through :mod:`graphlint.dynamic.loading`, which puts the target's project on ``sys.path`` the
way pytest's rootdir does. Each case runs where a user would run it: in a subprocess, from the
project directory or from elsewhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dynamic_helpers import TARGETS
from graphlint.dynamic import loading

MODEL = (TARGETS / "plain_module.py").read_text()  # TinyDecoder + make_target, imported from the package below

TARGET = """\
from mymodel.model import make_target as _make

def make_target(devices, dim=16):
    return _make(devices, dim=dim)
"""

BLOCK_TORCH = """\
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
sys.meta_path.insert(0, _NoTorch())
from graphlint.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _project(root: Path, *, package: bool) -> Path:
    """``root/mymodel/{model,target}.py``; a package (``__init__.py``) or a flat folder beside a
    pyproject.toml. Never installed: importing ``mymodel`` works only if graphlint finds it."""
    (root / "mymodel").mkdir(parents=True)
    if package:
        (root / "mymodel" / "__init__.py").write_text("")
    else:
        (root / "pyproject.toml").write_text("[project]\nname = 'mymodel'\nversion = '0'\n")
    (root / "mymodel" / "model.py").write_text(MODEL)
    (root / "mymodel" / "target.py").write_text(TARGET)
    return root


def _graphlint(*args: str, cwd: Path, code: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "graphlint", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=240, env=env)


@pytest.mark.parametrize("package", [True, False], ids=["package", "flat-folder-with-pyproject"])
@pytest.mark.slow
def test_inventory_loads_a_target_from_an_uninstalled_project(tmp_path, package):
    project = _project(tmp_path / "proj", package=package)
    here = _graphlint("inventory", "--target", "mymodel/target.py:make_target", "--no-soak", "--cpu",
                      "--format", "json", cwd=project)
    assert here.returncode == 0, here.stderr
    elsewhere = _graphlint("inventory", "--target", "proj/mymodel/target.py:make_target", "--no-soak", "--cpu",
                           "--format", "json", cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert '"status": "ran"' in elsewhere.stdout


@pytest.mark.slow
def test_a_module_spec_imports_from_the_working_directory(tmp_path):
    project = _project(tmp_path / "proj", package=True)
    result = _graphlint("capture-test", "--target", "mymodel.target:make_target", "--cpu", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "capture-test passed (tracer only" in result.stdout


@pytest.mark.slow
def test_worker_processes_load_the_target_the_same_way(tmp_path, monkeypatch):
    """On a GPU every phase runs in ``python -m graphlint.dynamic.worker``: it must find the project too."""
    from graphlint.dynamic.run import _worker

    project = _project(tmp_path / "proj", package=True)
    monkeypatch.chdir(tmp_path)
    result = _worker({"target": "proj/mymodel/target.py:make_target", "options": {"dim": 8}, "devices": ["cpu"],
                      "label": "cpu", "phase": "trace", "replay_steps": 8, "soak_steps": 0})
    assert [(p.probe, p.status) for p in result.probes][0] == ("tracer", "ran"), result.probes
    assert project.exists()


def test_import_roots_are_the_package_base_and_the_project_root(tmp_path):
    project = _project(tmp_path / "proj", package=True)
    (project / "pyproject.toml").write_text("")
    target = project / "mymodel" / "target.py"
    assert loading.package_base(target) == project
    assert loading.dotted_name(target) == "mymodel.target"
    assert loading.import_roots(target) == [project.resolve()]
    flat = _project(tmp_path / "flat", package=False)
    assert loading.dotted_name(flat / "mymodel" / "target.py") is None
    assert loading.import_roots(flat / "mymodel" / "target.py") == [(flat / "mymodel").resolve(), flat.resolve()]


def test_a_packaged_target_is_imported_under_its_package_name(tmp_path, monkeypatch):
    """Relative imports work, and the package is not imported twice under two names."""
    project = _project(tmp_path / "proj", package=True)
    (project / "mymodel" / "relative.py").write_text("from .model import make_target\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    module = loading.import_file(project / "mymodel" / "relative.py")
    assert module.__name__ == "mymodel.relative" and callable(module.make_target)
    assert sys.modules["mymodel.model"].make_target is module.make_target


@pytest.mark.parametrize("command", ["inventory", "capture-test"])
def test_without_torch_the_dynamic_commands_say_which_extra_to_install(tmp_path, command):
    result = _graphlint(command, cwd=tmp_path, code=BLOCK_TORCH)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"graphlint: error: graphlint {command} runs the engine and needs torch, which is not installed: "
        "pip install 'cuda-graphlint[engine]' (or torch>=2.11 itself)"]


def test_the_torch_check_does_not_import_torch():
    """The CLI's torch check ran before the workers started and imported torch (about 3 s on the H200):
    the workers started that much later, so their start no longer overlapped the parent's import."""
    import subprocess

    code = ("import sys; from graphlint.dynamic.commands import torch_problem; "
            "assert torch_problem('inventory') == ''; assert 'torch' not in sys.modules, 'torch was imported'")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_without_torch_check_still_works(tmp_path):
    (tmp_path / "m.py").write_text("def decode_step(x):\n    return x.item()\n")
    result = _graphlint("check", "m.py", "--no-cache", "--entry", "m.py:decode_step", cwd=tmp_path, code=BLOCK_TORCH)
    assert result.returncode == 1 and "GL101" in result.stdout, result.stderr


FIXTURE_TESTS = """\
def test_ok(graph_capture):
    graph_capture("mymodel/target.py:make_target", dim=8)

def test_unknown_option(graph_capture):
    graph_capture("mymodel/target.py:make_target", decoder="graphs")

def test_factory_raises(graph_capture):
    graph_capture("mymodel/target.py:make_target", dim=-1)

def test_callable_lacking_an_option(graph_capture):
    from mymodel.target import make_target
    graph_capture(make_target, vocab=3)
"""


@pytest.mark.slow
def test_fixture_loads_like_the_cli_and_reports_errors_like_it(tmp_path):
    project = _project(tmp_path / "proj", package=True)
    (project / "tests").mkdir()
    (project / "tests" / "test_graph.py").write_text(FIXTURE_TESTS)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", "-rf"],
                         cwd=project, capture_output=True, text=True, timeout=240, env=env)
    out = run.stdout
    assert "3 failed, 1 passed" in out, out[-3000:]
    assert "graphlint: error: graph_capture options: make_target(devices, ...) got an unexpected keyword " \
           "argument 'decoder'" in out
    assert "graphlint: error: graph_capture options: make_target(devices, ...) got an unexpected keyword " \
           "argument 'vocab'" in out
    # a factory that raises is a probe error at the user's line, not a traceback from graphlint's tracer
    assert "mymodel/model.py" in out and "graphlint/dynamic/tracer.py" not in out
    assert "Traceback" not in out
    failures = out.split("short test summary info")[0]  # the summary repeats it untruncated under CI=true
    assert failures.count("Trying to create tensor with negative dimension") == 1  # one line, both probes it stopped
    assert "During handling" not in out


@pytest.mark.slow
def test_fixture_finds_a_relative_target_from_the_rootdir(tmp_path):
    project = _project(tmp_path / "proj", package=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_graph.py").write_text(FIXTURE_TESTS.split("\n\n")[0] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_graph.py"],
                         cwd=project / "tests", capture_output=True, text=True, timeout=240, env=env)
    assert "1 passed" in run.stdout, run.stdout[-3000:]
