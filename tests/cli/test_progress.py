"""Issue 10 item 8: progress names its phase and counts its unit; silent off a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from graphlint.progress import CheckProgress, InventoryProgress, wanted


def test_the_runner_reports_every_phase_with_its_count(project):
    project.write("src/ops.py", "import torch\n\ndef fused(x) -> torch.Tensor:\n    return x * 2\n")
    project.write("src/engine.py", "from ops import fused\n\ndef decode_step(x):\n    return fused(x).item()\n")
    calls = []
    settings = resolve(load_config(paths=["src"]), paths=["src"], use_cache=False, jobs=1)
    run(settings, lambda done, total, phase: calls.append((phase, done, total)))
    phases = list(dict.fromkeys(phase for phase, _, _ in calls))
    assert phases == ["finding files", "analysing", "cross-file pass", "linking"]
    assert ("analysing", 2, 2) in calls and ("cross-file pass", 1, 1) in calls and ("linking", 0, None) in calls


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120, color_system=None), out


def test_check_progress_names_the_phase_and_counts_files():
    console, out = _console()
    bar = CheckProgress(console)
    bar.update(3, 600, "analysing")
    assert "graphlint: analysing" in out.getvalue() and "3/600 files" in out.getvalue()
    bar.update(2, 24, "cross-file pass")
    assert "graphlint: cross-file pass" in out.getvalue() and "2/24 files" in out.getvalue()
    bar.update(0, None, "linking")  # no count to fake: the phase and what it covers
    assert "linking the call graph of 600 files" in out.getvalue()
    bar.close()


def test_inventory_progress_counts_devices_times_probes_times_steps():
    console, out = _console()
    with InventoryProgress(total=2 * (3 + 16), devices=2, console=console) as bar:
        bar.step("cuda:0", "tracer", 3, 3)
        bar.step("cuda:1", "capture+replay", 5, 8)
        bar.step("cuda:1", "capture+replay", 5, 8)  # the second instance staging the same step
        bar.step("cuda:1", "soak", 12, 16)
        task = bar._progress.tasks[0]
        assert task.completed == 3 + 12 and task.fields["count"] == "15/38 steps"
        assert task.description == "graphlint: cuda:1 soak step 12/16"
        bar.step("cuda:1", "capture+replay", 1, 8)  # a re-run after a failed capture starts again
        assert bar._progress.tasks[0].completed == 3 + 12
    assert "graphlint: cuda:1 capture+replay step 1/8" in out.getvalue() and "15/38 steps" in out.getvalue()


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_only_on_a_terminal_and_never_with_no_progress():
    assert wanted(False, _Stream(True))
    assert not wanted(True, _Stream(True))
    assert not wanted(False, _Stream(False))


def test_check_writes_nothing_to_a_non_terminal_stderr(project):
    project.write("src/m.py", "def decode_step(x):\n    return x\n")
    result = project.run("--raw", "check", "src", "--no-cache")  # no --no-progress: stderr is not a tty
    assert result.rc == 0 and result.err == ""
