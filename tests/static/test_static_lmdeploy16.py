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
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "defaultdevice"


@pytest.mark.parametrize("name", ["nodefault", "project", "scoped"])
def test_a_default_device_makes_factories_device_tensors(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


@pytest.mark.parametrize("text, sets", [
    ('torch.set_default_device("cuda")', True),
    ("torch.set_default_device(device)", True),
    ("torch.set_default_tensor_type(torch.cuda.HalfTensor)", True),
    ("torch.set_default_tensor_type(torch.FloatTensor)", False),
    ('torch.set_default_device("cuda")\nbuild()\ntorch.set_default_device("cpu")', False),
    ("x = torch.zeros(4)", False),
])
def test_which_setters_set_a_default_device(text, sets):
    assert sets_default_device(text) is sets


def test_a_test_setting_the_default_device_sets_none_for_the_project():
    tests = ModuleInfo(path="tests/test_kernel.py", default_device=True)
    engine = ModuleInfo(path="pkg/engine.py")
    assert project_facts([tests, engine]) == {}
    launcher = ModuleInfo(path="pkg/launch.py", default_device=True)
    assert set(project_facts([tests, engine, launcher])) == {"pkg/engine.py", "pkg/launch.py"}
