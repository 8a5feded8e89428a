"""``python -m dsv4.faults list | report -o reports/seedlab-<gpu>-<date>.md [--json FILE]``.

``report`` runs the lab (see :mod:`dsv4.faults.lab`) and writes the table. On a GPU every fault
is probed in fresh worker processes (``--jobs`` faults at a time) with a short soak, with the
dsv4 kernels on their torch fallbacks unless ``--kernels cutedsl`` (compiling the CuTeDSL kernels
costs every worker seconds); without CUDA the tracer runs on the CPU and the GPU column says
so. Exit 0 when every fault this machine can show (a CPU: static and tracer; one GPU: not the
two-GPU ones) is caught by at least one half and no control raised an alarm, 1 otherwise, 2 on
a usage error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from dataclasses import asdict

from dsv4.faults import FAULTS, planted
from dsv4.faults.lab import LAB_OPTIONS, Observation, run_lab, verdict


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "dsv4", "graphlint", "rules"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + (" + uncommitted changes" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cmd_list() -> int:
    for name, cls in FAULTS.items():
        path, line = planted(name)[0]
        kind = "control" if cls.fault.control else f"{cls.fault.category or 'runtime only'}"
        print(f"{name:26} {','.join(cls.fault.seed):18} {kind:16} {path.name}:{line}  {cls.fault.summary}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import torch

    names = args.fault or list(FAULTS)
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        print(f"python -m dsv4.faults: unknown fault(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    os.environ["DSV4_KERNELS"] = args.kernels  # inherited by the worker processes
    cuda = torch.cuda.is_available() and not args.cpu
    started = datetime.datetime.now(datetime.timezone.utc)
    progress = (lambda what: print(f"seedlab: {what} done", file=sys.stderr, flush=True)) if args.verbose else None
    observations, baseline = run_lab(names, cuda=cuda, jobs=args.jobs, soak_steps=args.soak, on_done=progress)
    took = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
    device = baseline.device if cuda else "cpu (no CUDA: tracer only)"
    header = [f"Date: {started:%Y-%m-%d %H:%M UTC}  ",
              f"Command: `python -m dsv4.faults {' '.join(sys.argv[1:] if args.argv is None else args.argv)}`  ",
              f"Machine: {device}; torch {torch.__version__}; dsv4 kernels: {args.kernels}; "
              f"code: {_commit()}; took {took:.0f} s  ",
              f"Lab: target `dsv4.target:make_target` with {LAB_OPTIONS} and `fault=NAME`; static: "
              "`graphlint check --config dsv4/faults/graphlint.toml --entry <the function holding the planted line>`"
              + (f"; GPU probes in fresh worker processes, {args.jobs} fault(s) at a time, soak {args.soak} steps"
                 if cuda else "")]
    from dsv4.faults.report import render

    text = render(observations, baseline, cuda=cuda, header=header)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"cuda": cuda, "baseline": asdict(baseline),
                       "observations": {n: asdict(o) for n, o in observations.items()}}, fh, indent=1)
    gpus = torch.cuda.device_count() if cuda else 0
    missed = [n for n, o in observations.items() if verdict(FAULTS[n].fault, o) in ("missed", "false alarm")]
    failing = [n for n in missed if _visible_here(FAULTS[n].fault, gpus)]
    if args.output:
        print(f"seedlab: wrote {args.output}: {len(observations)} faults, {len(missed)} missed or false alarm"
              + (f" ({', '.join(missed)})" if missed else "")
              + (f"; {len(missed) - len(failing)} of them need what this machine lacks" if len(failing) < len(missed) else ""),
              file=sys.stderr)
    return 1 if failing else 0


def _visible_here(fault, gpus: int) -> bool:
    """Could this machine have seen the fault? (A control's false alarm always counts.)"""
    if fault.control or fault.static:
        return True
    if fault.cpu or (gpus and (fault.gpu or fault.gpu_region)):
        return True
    return gpus >= 2 and bool(fault.gpu2)


def cmd_time(args: argparse.Namespace) -> int:
    from dsv4.faults.timing import time_decoders

    json.dump(time_decoders(args.fault or [], json.loads(args.options)), sys.stdout)
    return 0


def load(path: str) -> tuple[dict[str, Observation], Observation, bool]:
    """Observations saved with ``report --json``."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    obs = {n: Observation.from_dict(o) for n, o in data["observations"].items()}
    return obs, Observation.from_dict(data["baseline"]), data["cuda"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsv4.faults", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every fault: seed rows, category, planted line, what it is")
    rep = sub.add_parser("report", help="run both halves on every fault and write the table")
    rep.add_argument("--output", "-o", metavar="FILE", help="markdown report (default: stdout)")
    rep.add_argument("--json", metavar="FILE", help="also save the observations as JSON")
    rep.add_argument("--fault", action="append", metavar="NAME", help="only these faults (repeatable)")
    rep.add_argument("--jobs", "-j", type=int, default=4, help="faults probed at once on a GPU (default 4)")
    rep.add_argument("--soak", type=int, default=24, help="soak steps on a GPU (default 24: memory growth, drift)")
    rep.add_argument("--kernels", choices=("torch", "cutedsl"), default="torch", help="dsv4's kernel backend")
    rep.add_argument("--cpu", action="store_true", help="tracer only, on the CPU, even when CUDA is available")
    rep.add_argument("--verbose", "-v", action="store_true", help="a line per probed fault on stderr")
    timing = sub.add_parser("time", help="(internal) step times of fault decoders vs the clean one, as JSON")
    timing.add_argument("--fault", action="append", metavar="NAME")
    timing.add_argument("--options", default=json.dumps(LAB_OPTIONS), help="the target options, as JSON")
    args = parser.parse_args(argv)
    if args.command == "list":
        return cmd_list()
    if args.command == "time":
        return cmd_time(args)
    args.argv = argv
    if args.jobs < 1 or args.soak < 0:
        parser.error("--jobs must be at least 1 and --soak at least 0")
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
