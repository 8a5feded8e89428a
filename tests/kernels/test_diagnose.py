"""``python -m dsv4.kernels.diagnose`` on a machine without a GPU: its bookkeeping, not a kernel."""

from __future__ import annotations

import subprocess

import pytest
import torch

from dsv4.kernels import diagnose


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_without_cuda_it_says_why_and_exits_2(capsys):
    assert diagnose.main([]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err


def test_a_hung_child_names_the_step_it_stopped_in(monkeypatch):
    printed = "step import start 0.00\nstep import done 3.1\nstep wait start 3.9\n"

    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"], output=printed.encode(), stderr=b"")

    monkeypatch.setattr(diagnose.subprocess, "run", hang)
    last, outcome, output = diagnose._run_one("rms_norm", 0, 5.0)
    assert (last, outcome) == ("wait", "killed after 5 s") and "step wait start" in output


def test_a_stack_dump_before_the_deadline_reads_as_a_hang(monkeypatch):
    dumped = "step compile done 0.2\nstep wait start 0.3\nTimeout (0:00:45)!\nThread 0x1 (most recent call first):\n"
    monkeypatch.setattr(diagnose.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a[0], 1, stdout=dumped, stderr=""))
    assert diagnose._run_one("sinkhorn", 0, 50.0)[:2] == ("wait", "hung (stack dumped)")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
@pytest.mark.slow
def test_a_child_that_fails_reports_its_exit_and_last_step():
    last, outcome, output = diagnose._run_one("rms_norm", 0, 120.0)
    assert outcome.startswith("exit ") and last == "import", output
