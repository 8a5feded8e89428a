"""``--gpus`` where there is no GPU is a usage error (exit 2), never a silent CPU run: a CI job that
asked for capture on GPU 0 must not pass on the tracer alone."""

from __future__ import annotations

import pytest

from graphlint.cli import main
from graphlint.dynamic import gpus
from graphlint.dynamic.gpus import validate_gpus


def test_validate_gpus_says_why():
    assert validate_gpus(None, 0) == validate_gpus([0, 1], 2) == ""
    assert "only 2 CUDA device(s) visible" in validate_gpus([3], 2)
    assert "no CUDA device is visible here" in validate_gpus([0], 0)
    assert "contradict" in validate_gpus([0], 1, cpu=True)
    assert validate_gpus(None, 0, cpu=True) == ""


@pytest.mark.parametrize("command", ["inventory", "capture-test"])
def test_gpus_without_cuda_exits_2_before_any_probe(command, monkeypatch, capsys):
    monkeypatch.setattr(gpus, "gpu_count", lambda: 0)
    assert main([command, "--gpus", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("graphlint: error: --gpus 0: no CUDA device is visible here")
    assert main([command, "--gpus", "0", "--cpu", "--no-progress"]) == 2
    assert "contradict" in capsys.readouterr().err
