"""Returns keyed by a constant argument, and a default device (branch ``lmdeploy16``).

A backend that picks an op's builder by comparing a parameter with constants gives a call that
passes one constant only that branch's builder (``fixtures/static/callgraph/keyed_returns``, run by
``test_static_callgraph``); here the default device: a tensor built without a device under
``torch.set_default_device("cuda")`` (anywhere in the project) or inside ``with torch.device("cuda"):``
is a device tensor, so reading it back is a sync; without either it stays a host tensor."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.static.defaultdevice import project_facts, sets_default_device
from graphlint.static.facts import ModuleInfo
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "defaultdevice"


READ = "if pos[i].item() > 3:"
FACTORY = "    pos = torch.tensor(list(range(steps)))"
LAUNCH = '''"""The entry script: every tensor the engine builds without a device lands on the GPU."""

import torch

from .generate import main


def launch():
    torch.set_default_device("cuda")
    main()
'''


def _read_line(findings, folder: Path = FIXTURES) -> set[str]:
    text = (folder / "engine" / "generate.py").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if READ in t)
    return {f.rule for f in findings if f.path.endswith("engine/generate.py") and f.line == line}


def _variant(tmp_path: Path, edit=lambda text: text, extra: dict[str, str] | None = None) -> Path:
    copy = tmp_path / "fixtures" / "static" / "defaultdevice" / "engine"
    copy.mkdir(parents=True)
    for source in (FIXTURES / "engine").glob("*.py"):
        (copy / source.name).write_text(edit(source.read_text()) if source.name == "generate.py" else source.read_text())
    for name, text in (extra or {}).items():
        (copy / name).write_text(text)
    return copy.parent


def test_without_a_default_device_the_table_is_host_memory(monkeypatch, tmp_path):
    assert "GL101" not in _read_line(check_fixture(monkeypatch, tmp_path, FIXTURES, "engine").findings)


def test_a_launcher_setting_the_default_device_makes_it_device_memory(monkeypatch, tmp_path):
    folder = _variant(tmp_path, extra={"launch.py": LAUNCH})
    assert "GL101" in _read_line(check_fixture(monkeypatch, tmp_path, folder, "engine").findings)


def test_a_device_block_makes_its_factories_device_memory(monkeypatch, tmp_path):
    def scoped(text: str) -> str:
        edited = text.replace(FACTORY, '    with torch.device("cuda"):\n    ' + FACTORY)
        assert edited != text
        return edited

    folder = _variant(tmp_path, scoped)
    assert "GL101" in _read_line(check_fixture(monkeypatch, tmp_path, folder, "engine").findings, folder)


def test_a_launcher_that_sets_the_cpu_back_keeps_the_host_reading(monkeypatch, tmp_path):
    restored = LAUNCH.replace("    main()\n", '    main()\n    torch.set_default_device("cpu")\n')
    folder = _variant(tmp_path, extra={"launch.py": restored})
    assert "GL101" not in _read_line(check_fixture(monkeypatch, tmp_path, folder, "engine").findings)


@pytest.mark.parametrize("text, sets", [
    ('torch.set_default_device("cuda")', True),
    ("torch.set_default_device(device)", True),
    ("torch.set_default_tensor_type(torch.cuda.HalfTensor)", True),
    ("torch.set_default_tensor_type(torch.FloatTensor)", False),
    ('torch.set_default_device("cuda")\nbuild()\ntorch.set_default_device("cpu")', False),
    # a CPU tensor type set in one loader branch before the device is set (cpuvalues): the device stays
    ("if q:\n    torch.set_default_tensor_type(torch.BFloat16Tensor)\n    torch.set_default_device(device)\n"
     "else:\n    torch.set_default_device(device)", True),
    ("x = torch.zeros(4)", False),
    ('"""call `torch.set_default_device(\'cuda\')` first"""', False),
    ("def set_default_device(device):\n    _set_default_device(device)", False),
    ("def handle_set_default_device(tx, *args):\n    pass", False),
])
def test_which_setters_set_a_default_device(text, sets):
    import libcst as cst

    assert sets_default_device(text, cst.parse_module(text)) is sets


def test_a_test_setting_the_default_device_sets_none_for_the_project():
    tests = ModuleInfo(path="tests/test_kernel.py", default_device=True)
    engine = ModuleInfo(path="pkg/engine.py")
    assert project_facts([tests, engine]) == {}
    launcher = ModuleInfo(path="pkg/launch.py", default_device=True)
    assert set(project_facts([tests, engine, launcher])) == {"pkg/engine.py", "pkg/launch.py"}
