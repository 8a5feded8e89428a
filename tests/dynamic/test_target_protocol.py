"""The target protocol: loading factories, options, ModuleTarget, the one-region fallback."""

from __future__ import annotations

import pytest
import torch

from dynamic_helpers import ROOT, TARGETS
from graphlint.dynamic.target import (ModuleTarget, TargetError, load_factory, parse_option, regions_of)


def test_plain_module_example_follows_the_protocol():
    factory = load_factory(f"{TARGETS / 'plain_module.py'}:make_target")
    a, b = factory([torch.device("cpu")]), factory([torch.device("cpu")])
    assert isinstance(a, ModuleTarget)
    outputs = []
    for target in (a, b):
        target.stage(5)
        (region,) = regions_of(target)
        assert region.capturable and region.name == "forward"
        region.fn()
        outputs.append(target.output().clone())
    assert torch.equal(outputs[0], outputs[1])  # deterministic: the replay probe needs two equal instances
    a.stage(6)
    regions_of(a)[0].fn()
    assert not torch.equal(a.output(), outputs[0])  # inputs change with the step
    assert regions_of(a)[0].extra["entry"] == "fixtures/targets/plain_module.py:TinyDecoder.forward"


def test_module_target_stages_numbers_with_fill():
    buf = torch.zeros(1)
    target = ModuleTarget(torch.nn.Identity(), {"input": buf}, lambda step: {"input": float(step)}, "cpu")
    target.stage(3)
    assert buf.item() == 3.0


def test_target_without_regions_is_one_step_region():
    class Stepper:
        devices = ["cpu"]

        def step(self):
            pass

    (region,) = regions_of(Stepper())
    assert region.name == "step" and region.device == "cpu"
    with pytest.raises(TypeError):
        regions_of(object())


@pytest.mark.parametrize("spec", ["nope", "missing.py:f", f"{TARGETS / 'hazards.py'}:missing", "no_such_module:f"])
def test_bad_specs_raise_target_error(spec):
    with pytest.raises(TargetError):
        load_factory(spec)


def test_module_spec_loads(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert callable(load_factory("dsv4.target:make_target"))


def test_parse_option_reads_literals():
    assert parse_option("n_layers=2") == ("n_layers", 2)
    assert parse_option("flag=True") == ("flag", True)
    assert parse_option("name=ab-graph") == ("name", "ab-graph")
    with pytest.raises(TargetError):
        parse_option("=3")


def _layer(index: int) -> None:
    del index


def test_region_fallback_location_sees_through_no_grad_and_partial(monkeypatch):
    monkeypatch.chdir(ROOT)
    # dsv4's target wraps every region in torch.no_grad(): a region-level finding (empty graph,
    # replay mismatch, soak) must point at the region's code, not at torch/utils/_contextlib.py
    import functools

    from graphlint.dynamic.frames import function_frame

    where = function_frame(torch.no_grad()(functools.partial(_layer, 3)))
    assert (where.path, where.line, where.function) == ("tests/dynamic/test_target_protocol.py",
                                                        _layer.__code__.co_firstlineno, "_layer")


@pytest.mark.parametrize("body, says", [("def make_target(devices:\n", "SyntaxError"),
                                        ("import not_a_module_xyz\n", "ModuleNotFoundError"),
                                        ("x = 1\nraise RuntimeError('import-time boom')\n", "RuntimeError")])
def test_a_target_file_that_fails_to_load_is_a_target_error_with_its_line(body, says, tmp_path):
    path = tmp_path / "broken_target.py"
    path.write_text(body)
    with pytest.raises(TargetError, match=f"cannot load target file .*{says}.*broken_target.py:{body.count(chr(10))}"):
        load_factory(f"{path}:make_target")
    assert "graphlint_target_broken_target" not in __import__("sys").modules


class _Decoder:
    def layer(self, index: int) -> None:
        del index


def test_region_entry_sees_through_no_grad_and_partial(monkeypatch):
    monkeypatch.chdir(ROOT)
    # dsv4's eager regions are torch.no_grad()(partial(self._layer, i)): a partial is no closure,
    # and the static cross-check must take the region's own function as its decode entry
    import functools

    from graphlint.dynamic.frames import region_entry
    from graphlint.dynamic.target import Region

    region = Region("layer0", torch.no_grad()(functools.partial(_Decoder().layer, 0)))
    assert region_entry(region) == "tests/dynamic/test_target_protocol.py:_Decoder.layer"
