"""Materialise every engine of the real-code benchmark at its pinned version.

The repository stores only what the benchmark needs to be reproduced — clone URLs, commits,
paths, labels and figures — never the engines' code (it is not ours to copy). This script puts
each engine of ``bench/realcode/engines.toml`` into ``CHECKOUT_DIR/<name>/``:

* ``repo`` + ``commit``: ``git clone`` then ``git checkout --detach COMMIT``. When a local bare
  mirror ``MIRROR/<owner>+<name>/repo`` exists (``--mirror``, default ``/work/.mirror``, where the
  development machine keeps fetched snapshots) it is cloned instead of the URL, so the script runs
  without network there; the commit is checked either way.
* ``pypi`` + ``sha256``: ``pip download --no-deps`` of that one wheel, its sha256 checked, then
  unzipped (for engines whose git history is too large to fetch; a wheel on PyPI never changes).

Re-running is cheap: an engine already at its pinned version is left alone.

    python bench/realcode_fetch.py /tmp/realcode              # every engine
    python bench/realcode_fetch.py /tmp/realcode nano-vllm    # just one
    python bench/realcode_fetch.py /tmp/holdout --manifest bench/realcode/holdout.toml   # the held-out set

``bench/realcode/holdout.toml`` (same schema) lists the engines kept aside as an independent check of
an analyzer tuned on ``engines.toml``: measured, never tuned on (bench/realcode/README.md).
``bench/realcode/fresh.toml`` (the same, plus ``sample``/``sample_seed`` for sampled labels and
``[[engines.<name>.plant]]`` tables for planted hazards, read by the scorer) holds the engines of
issue 19's independent measurement; ``bench/realcode/fresh2.toml`` (same schema) its second set, measured
once the first is tuned on.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "realcode" / "engines.toml"
HOLDOUT = HERE / "realcode" / "holdout.toml"  # held-out engines: measured, never tuned on
FRESH = HERE / "realcode" / "fresh.toml"  # issue 19's fresh engines: labelled before the rebuild, never tuned on
FRESH2 = HERE / "realcode" / "fresh2.toml"  # issue 19's second fresh set: the independent check once fresh.toml is tuned on
FRESH3 = HERE / "realcode" / "fresh3.toml"  # the third fresh set: the independent check once fresh2.toml is tuned on (sixth session)
DEFAULT_MIRROR = Path("/work/.mirror")
PYPI_MARKER = ".realcode-wheel-sha256"  # written into a wheel checkout: what it was made from


@dataclass(frozen=True)
class Engine:
    """One engine of the manifest: where its code comes from and what graphlint checks in it."""

    name: str
    description: str
    paths: tuple[str, ...]  # given to `graphlint check`, relative to the engine root
    captures: bool  # the engine already captures its decode step as a CUDA graph
    labels: Path
    repo: str = ""  # git clone URL ...
    commit: str = ""  # ... and the pinned commit
    pypi: str = ""  # or a pip requirement pinned to one version ...
    sha256: str = ""  # ... and its wheel's sha256
    sample: int = 0  # >0: label every error and this many other findings, drawn with sample_seed
    sample_seed: int = 0
    plants: tuple[dict, ...] = ()  # [[engines.<name>.plant]] tables, read by realcode_plant.py

    @property
    def version(self) -> str:
        """What the table in docs/benchmarks.md prints as the engine's pinned version."""
        return self.commit[:12] if self.commit else self.pypi

    def mirror_dir(self, mirror: Path) -> Path:
        owner_name = self.repo.rstrip("/").removesuffix(".git").split("/")[-2:]
        return mirror / "+".join(owner_name) / "repo"


class ManifestError(Exception):
    pass


