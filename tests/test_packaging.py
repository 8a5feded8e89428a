"""The wheel must carry every package and the built-in rule packs (pre-commit installs a wheel)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    tomllib = pytest.importorskip("tomli")


def _declared_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def test_every_python_package_in_the_tree_is_declared():
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("graphlint", "dsv4")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk <= _declared_packages(), f"add to pyproject's packages: {sorted(on_disk - _declared_packages())}"


@pytest.mark.slow
def test_wheel_ships_rule_packs_and_loads_them_outside_the_checkout(tmp_path):
    pytest.importorskip("setuptools")
    import subprocess

    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip()[-300:]}")
    wheel = next(tmp_path.glob("cuda_graphlint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    packs = sorted(p.name for p in (ROOT / "rules").glob("*.yaml"))
    assert packs and all(f"graphlint/packs/{name}" in names for name in packs)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "from graphlint.rules import load_rules, BUILTIN_PACK_DIR; print(len(load_rules()), BUILTIN_PACK_DIR)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(site)})
    assert run.returncode == 0, run.stderr
    count, where = run.stdout.split()
    assert int(count) > 20 and where.startswith(str(site))
