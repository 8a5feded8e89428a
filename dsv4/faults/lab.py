"""Run both halves of graphlint on every fault and record what each saw, where.

* Static: ``graphlint check`` with the lab's config (:data:`~dsv4.faults.LAB_CONFIG`) and the
  function holding the planted line as the decode entry, the way a user points graphlint at the
  step that holds a hazard. Run in-process, sharing one cache across faults.
* Dynamic: ``graphlint inventory``'s probes on the bundled target with ``fault=NAME`` (tiny
  preset, bf16 like the seed's model): on the CPU the tracer; on a GPU the real per-GPU worker
  processes (tracer + sync-debug in one, capture/replay/soak in another, and a fresh one after a
  failed capture), so that one fault's failed capture never taints the next fault's.

An :class:`Observation` holds plain data (it travels as JSON from the GPU run to the report).
"""

from __future__ import annotations

import dataclasses
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dsv4.faults import FAULTS, LAB_CONFIG, enclosing_function, planted
from dsv4.faults.base import Fault
from graphlint.paths import display_path

TARGET = "dsv4.target:make_target"
LAB_OPTIONS: dict[str, Any] = {"preset": "tiny", "dtype": "bfloat16"}  # bf16: the seed's weights (casts happen)
BASELINE = "full-graph (clean)"


@dataclass
class Observation:
    fault: str
    planted: list[str]  # "path:line", the planted line first
    entry: str = ""  # the static entry: "path:Qual.name"
    static: list[str] = field(default_factory=list)  # rules at a planted line
    static_stray: list[str] = field(default_factory=list)  # "line RULE" in the fault's own code elsewhere
    static_note: str = ""  # why the static half did not run
    dynamic: dict[str, list[str]] = field(default_factory=dict)  # runtime rule at a planted line -> probes
    region: dict[str, list[str]] = field(default_factory=dict)  # "RULE path:line" elsewhere -> probes
    probes: dict[str, str] = field(default_factory=dict)  # probe -> "status: detail"
    capture: dict[str, str] = field(default_factory=dict)  # region -> "status: detail"
    timing: dict[str, float] = field(default_factory=dict)  # graph_s, eager_s per step (harness or timing pass)
    device: str = ""
    two_gpu: dict[str, list[str]] = field(default_factory=dict)  # with 2+ GPUs: rules at the planted line, spanning two

    @classmethod
    def from_dict(cls, data: dict) -> "Observation":
        return cls(**data)


def planted_keys(name: str) -> set[tuple[str, int]]:
    """(path as graphlint spells it, line) of the fault's planted lines."""
    return {(display_path(p), line) for p, line in planted(name)}


def planted_texts(name: str) -> list[str]:
    return [f"{display_path(p)}:{line}" for p, line in planted(name)]


def static_entry(name: str) -> str:
    path, line = planted(name)[0]
    return f"{display_path(path)}:{enclosing_function(path, line)}"


def own_functions(name: str) -> tuple[str, ...]:
    """Qualified-name prefixes of the fault's own code: its decoder, its variants, and the
    functions holding its planted lines."""
    cls = FAULTS[name]
    names = [cls.__name__, *(v.__name__ for v in cls.variants.values())]
    names += [enclosing_function(p, line) for p, line in planted(name)]
    return tuple(dict.fromkeys(names))


# -- static ------------------------------------------------------------------------------------
def run_static(names: list[str]) -> dict[str, Observation]:
    """``graphlint check`` per fault (lab config, the fault's entry), one shared cache."""
    out = {n: Observation(n, planted_texts(n), entry=static_entry(n)) for n in names}
    try:
        import libcst  # noqa: F401

        from graphlint.check import run
        from graphlint.check_settings import resolve
        from graphlint.config_file import load_config
    except ImportError as exc:
        for obs in out.values():
            obs.static_note = f"not run: the static half needs libcst ({exc})"
        return out
    config = load_config(LAB_CONFIG)
    with tempfile.TemporaryDirectory(prefix="seedlab-cache-") as cache:
        for name, obs in out.items():
            settings = dataclasses.replace(resolve(config, entries=[obs.entry], jobs=1), cache_dir=Path(cache))
            findings = [f for f in run(settings).findings if not f.suppressed and f.category != "meta"]
            classify_static(name, obs, findings)
    return out


def classify_static(name: str, obs: Observation, findings) -> None:
    keys, own = planted_keys(name), own_functions(name)
    for f in findings:
        if (f.path, f.line) in keys:
            obs.static = sorted({*obs.static, f.rule})
        elif f.path.startswith("dsv4/faults/") and f.function.startswith(own):
            obs.static_stray = sorted({*obs.static_stray, f"{f.line} {f.rule}"})


