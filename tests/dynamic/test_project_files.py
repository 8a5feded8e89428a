"""Which files are the target's own project (graphlint.dynamic.project), on a simulated Debian host.

The H200 machine runs the system interpreter: the standard library in /usr/lib/python3.12 (whose
``sitecustomize.py`` is a link into /etc/python3.12), packages in /usr/lib/python3/dist-packages and
/usr/local/lib/python3.12/dist-packages, and graphlint's GPU wheels in a ``pip --target`` folder on
PYTHONPATH. There the worker listed /usr/lib/python3.12/sitecustomize.py as the target's own module
and the inventory ran ``graphlint check`` over the whole standard library (30 s; the Hugging Face
inventories never finished). This layout is rebuilt here in a temporary tree.
"""

from __future__ import annotations

import sys
import sysconfig
import types

import pytest

from graphlint import crossref
from graphlint.crossref import cross_reference, own_files
from graphlint.dynamic import frames, project
from graphlint.dynamic.worker import _own_modules
from graphlint.finding import Finding


def _write(path, text: str = "x = 1\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _clear_caches() -> None:
    for cached in (frames.is_user_file, project.classify, project.library_locations):
        cached.cache_clear()


@pytest.fixture
def debian(tmp_path, monkeypatch):
    """A Debian-like host in ``tmp_path`` (cwd: the checkout ``repo/``); returns the paths."""
    root = tmp_path
    stdlib = root / "usr/lib/python3.12"
    _write(stdlib / "json/__init__.py")
    _write(root / "etc/python3.12/sitecustomize.py", "# Debian's site customisation\n")
    (stdlib / "sitecustomize.py").symlink_to(root / "etc/python3.12/sitecustomize.py")
    system = _write(root / "usr/lib/python3/dist-packages/aptpkg/__init__.py")
    local = _write(root / "usr/local/lib/python3.12/dist-packages/fakeformers/cache_utils.py")
    repo = root / "repo"
    _write(repo / "pyproject.toml", "[project]\nname = 'demo'\n")
    engine = _write(repo / "engine/model.py", "import torch\n\n\ndef step(x):\n    return torch.zeros(3)\n")
    _write(repo / "engine/__init__.py", "")
    target = _write(repo / "engine/target.py", "def make_target(devices):\n    pass\n")
    wheels = repo / ".gpuwheels-b"
    wheel = _write(wheels / "libcst/_parser.py")
    (wheels / "libcst-1.9.0.dist-info").mkdir()
    paths = {**sysconfig.get_paths(), "stdlib": str(stdlib), "platstdlib": str(stdlib),
             "purelib": str(root / "usr/local/lib/python3.12/dist-packages"),
             "platlib": str(root / "usr/local/lib/python3.12/dist-packages")}
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: dict(paths))
    monkeypatch.setattr(frames, "_STDLIB_DIRS", (str(stdlib) + "/",))
    monkeypatch.setattr(sys, "path", [str(repo), str(wheels), str(stdlib), str(stdlib / "lib-dynload"),
                                      str(root / "usr/local/lib/python3.12/dist-packages"),
                                      str(root / "usr/lib/python3/dist-packages"), *sys.path])  # + this host's
    monkeypatch.chdir(repo)
    monkeypatch.setattr(project, "_ROOTS", [])  # roots other tests' in-process workers added
    _clear_caches()
    yield types.SimpleNamespace(stdlib=stdlib, sitecustomize=stdlib / "sitecustomize.py", system=system,
                                local=local, engine=engine, target=target, wheel=wheel, repo=repo)
    _clear_caches()


def test_only_the_checkout_is_the_project_on_a_debian_host(debian, tmp_path):
    assert project.is_project_file(str(debian.engine), strict=True) and frames.is_project_file(str(debian.engine))
    for other in (debian.sitecustomize, debian.stdlib / "json/__init__.py", debian.system, debian.local,
                  debian.wheel, project.__file__):
        assert not frames.is_project_file(str(other)), other
    script = _write(tmp_path / "scratch/script.py")  # neither a library nor the project: a finding may point here
    assert frames.is_project_file(str(script)) and not project.is_project_file(str(script), strict=True)


@pytest.mark.slow
def test_the_worker_lists_the_targets_modules_not_sitecustomize(debian, monkeypatch):
    """What put /usr/lib/python3.12 into the H200 cross-reference: the symlinked sitecustomize."""
    for name, path in [("sitecustomize", debian.sitecustomize), ("aptpkg", debian.system),
                       ("fakeformers.cache_utils", debian.local), ("libcst._parser", debian.wheel),
                       ("engine.model", debian.engine), ("torch._ops_lookalike", "_ops.py")]:
        module = types.ModuleType(name)
        module.__file__ = str(path)
        monkeypatch.setitem(sys.modules, name, module)
    assert _own_modules() == ["engine/model.py"]


