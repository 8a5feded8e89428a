"""Shared by the dynamic tests: plant marks and a one-snippet target for rule examples."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import torch

from graphlint.dynamic.target import Region

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ROOT / "fixtures" / "targets"
PLANT = re.compile(r"#\s*plant:\s*((?:GL\d{3}\s*)+)")


def standby_aware(fake):
    """A fake ``run._worker`` that sees the jobs it saw before the standby graph worker existed: a
    standby job waits for its go file (so call this outside any lock) and, when it is not needed,
    is answered without reaching ``fake``; when it is, ``fake`` gets the second graph job."""
    from graphlint.dynamic.worker import await_go
    from graphlint.inventory import DeviceResult

    def worker(job, workers=None, env=None):
        if job.get("standby"):
            job = await_go(job)
            if job is None:
                return DeviceResult("standby", meta={"standby": "not needed"})
        return fake(job, workers, env)
    return worker


def inventory_with_workers(monkeypatch, fake, **request):
    """``run_inventory`` on one pretended GPU, every worker job answered by ``fake`` (standby-aware)."""
    from graphlint.dynamic import run as run_module

    monkeypatch.setattr(run_module, "_worker", standby_aware(fake))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    return run_module.run_inventory(run_module.Request(target="t.py:make_target", **request))


def plants(path: Path) -> set[tuple[str, int]]:
    """{(code, line)} of every ``# plant: GLxxx ...`` mark in ``path``."""
    marks = set()
    for number, text in enumerate(path.read_text().splitlines(), 1):
        match = PLANT.search(text)
        if match:
            marks |= {(code, number) for code in match.group(1).split()}
    return marks


def plant_lines(path: Path, code: str) -> list[int]:
    return sorted(line for c, line in plants(path) if c == code)


def spec(name: str) -> str:
    return f"{(TARGETS / name).relative_to(ROOT).as_posix()}:make_target"


class SnippetTarget:
    """One region whose body is a rule's bad/good example (see rules/runtime.yaml)."""

    def __init__(self, fn, device: torch.device, capturable: bool, stage_fn=None) -> None:
        self.fn, self.device, self.capturable, self.stage_fn = fn, device, capturable, stage_fn
        self.devices = [device]
        cuda = device.type == "cuda"
        self.ns = {
            "x": torch.linspace(-1, 1, 8, device=device), "idx": torch.arange(4, device=device),
            "buf": torch.zeros(4, dtype=torch.int64, device=device), "out": torch.zeros(8, device=device),
            "host": torch.ones(8), "pinned": torch.ones(8, pin_memory=cuda), "step": 0, "device": device,
            "peer": torch.device("cuda", 1) if cuda and torch.cuda.device_count() > 1 else torch.device("meta"),
            "side": torch.cuda.Stream(device=device) if cuda else None, "state": {}, "torch": torch,
            "weight": torch.nn.Parameter(torch.linspace(-1, 1, 8, device=device, dtype=torch.bfloat16),
                                         requires_grad=False),
        }

    def stage(self, step: int) -> None:
        self.ns["step"] = step
        if self.stage_fn is not None:
            self.stage_fn(**self.ns)

    def _run(self) -> None:
        self.fn(**self.ns)

    def regions(self) -> list[Region]:
        return [Region("snippet", self._run, device=self.device, capturable=self.capturable)]

    def output(self) -> torch.Tensor:
        return self.ns["out"]


def snippet_factory(code: str, tmp_path: Path, name: str):
    """A factory for a target whose step runs ``code`` from a real file (so frames resolve).
    Code above a ``# ---`` line runs in ``stage(step)`` instead (see rules/runtime.yaml)."""
    args = "x, idx, buf, out, host, pinned, step, device, peer, side, state, torch, weight"
    staged, _sep, body = code.rpartition("# ---\n") if "# ---\n" in code else ("", "", code)
    path = tmp_path / f"{name}.py"
    path.write_text(f"def snippet({args}):\n" + textwrap.indent(body.rstrip() + "\n", "    ")
                    + (f"\n\ndef stage_snippet({args}):\n" + textwrap.indent(staged.rstrip() + "\n", "    ")
                       if staged else ""))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    capturable = "CUDAGraph" not in code  # a snippet that captures its own graph is an eager region

    def factory(devices, **_options):
        return SnippetTarget(namespace["snippet"], torch.device(devices[0]), capturable, namespace.get("stage_snippet"))

    return factory, path