# -- dynamic -------------------------------------------------------------------------------------
def run_dynamic(name: str | None, *, cuda: bool, soak_steps: int = 0, gpus: tuple[int, ...] = (0,),
                options: dict[str, Any] | None = None) -> Observation:
    """The inventory probes on one fault (``None``: the clean full-graph decoder); ``options``
    override :data:`LAB_OPTIONS` (the CPU tests use a two-layer model). Several ``gpus``: one
    target spanning them (the layers split across them)."""
    from graphlint.dynamic.run import Request, run_inventory

    options = {**LAB_OPTIONS, **(options or {}), **({"fault": name} if name else {"decoder": "full-graph"})}
    request = Request(target=TARGET, options=options, cpu=not cuda, gpus=list(gpus) if cuda else None,
                      placement="span" if len(gpus) > 1 else "per-gpu", soak_steps=soak_steps if cuda else 0)
    (device,) = run_inventory(request).devices
    obs = Observation(name or BASELINE, planted_texts(name) if name else [])
    keys = planted_keys(name) if name else set()
    for f in device.findings:
        probes = sorted({e.split(":")[0] for e in f.evidence})
        if (f.path, f.line) in keys:
            obs.dynamic[f.rule] = sorted({*obs.dynamic.get(f.rule, []), *probes})
        else:
            obs.region[f"{f.rule} {f.path}:{f.line}"] = probes
    obs.probes = {p.probe: f"{p.status}: {p.detail}" for p in device.probes}
    obs.capture = {r: f"{c['status']}: {c.get('detail', '')}".rstrip(": ") for r, c in device.capture.items()}
    soak = device.soak
    if soak.get("graph_s_per_step"):
        obs.timing = {"graph_s": soak["graph_s_per_step"], "eager_s": soak["eager_s_per_step"]}
    else:
        obs.timing = dict(device.timing)
    gpu_name = device.meta.get("gpu", "")
    obs.device = f"{device.device} ({gpu_name})" if gpu_name else device.device
    return obs


def run_lab(names: list[str], *, cuda: bool, jobs: int = 1, soak_steps: int = 0,
            on_done: Callable[[str], None] | None = None) -> tuple[dict[str, Observation], Observation]:
    """Static and dynamic observations per fault, plus the clean decoder's (the baseline)."""
    static = run_static(names)

    def probe(name: str | None) -> Observation:
        obs = run_dynamic(name, cuda=cuda, soak_steps=soak_steps)
        if on_done:
            on_done(name or BASELINE)
        return obs

    with ThreadPoolExecutor(max_workers=max(1, jobs if cuda else 1)) as pool:
        results = list(pool.map(probe, [None, *names]))
    baseline, dynamic = results[0], dict(zip(names, results[1:]))
    for name in names:
        merged = static[name]
        for key in ("dynamic", "region", "probes", "capture", "timing", "device"):
            setattr(merged, key, getattr(dynamic[name], key))
    if cuda:
        retime([baseline, *static.values()])
        two_gpus(static, jobs)
    return static, baseline


def two_gpus(observations: dict[str, Observation], jobs: int) -> None:
    """With two GPUs or more, the faults that need two, on a target spanning GPUs 0 and 1."""
    import torch

    names = [n for n in observations if FAULTS[n].fault.gpus > 1]
    if torch.cuda.device_count() < 2 or not names:
        return
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        spans = list(pool.map(lambda n: run_dynamic(n, cuda=True, gpus=(0, 1)), names))
    for name, span in zip(names, spans):
        observations[name].two_gpu = span.dynamic or {"(nothing at the line)": sorted(span.region)}


def retime(observations: list[Observation]) -> None:
    """Replace the probes' step times (taken with other faults probed at once) by one quiet
    process's: every decoder whose capture did not fail, the clean one included."""
    import json
    import subprocess
    import sys

    timed = [o.fault for o in observations if o.fault != BASELINE and not any(
        c.startswith("failed") for c in o.capture.values())]
    command = [sys.executable, "-m", "dsv4.faults", "time", "--options", json.dumps(LAB_OPTIONS)]
    command += [arg for name in timed for arg in ("--fault", name)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        for obs in observations:
            obs.probes["timing"] = f"error: the timing process failed: {tail[0][:200]}"
        return
    figures = json.loads(proc.stdout)
    for obs in observations:
        key = "clean" if obs.fault == BASELINE else obs.fault
        obs.timing = figures.get(key, {})
        obs.probes["timing"] = ("ran: one process, greedy steps, repeats interleaved" if key in figures
                                else "skipped: its capture failed (it would taint the timing process)")


# -- verdicts ------------------------------------------------------------------------------------
def caught(obs: Observation) -> tuple[bool, bool]:
    """(static saw it at the planted line, a runtime probe saw it at the line or in its region,
    on one GPU or, for the faults that need them, on two)."""
    two = [rule for rule in obs.two_gpu if not rule.startswith("(")]
    return bool(obs.static), bool(obs.dynamic or obs.region or two)


def verdict(fault: Fault, obs: Observation) -> str:
    static, dynamic = caught(obs)
    if fault.control:
        return "clean" if not (static or dynamic or obs.static_stray) else "false alarm"
    return {(True, True): "both", (True, False): "static only", (False, True): "dynamic only"}.get(
        (static, dynamic), "missed")