def _finding(path: str, line: int = 5) -> Finding:
    return Finding("GL290", "runtime", "allocation", "warning", path, line, 0, "seen", source="dynamic",
                   device="cpu", region="step", in_graph=True)


def test_the_cross_reference_never_checks_libraries_or_the_standard_library(debian):
    xref = cross_reference([_finding("engine/model.py"), _finding(str(debian.local), 1)],
                           [f"{debian.local}:DynamicCache.update"], [],
                           [str(debian.sitecustomize), "engine/model.py"], target="engine/target.py:make_target")
    assert xref.ran, xref.detail
    assert xref.detail.startswith("`graphlint check` on engine with its default decode entries")
    assert "left out 2 file(s) that are not the target's own code" in xref.detail
    assert "fakeformers (installed)" in xref.detail and "the standard library" in xref.detail


def test_a_module_spec_is_rooted_at_its_top_level_package(debian, tmp_path):
    outside = _write(tmp_path / "elsewhere/lab/__init__.py", "")
    sys.path.append(str(outside.parent.parent))
    project.library_locations.cache_clear()
    assert project.target_roots("engine.target:make_target") == ([str(debian.repo / "engine")], "")
    assert project.target_roots("lab:make_target") == ([str(outside.parent)], "")
    assert project.is_project_file(str(outside), tuple(project.target_roots("lab:make_target")[0]), strict=True)
    assert project.target_roots("aptpkg:load") == ([str(debian.system.parent)], "")  # an installed engine is its own


def test_a_target_inside_graphlint_cross_references_nothing_of_graphlint():
    roots, note = project.target_roots("graphlint.targets.hf:make_target")
    assert roots == [] and "nothing of graphlint is cross-referenced" in note
    files, said = own_files([crossref.__file__], "graphlint.targets.hf:make_target")
    assert files == [] and "graphlint's own code" in said and "(graphlint)" in said


def test_a_runaway_cross_reference_is_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(6):
        _write(tmp_path / f"big/m{i}.py")
    _write(tmp_path / "big/__init__.py", "")
    monkeypatch.setattr(crossref, "MAX_FILES", 5)
    xref = cross_reference([_finding("big/m0.py", 1)], [])
    assert not xref.ran and "big hold 7 Python files, more than the 5" in xref.detail


def test_the_target_package_is_summarised_ahead_and_read_from_the_cache(tmp_path, monkeypatch):
    """prepare() parses while the probes run; the cross-reference at the end finds every summary cached."""
    from graphlint import check as runner

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "eng/__init__.py", "")
    _write(tmp_path / "eng/step.py", "import torch\n\n\ndef step(x):\n    return torch.zeros(3)\n")
    target = _write(tmp_path / "eng/target.py", "def make_target(devices):\n    pass\n")
    prepared = crossref.prepare(f"{target}:make_target")
    assert prepared.paths == ["eng"]
    prepared.wait()
    hits = []
    real_run = runner.run
    monkeypatch.setattr(runner, "run", lambda settings, progress=None: hits.append(real := real_run(settings)) or real)
    xref = cross_reference([_finding("eng/step.py", 5)], [], target=f"{target}:make_target", prepared=prepared)
    prepared.close()
    assert xref.ran and xref.rules_at(_finding("eng/step.py", 5)) == ["GL201"]
    assert hits[0].files == 3 and hits[0].cache_hits == 3


def test_a_run_that_ends_early_does_not_wait_for_the_parse(tmp_path, monkeypatch):
    """A refused target must exit at once, not after the package was parsed; the cache still goes."""
    import os
    import threading

    monkeypatch.chdir(tmp_path)
    target = _write(tmp_path / "eng/target.py", "def make_target(devices):\n    pass\n")
    _write(tmp_path / "eng/__init__.py", "")
    parsing, release = threading.Event(), threading.Event()
    monkeypatch.setattr(crossref, "_too_many", lambda settings: parsing.set() or release.wait(10) and 0)
    prepared = crossref.prepare(f"{target}:make_target")
    assert parsing.wait(10)
    prepared.close()  # returns while the thread still parses
    assert os.path.isdir(prepared.cache_dir)
    release.set()
    prepared.wait()
    assert not os.path.exists(prepared.cache_dir)
