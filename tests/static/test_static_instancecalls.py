"""A module's ``forward`` learns what its calls pass where every instance of its class is kept in a
field and only called there (:mod:`graphlint.static.instancecalls`); anything else keeps the presumed tensor."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "static" / "instancecalls"
LAYERS = (FIXTURE / "layers.py").read_text()
ENGINE = (FIXTURE / "engine.py").read_text()
TEST = ("layers.py", "GL105")  # ``if flip == 1:`` on a parameter presumed a tensor (the one test of the file)


def test_a_python_int_from_the_only_call_is_no_tensor(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURE, ".")
    assert_marked(result, FIXTURE, ".")


def _check(monkeypatch, tmp_path, layers: str) -> list[tuple]:
    (tmp_path / "layers.py").write_text(layers)
    (tmp_path / "engine.py").write_text(ENGINE)
    monkeypatch.chdir(tmp_path)
    result = run(resolve(load_config(cwd=tmp_path), paths=["."], jobs=1, use_cache=False))
    return sorted((f.path, f.rule) for f in result.findings if f.rule == "GL105")


CALL = '        return self.kernel(x, 1, mode="fast")'
ESCAPES = {
    # an instance in a local: its calls are spelled with the local's name
    "local": (CALL, '        extra = Kernel(self.width)\n        return self.kernel(x, 1, mode="fast") + extra(x, x)'),
    # the field handed on: whoever gets it may call it with anything
    "handed": (CALL, '        torch.jit.annotate(object, self.kernel)\n' + CALL),
    # the field read as a value
    "aliased": (CALL, '        kernel = self.kernel\n        return kernel(x, x)'),
    # the class's own method hands ``self`` on
    "self": ("        self.scale = nn.Parameter(torch.ones(width))",
             "        self.scale = nn.Parameter(torch.ones(width))\n        REGISTRY.append(self)"),
    # a subclass inherits ``forward`` and may be called elsewhere
    "subclass": ("class Layer(nn.Module):", "class Wide(Kernel):\n    pass\n\n\nclass Layer(nn.Module):"),
    # a second call passes a tensor
    "tensor": (CALL, '        return self.kernel(x, 1, mode="fast") + self.kernel(x, x.sum() > 0)'),
    # a field of the same name elsewhere holds something else: ``self.kernel(...)`` may call that
    "mixed": ("class Model(nn.Module):", "class Other(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.kernel = torch.relu\n\n\nclass Model(nn.Module):"),
    # the call passes nothing for the parameter through a splat
    "splat": (CALL, '        return self.kernel(x, *self.args)'),
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_an_instance_called_some_other_way_keeps_the_presumed_tensor(monkeypatch, tmp_path, case):
    old, new = ESCAPES[case]
    assert old in LAYERS
    layers = LAYERS.replace(old, new, 1)
    if case == "self":
        layers = layers.replace("class Kernel(", "REGISTRY = []\n\n\nclass Kernel(", 1)
    assert _check(monkeypatch, tmp_path, layers) == [TEST]
