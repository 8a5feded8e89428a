"""How fast is ``graphlint check`` on a large real corpus, against a bare libcst parse?

Prints, in one run: files, lines, a bare single-process ``libcst.parse_module`` pass, graphlint
cold (empty temporary cache, default ``--jobs``), graphlint warm (same cache, nothing changed),
files/s for each, and the ratios issues 2 and 8 set targets for: cold/bare <= 1.0 (issue 8: graph-aware
hotness must not make the check slower; issue 2 asked for 1.5), warm/cold <= 0.08.
The default corpus is the installed torch package's ``.py`` files, found without importing
torch; ``--limit`` takes the first N in sorted order, so runs are comparable.

    python bench/static_bench.py --limit 600
    python bench/static_bench.py --corpus path/to/code --profile   # where does cold time go?
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def torch_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass --corpus DIR")
    return Path(list(spec.submodule_search_locations)[0])


def corpus_files(root: Path, limit: int) -> list[Path]:
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    return files[:limit] if limit else files


def bare_parse(files: list[Path]) -> tuple[float, int]:
    import libcst

    sources = [p.read_bytes() for p in files]
    start = time.perf_counter()
    for source in sources:
        try:
            libcst.parse_module(source)
        except Exception:  # a file libcst rejects costs what it costs; graphlint reports it
            pass
    return time.perf_counter() - start, sum(s.count(b"\n") for s in sources)


def graphlint_run(files: list[Path], cache_dir: Path, jobs: int | None):
    from graphlint.check import run
    from graphlint.check_settings import resolve
    from graphlint.config_file import Config

    settings = resolve(Config(path=None, root=Path.cwd()), jobs=jobs)
    settings = replace(settings, analysis_paths=tuple(files), cache_dir=cache_dir)
    start = time.perf_counter()
    result = run(settings)
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="directory to lint (default: the installed torch package)")
    parser.add_argument("--limit", type=int, default=600, help="first N files in sorted order (0: all)")
    parser.add_argument("--jobs", type=int, default=None, help="graphlint workers (default: CPU count)")
    parser.add_argument("--profile", action="store_true", help="also profile a single-process cold run")
    args = parser.parse_args(argv)
    from graphlint.check_settings import default_jobs

    root = args.corpus or torch_dir()
    files = corpus_files(root, args.limit)
    if not files:
        sys.exit(f"no .py files under {root}")
    bare, lines = bare_parse(files)
    with tempfile.TemporaryDirectory(prefix="graphlint-bench-") as tmp:
        cold, result = graphlint_run(files, Path(tmp) / "cache", args.jobs)
        warm, warm_result = graphlint_run(files, Path(tmp) / "cache", args.jobs)
    if [f.sort_key() for f in result.findings] != [f.sort_key() for f in warm_result.findings]:
        sys.exit("warm run disagrees with cold run: the cache is broken")
    jobs = args.jobs or default_jobs()
    rows = [
        ("bare libcst.parse_module (1 process)", bare),
        (f"graphlint cold (jobs={jobs}, empty cache)", cold),
        (f"graphlint warm (jobs={jobs}, nothing changed)", warm),
    ]
    print(f"corpus: {root} -- {len(files)} files, {lines} lines, {len(result.findings)} findings, "
          f"{sum(f.rule == 'GL000' for f in result.findings)} GL000, {warm_result.cache_hits} warm cache hits")
    print()
    print("| run | seconds | files/s |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {len(files) / seconds:.0f} |")
    print()
    print(f"cold / bare = {cold / bare:.2f}  (target <= 1.0)")
    print(f"warm / cold = {warm / cold:.3f} (target <= 0.08)")
    if args.profile:
        profile(files)
    return 0


def profile(files: list[Path]) -> None:
    import cProfile
    import pstats

    with tempfile.TemporaryDirectory(prefix="graphlint-profile-") as tmp:
        profiler = cProfile.Profile()
        profiler.enable()
        graphlint_run(files, Path(tmp) / "cache", jobs=1)
        profiler.disable()
    print("\nsingle-process cold run, top 20 by cumulative time:")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(20)


if __name__ == "__main__":
    raise SystemExit(main())
