"""Fuzz ``graphlint check`` with thousands of broken files: no hang, no traceback, no GL002.

Takes seed files (default: the installed torch package, this repository's fixtures/ and dsv4/),
writes ``--files`` mutated copies (bench/mutations.py: cut files, stray tokens, tabs, BOMs, CRLF,
bytes that are not UTF-8, nesting past every limit, huge literals, newer syntax, broken
suppressions) plus a hostile file system (names that are not UTF-8, unreadable files and
directories, symlink loops, dangling links, a FIFO, files over the size limit), then runs
``graphlint check`` on them in batches, the way CI would: a subprocess per batch, cold cache.
The same seeds, unmutated, are checked too, for the time ratio (mutated / clean <= 2).

    python bench/fuzz.py --files 10000                   # the full run (docs/check.md has its figures)
    python bench/fuzz.py --files 300 --seed 7 --keep /tmp/crashers   # a quick one; keep what fails

A failure is: a batch past its time limit (a hang), a traceback or exit code 2 (a crash), or a
GL002 finding (graphlint failed on a file). Failing files are copied to ``--keep``: add them to
tests/corpus/hostile/ with what they must produce. Exit 1 on any failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutations import mutate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def seeds(paths: list[Path], limit_bytes: int) -> list[Path]:
    found = []
    for root in paths:
        found += sorted(p for p in root.rglob("*.py") if p.is_file() and p.stat().st_size <= limit_bytes)
    return found


def default_corpus() -> list[Path]:
    spec = importlib.util.find_spec("torch")
    roots = [REPO / "fixtures", REPO / "dsv4"]
    if spec is not None and spec.submodule_search_locations:
        roots.append(Path(list(spec.submodule_search_locations)[0]))
    return roots


def write_batch(directory: Path, picks: list[tuple[Path, bytes, list[str]]], rng: random.Random, hostile_fs: bool):
    """Mutated files (and, once per batch, the hostile file system); returns name -> mutations."""
    names = {}
    for i, (seed, data, how) in enumerate(picks):
        sub = directory / f"d{i % 50:02d}"
        sub.mkdir(exist_ok=True)
        name = f"m{i:05d}_{seed.stem[:30]}.py"
        (sub / name).write_bytes(data)
        names[f"{sub.name}/{name}"] = how
    if hostile_fs:
        odd = os.fsencode(directory) + b"/caf\xe9_\xff.py"
        with open(odd, "wb") as handle:
            handle.write(b"import torch\ndef decode(x: torch.Tensor):\n    return x.item()\n")
        locked = directory / "locked.py"
        locked.write_bytes(b"x = 1\n")
        locked.chmod(0)
        (directory / "locked_dir").mkdir()
        (directory / "locked_dir" / "inner.py").write_bytes(b"x = 1\n")
        (directory / "locked_dir").chmod(0)
        os.symlink("loop_a.py", directory / "loop_b.py")
        os.symlink("loop_b.py", directory / "loop_a.py")
        os.symlink(".", directory / "dir_loop")
        os.symlink("nowhere.py", directory / "dangling.py")
        os.mkfifo(directory / "fifo.py")
        big = rng.choice([3, 20]) << 20  # over max-file-size (2MB): one line of a list literal
        (directory / "huge_line.py").write_bytes(b"X = [" + b"1, " * (big // 3) + b"]\n")
    return names


def unlock(directory: Path) -> None:
    for path in (directory / "locked.py", directory / "locked_dir"):
        if path.exists():
            path.chmod(0o700)


def check(directory: Path, jobs: int | None, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "graphlint", "check", "--no-cache", "--no-progress", "--format", "json",
           "--exit-zero", str(directory)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=directory.parent,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    except subprocess.TimeoutExpired:
        return {"hang": True, "wall": time.perf_counter() - start}
    wall = time.perf_counter() - start
    err = proc.stderr.decode(errors="replace")
    out = {"hang": False, "wall": wall, "rc": proc.returncode, "traceback": "Traceback" in err, "stderr": err}
    try:
        out["findings"] = json.loads(proc.stdout)["findings"]
    except ValueError:
        out["findings"] = None
    return out


def max_child_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000, help="mutated files in all (default 1000)")
    parser.add_argument("--batch", type=int, default=2000, help="files per graphlint run (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", type=Path, action="append", help="seed directories (default: torch, fixtures, dsv4)")
    parser.add_argument("--jobs", type=int, default=None, help="graphlint --jobs (default: its own)")
    parser.add_argument("--keep", type=Path, help="copy failing files here")
    parser.add_argument("--no-clean", action="store_true", help="skip the unmutated run (no time ratio)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pool = seeds(args.corpus or default_corpus(), 400_000)
    if not pool:
        sys.exit("no seed files")
    failures, totals, how_counts = [], Counter(), Counter()
    walls = {"mutated": 0.0, "clean": 0.0}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphlint-fuzz-") as tmp:
        done = 0
        while done < args.files:
            count = min(args.batch, args.files - done)
            chosen = [rng.choice(pool) for _ in range(count)]
            picks = []
            for seed in chosen:
                data, how = mutate(seed.read_bytes(), rng)
                picks.append((seed, data, how))
                how_counts.update(how)
            batch = Path(tmp) / f"batch{done:06d}"
            batch.mkdir()
            names = write_batch(batch, picks, rng, hostile_fs=True)
            limit = 120 + 2.0 * count  # generous: a hang is minutes past any per-file budget
            result = check(batch, args.jobs, limit)
            walls["mutated"] += result["wall"]
            unlock(batch)
            problems = _problems(result)
            if problems:
                failures.append((batch.name, problems))
                _keep(args.keep, batch, result, names)
            for f in result.get("findings") or []:
                totals[f["rule"]] += 1
                if f["rule"] == "GL005":
                    hit = next((k for k in ("max-depth", "max-file-size", "file-timeout", "memory") if k in f["message"]),
                               "other")
                    totals["GL005 " + hit] += 1
            if not args.no_clean:
                clean = Path(tmp) / f"clean{done:06d}"
                clean.mkdir()
                write_batch(clean, [(s, s.read_bytes(), []) for s in chosen], rng, hostile_fs=False)
                walls["clean"] += check(clean, args.jobs, limit)["wall"]
                shutil.rmtree(clean, ignore_errors=True)
            shutil.rmtree(batch, ignore_errors=True)
            done += count
            print(f"{done}/{args.files} files, {walls['mutated']:.0f} s in graphlint, "
                  f"{len(failures)} failing batch(es)", file=sys.stderr, flush=True)
    _report(args, walls, totals, how_counts, failures, time.perf_counter() - t0)
    return 1 if failures else 0


def _problems(result: dict) -> list[str]:
    if result["hang"]:
        return [f"hang: no result after {result['wall']:.0f} s"]
    out = []
    if result["traceback"] or result["rc"] not in (0, 1):
        out.append(f"exit {result['rc']}: {result['stderr'][-2000:]}")
    if result["findings"] is None:
        out.append("no JSON on stdout")
    gl002 = [f for f in result["findings"] or [] if f["rule"] == "GL002"]
    out += [f"GL002 {f['path']}: {f['message']}" for f in gl002]
    return out


def _keep(keep: Path | None, batch: Path, result: dict, names: dict) -> None:
    if keep is None:
        return
    keep.mkdir(parents=True, exist_ok=True)
    paths = {batch.parent / f["path"] for f in result.get("findings") or [] if f["rule"] == "GL002"}
    for source in (paths or {batch / rel for rel in names}):
        if source.is_file():
            shutil.copy(source, keep / f"{batch.name}_{source.name}")
    (keep / f"{batch.name}.json").write_text(json.dumps({"result": {k: v for k, v in result.items() if k != "findings"},
                                                         "mutations": names}, indent=1))


def _report(args, walls, totals, how_counts, failures, elapsed) -> None:
    print(f"\nfuzz: {args.files} mutated files (seed {args.seed}), {elapsed:.0f} s in all")
    print(f"graphlint wall time: mutated {walls['mutated']:.1f} s", end="")
    if walls["clean"]:
        print(f", clean {walls['clean']:.1f} s, mutated / clean = {walls['mutated'] / walls['clean']:.2f}", end="")
    print(f"\nmax RSS of one process (graphlint or a worker): {max_child_rss_mb():.0f} MB")
    print("mutations: " + ", ".join(f"{k} {v}" for k, v in how_counts.most_common()))
    meta = [f"{k} {v}" for k, v in sorted(totals.items()) if k.startswith("GL0") and " " not in k]
    limits = [f"{k.split(' ', 1)[1]} {v}" for k, v in sorted(totals.items()) if k.startswith("GL005 ")]
    print("meta findings: " + (", ".join(meta) or "none") + (f" (GL005 by limit: {', '.join(limits)})" if limits else ""))
    print(f"failing batches: {len(failures)}")
    for name, problems in failures:
        for problem in problems[:20]:
            print(f"  {name}: {problem}")


if __name__ == "__main__":
    sys.exit(main())
