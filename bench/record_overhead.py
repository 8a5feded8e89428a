"""What ``graphlint record`` costs: a decode command run plainly and under the recorder, alternately.

    python bench/record_overhead.py [--repeats 5] [--source DIR ...] -- CMD [ARGS...]
    python bench/record_overhead.py -- python bench/hf_generate.py --steps 64
    python bench/record_overhead.py -- python -m dsv4 generate --preset small --decoder eager --steps 128

Each repeat runs CMD, then ``graphlint record [--source ...] -- CMD``, in fresh processes (the
order alternates, so drift on a noisy machine hits both alike). Reported: the median ratio of
the whole command's wall time (what the issue's <= 1.5x is about: imports, model build, warm-up
and decoding) and, when the command prints its decode time (``"s_per_token": ...`` as JSON, or
dsv4's ``s/token=...``), the median ratio of that. Ratios within one run, never absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

_PER_TOKEN = re.compile(r'(?:"s_per_token":\s*|s/token=)([0-9.eE+-]+)')


def run(cmd: list[str]) -> tuple[float, float | None]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    found = _PER_TOKEN.findall(proc.stdout)
    return wall, (float(found[-1]) if found else None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        raise SystemExit("usage: record_overhead.py [--repeats N] [--source DIR ...] -- CMD [ARGS...]")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--source", action="append", default=[])
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if command and command[0] in ("python", "python3"):
        command[0] = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        recorded = [sys.executable, "-m", "graphlint", "record", "-o", os.path.join(tmp, "decode-path.json"),
                    *(f"--source={s}" for s in args.source), "--", *command]
        plain_runs, record_runs = [], []
        for i in range(args.repeats):
            pair = [(plain_runs, command), (record_runs, recorded)]
            for into, cmd in (pair if i % 2 == 0 else pair[::-1]):
                into.append(run(cmd))
        with open(os.path.join(tmp, "decode-path.json"), encoding="utf-8") as fh:
            functions = len(json.load(fh)["functions"])
    wall = [r[0] / p[0] for p, r in zip(plain_runs, record_runs)]
    figures = {"command": " ".join(argv[split + 1:]), "sources": args.source or ["."], "repeats": args.repeats,
               "recorded_functions": functions, "wall_ratio": statistics.median(wall),
               "plain_wall_s": statistics.median(p[0] for p in plain_runs)}
    if all(p[1] and r[1] for p, r in zip(plain_runs, record_runs)):
        figures["decode_ratio"] = statistics.median(r[1] / p[1] for p, r in zip(plain_runs, record_runs))
    print(f"{figures['command']}  (sources: {', '.join(figures['sources'])}; {functions} functions recorded)")
    print(f"  whole command: record / plain = {figures['wall_ratio']:.2f}x (median of {args.repeats}; plain "
          f"{figures['plain_wall_s']:.1f} s)")
    if "decode_ratio" in figures:
        print(f"  decode loop:   record / plain = {figures['decode_ratio']:.2f}x (per token)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(figures, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