def load_manifest(path: Path = MANIFEST) -> dict[str, Engine]:
    """Read and validate the manifest; a mistake names the engine and the key."""
    try:
        table = tomllib.loads(path.read_text()).get("engines", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    engines = {}
    for name, spec in table.items():
        where = f"{path} [engines.{name}]"
        if not isinstance(spec, dict):
            raise ManifestError(f"{where} must be a table")
        known = {"description", "paths", "captures", "labels", "repo", "commit", "pypi", "sha256",
                 "sample", "sample_seed", "plant"}
        unknown = set(spec) - known
        if unknown:
            raise ManifestError(f"{where}: unknown keys {sorted(unknown)}")
        git, wheel = bool(spec.get("repo")), bool(spec.get("pypi"))
        if git == wheel:
            raise ManifestError(f"{where}: give exactly one of repo (+ commit) or pypi (+ sha256)")
        if git and len(spec.get("commit", "")) != 40:
            raise ManifestError(f"{where}: commit must be a full 40-digit sha")
        if wheel and len(spec.get("sha256", "")) != 64:
            raise ManifestError(f"{where}: sha256 must be the wheel's 64-digit sha256")
        if not spec.get("paths"):
            raise ManifestError(f"{where}: paths is required (what graphlint checks)")
        for key in ("sample", "sample_seed"):
            if not isinstance(spec.get(key, 0), int) or spec.get(key, 0) < 0:
                raise ManifestError(f"{where}: {key} must be a non-negative integer")
        if not isinstance(spec.get("plant", []), list):
            raise ManifestError(f"{where}: plant must be an array of tables ([[engines.{name}.plant]])")
        engines[name] = Engine(
            name=name,
            description=spec.get("description", ""),
            paths=tuple(spec["paths"]),
            captures=bool(spec.get("captures", False)),
            labels=path.parent / spec.get("labels", f"{name}.labels.tsv"),
            repo=spec.get("repo", ""),
            commit=spec.get("commit", ""),
            pypi=spec.get("pypi", ""),
            sha256=spec.get("sha256", ""),
            sample=spec.get("sample", 0),
            sample_seed=spec.get("sample_seed", 0),
            plants=tuple(spec.get("plant", [])),
        )
    return engines


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def materialise_git(engine: Engine, target: Path, mirror: Path) -> str:
    source = engine.mirror_dir(mirror)
    origin = str(source) if source.is_dir() else engine.repo
    if not (target / ".git").exists():
        _git("clone", "--quiet", "--no-checkout", origin, str(target))
    elif _git("rev-parse", "HEAD", cwd=target) == engine.commit:
        return "up to date"
    try:
        _git("checkout", "--quiet", "--detach", engine.commit, cwd=target)
    except RuntimeError:  # a shallow or older clone: fetch the commit itself, then retry
        _git("fetch", "--quiet", origin, engine.commit, cwd=target)
        _git("checkout", "--quiet", "--detach", engine.commit, cwd=target)
    head = _git("rev-parse", "HEAD", cwd=target)
    if head != engine.commit:
        raise RuntimeError(f"{target} is at {head}, not {engine.commit}")
    return f"checked out from {origin}"


def materialise_wheel(engine: Engine, target: Path) -> str:
    marker = target / PYPI_MARKER
    if marker.is_file() and marker.read_text().strip() == engine.sha256:
        return "up to date"
    if target.exists() and any(target.iterdir()):
        raise RuntimeError(f"{target} exists and was not made from {engine.pypi}; remove it")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "-d", tmp, engine.pypi]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise RuntimeError(f"pip download {engine.pypi}: {done.stderr.strip() or 'no wheel'}")
        digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
        if digest != engine.sha256:
            raise RuntimeError(f"{wheels[0].name} has sha256 {digest}, the manifest pins {engine.sha256}")
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(target)
    marker.write_text(engine.sha256 + "\n")
    return f"unpacked {engine.pypi}"


def materialise(engine: Engine, checkout_dir: Path, mirror: Path = DEFAULT_MIRROR) -> str:
    """Put ``engine`` at its pinned version into ``checkout_dir/<name>``; say what was done."""
    target = checkout_dir / engine.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if engine.repo:
        return materialise_git(engine, target, mirror)
    return materialise_wheel(engine, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout_dir", type=Path)
    parser.add_argument("engines", nargs="*", help="engine names (default: all in the manifest)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR,
                        help="directory of bare mirrors <owner>+<name>/repo used instead of the URL")
    args = parser.parse_args(argv)
    try:
        engines = load_manifest(args.manifest)
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unknown = [n for n in args.engines if n not in engines]
    if unknown:
        print(f"error: not in {args.manifest}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    failed = 0
    for name in args.engines or engines:
        try:
            print(f"{name:20} {materialise(engines[name], args.checkout_dir, args.mirror)}")
        except (RuntimeError, OSError) as exc:
            print(f"{name:20} FAILED: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
