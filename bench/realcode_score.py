"""Score ``graphlint check`` on real engines against hand-made labels: precision and recall.

Synthetic fixtures prove a rule works; only code we did not write proves graphlint is useful.
For each engine of ``bench/realcode/engines.toml`` (materialised by ``realcode_fetch.py``) this
runs ``graphlint check --format json --no-cache`` with **default settings** — from the engine's
root, with ``--config`` pointing at an empty ``[tool.graphlint]`` table so no project config (ours
or the engine's) applies — and matches the findings to the engine's labels.

Labels (``bench/realcode/<name>.labels.tsv``, one row per line of code, reviewable in a diff):
``path  line  category  verdict  kind  reason``. ``line`` is ``N`` or ``N-M`` (a statement over
several lines); ``verdict`` is ``true`` (a real per-token hazard or cost for CUDA-graph decode)
or ``false`` (a false alarm); ``kind`` is where the label came from — ``finding`` (graphlint
reported it when it was labelled), ``hazard`` (a true hazard found by reading the decode path:
there for recall) or ``clean`` (read and judged safe, labelled ahead because a rule could
plausibly flag it: the by-design read-back, pinned staging, prefill-only code). ``kind`` is
provenance only; scoring looks at what graphlint reports now.

Matching and counting (decided here, documented in bench/realcode/README.md):

* A finding matches a label on the same path whose line span holds the finding's line; when
  several do, the one of the finding's category wins (category is the tie-breaker), else the
  first. A match of another category is listed as a mismatch to review, but still counts.
* Each finding is one prediction: two findings on one line (two rules, or one rule twice) both
  count in precision, each with the label it matched. A label is one hazard: it is *hit* when at
  least one finding matches it, however many do.
* Only ``error`` and ``warning`` findings are scored. ``info`` never fails a check and claims
  nothing is wrong (the issue allows the by-design read-back of sampled ids as info), so it is
  neither a false positive nor a hit. Meta findings (GL0xx: parse errors, crashes) are listed.
* precision (errors) = true error findings / error findings; precision (all) = true scored
  findings / scored findings; recall = true labels hit / true labels.
* A scored finding that matches no label is UNLABELLED: figures with unlabelled findings are
  not honest yet, so the exit status is 1 unless ``--allow-unlabelled``.
* Sampled labels (an engine with ``sample = N`` and ``sample_seed = S`` in its manifest, as
  ``fresh.toml`` has): every error must be labelled, and of the warnings only a seeded sample of N
  (``random.Random(S).sample`` of their sorted ``path:line:column:rule`` keys). An unlabelled
  warning outside the sample is counted (``unsampled``), not blocking; precision (all) is then
  over the labelled findings only, and the report says how many were left out.

    python bench/realcode_score.py /tmp/realcode                      # every engine
    python bench/realcode_score.py /tmp/realcode bench/realcode/nano-vllm.labels.tsv
    python bench/realcode_score.py /tmp/realcode --markdown           # the table in docs/benchmarks.md
    python bench/realcode_score.py /tmp/realcode --unlabelled-tsv     # rows to label, verdict '?'
    python bench/realcode_score.py /tmp/holdout --manifest bench/realcode/holdout.toml   # held-out set
    python bench/realcode_score.py /tmp/fresh --manifest bench/realcode/fresh.toml       # fresh set (sampled)
    python bench/realcode_score.py /tmp/fresh --manifest bench/realcode/fresh.toml --plants   # planted hazards

``--plants`` applies each ``[[engines.<name>.plant]]`` of the manifest to a copy of its engine and
reports whether graphlint finds it at its line (``bench/realcode_plant.py``) instead of scoring labels.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realcode_fetch import MANIFEST, Engine, ManifestError, load_manifest  # noqa: E402
from realcode_plant import PlantError, check_plant, parse_plants, print_results  # noqa: E402

CATEGORIES = ("host-sync", "allocation", "data-dependent", "cross-device", "capture-hygiene")
KINDS = ("finding", "hazard", "clean")
COLUMNS = ("path", "line", "category", "verdict", "kind", "reason")
SCORED = ("error", "warning")


class LabelError(Exception):
    pass


@dataclass(frozen=True)
class Label:
    path: str
    first: int
    last: int
    category: str
    verdict: bool
    kind: str
    reason: str
    where: str  # labels-file:line, for messages

    def covers(self, path: str, line: int) -> bool:
        return path == self.path and self.first <= line <= self.last

    def show(self) -> str:
        span = str(self.first) if self.first == self.last else f"{self.first}-{self.last}"
        return f"{self.path}:{span} {self.category} -- {self.reason}"


def read_labels(path: Path) -> list[Label]:
    """Parse a labels file; every mistake names the file and line."""
    labels, seen = [], set()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cells = raw.split("\t")
        where = f"{path}:{number}"
        if tuple(c.strip() for c in cells) == COLUMNS:
            continue
        if len(cells) != len(COLUMNS):
            raise LabelError(f"{where}: expected {len(COLUMNS)} tab-separated columns {COLUMNS}, got {len(cells)}")
        file, span, category, verdict, kind, reason = (c.strip() for c in cells)
        try:
            first, _, last = span.partition("-")
            first, last = int(first), int(last or first)
        except ValueError:
            raise LabelError(f"{where}: line must be N or N-M, got {span!r}") from None
        if not 0 < first <= last:
            raise LabelError(f"{where}: bad line span {span!r}")
        if category not in CATEGORIES:
            raise LabelError(f"{where}: category must be one of {CATEGORIES}, got {category!r}")
        if verdict not in ("true", "false"):
            raise LabelError(f"{where}: verdict must be true or false, got {verdict!r}")
        if kind not in KINDS:
            raise LabelError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
        if (kind, verdict) in (("hazard", "false"), ("clean", "true")):
            raise LabelError(f"{where}: kind {kind} means verdict {'true' if kind == 'hazard' else 'false'}")
        if not reason:
            raise LabelError(f"{where}: every label needs a reason")
        if (file, first, category) in seen:
            raise LabelError(f"{where}: {file}:{first} {category} is labelled twice")
        seen.add((file, first, category))
        labels.append(Label(file, first, last, category, verdict == "true", kind, reason, where))
    return labels


def check_lines_exist(labels: list[Label], root: Path) -> None:
    """A label on a file or line the checkout does not have is a typo or a stale pin: refuse it."""
    lengths: dict[str, int] = {}
    for label in labels:
        if label.path not in lengths:
            try:
                lengths[label.path] = len((root / label.path).read_bytes().splitlines())
            except OSError:
                raise LabelError(f"{label.where}: {label.path} is not in {root}") from None
        if label.last > lengths[label.path]:
            raise LabelError(f"{label.where}: {label.path} has only {lengths[label.path]} lines")


def run_graphlint(root: Path, paths: tuple[str, ...]) -> list[dict]:
    """graphlint's findings on ``paths`` under ``root``, default settings, no cache.

    It runs as ``sys.executable -m graphlint``: the graphlint installed next to the interpreter
    running this script (the worktree's venv), never whichever ``graphlint`` is first on PATH.
    """
    if importlib.util.find_spec("graphlint") is None:
        raise RuntimeError(f"graphlint is not installed for {sys.executable}: activate its venv")
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "pyproject.toml"
        empty.write_text("[tool.graphlint]\n")
        cmd = [sys.executable, "-m", "graphlint", "check", "--format", "json", "--no-cache",
               "--no-progress", "--exit-zero", "--config", str(empty), *paths]
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    try:
        return json.loads(done.stdout)["findings"]
    except (json.JSONDecodeError, KeyError):
        raise RuntimeError(f"graphlint failed in {root} (exit {done.returncode}): {done.stderr.strip()[-2000:]}") from None


def match(finding: dict, labels: list[Label]) -> Label | None:
    """The label a finding counts against: same path and line, category breaking ties."""
    covering = [lab for lab in labels if lab.covers(finding["path"], finding["line"])]
    same = [lab for lab in covering if lab.category == finding["category"]]
    return (same or covering or [None])[0]


@dataclass
class Score:
    """Counts for one engine (or, summed, for all): everything the report prints."""

    name: str
    version: str = ""
    captures: bool = False
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    true_errors: int = 0
    true_scored: int = 0
    hazards: int = 0  # true labels
    hits: int = 0  # true labels matched by a scored finding
    unsampled: int = 0  # unlabelled warnings outside an engine's seeded sample (not blocking)
    unlabelled: list[dict] = field(default_factory=list)
    false_errors: list[tuple[dict, Label]] = field(default_factory=list)
    false_warnings: list[tuple[dict, Label]] = field(default_factory=list)
    mismatches: list[tuple[dict, Label]] = field(default_factory=list)
    missed: list[Label] = field(default_factory=list)
    meta: list[dict] = field(default_factory=list)

    @property
    def findings(self) -> int:
        return self.errors + self.warnings

    def add(self, other: Score) -> None:
        for name in ("errors", "warnings", "infos", "true_errors", "true_scored", "hazards", "hits", "unsampled"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("unlabelled", "false_errors", "false_warnings", "mismatches", "missed", "meta"):
            getattr(self, name).extend(getattr(other, name))


def sample_key(finding: dict) -> str:
    return f"{finding['path']}:{finding['line']}:{finding.get('column', 0)}:{finding['rule']}"


def warning_sample(findings: list[dict], size: int, seed: int) -> set[str]:
    """The warnings that must be labelled: a seeded sample of ``size``, reproducible from the findings alone."""
    pool = sorted({sample_key(f) for f in findings if f["severity"] == "warning" and f["category"] != "meta"})
    return set(random.Random(seed).sample(pool, min(size, len(pool))))


def score(name: str, findings: list[dict], labels: list[Label], sample: int = 0, seed: int = 0) -> Score:
    """Match every finding to a label and count; the arithmetic is the module docstring's.

    ``sample`` > 0: unlabelled warnings outside ``warning_sample(findings, sample, seed)`` are counted
    in ``unsampled`` instead of blocking, and left out of precision (all).
    """
    result, hit = Score(name), set()
    in_sample = warning_sample(findings, sample, seed) if sample else None
    for finding in findings:
        severity = finding["severity"]
        if finding["category"] == "meta":
            result.meta.append(finding)
            continue
        if severity not in SCORED:
            result.infos += 1
            continue
        result.errors += severity == "error"
        result.warnings += severity == "warning"
        label = match(finding, labels)
        if label is None:
            if in_sample is not None and severity == "warning" and sample_key(finding) not in in_sample:
                result.unsampled += 1
            else:
                result.unlabelled.append(finding)
            continue
        if label.category != finding["category"]:
            result.mismatches.append((finding, label))
        if label.verdict:
            hit.add(label)
            result.true_scored += 1
            result.true_errors += severity == "error"
        else:
            (result.false_errors if severity == "error" else result.false_warnings).append((finding, label))
    true_labels = [lab for lab in labels if lab.verdict]
    result.hazards = len(true_labels)
    result.hits = len(hit)
    result.missed = [lab for lab in true_labels if lab not in hit]
    return result


def ratio(part: int, whole: int, unlabelled: int = 0) -> str:
    """``part/whole = 0.xx``; ``-`` when nothing to divide; ``?`` while findings are unlabelled."""
    if unlabelled:
        return "?"
    return f"{part}/{whole} = {part / whole:.2f}" if whole else "-"


def score_engine(engine: Engine, checkout_dir: Path) -> Score:
    root = checkout_dir / engine.name
    if not root.is_dir():
        raise RuntimeError(f"{root} does not exist: run bench/realcode_fetch.py {checkout_dir} {engine.name}")
    labels = read_labels(engine.labels) if engine.labels.is_file() else []
    check_lines_exist(labels, root)
    result = score(engine.name, run_graphlint(root, engine.paths), labels, engine.sample, engine.sample_seed)
    result.version, result.captures = engine.version, engine.captures
    return result


def where(finding: dict) -> str:
    return f"{finding['path']}:{finding['line']} {finding['rule']} {finding['category']} {finding['severity']}"


def print_text(scores: list[Score], total: Score) -> None:
    for s in [*scores, total]:
        tag = " (captures)" if s.captures else ""
        print(f"== {s.name}{' @ ' + s.version if s.version else ''}{tag}: {s.findings} findings "
              f"({s.errors} errors, {s.warnings} warnings; {s.infos} info not scored)")
        u = len(s.unlabelled)
        print(f"   precision (errors) {ratio(s.true_errors, s.errors, u)}   precision (all) "
              f"{precision_all(s)}   recall {ratio(s.hits, s.hazards, u)}")
        if s is total:
            break
        if s.captures:
            print(f"   error false positives on an engine that captures (target 0): {len(s.false_errors)}")
        sections = [
            ("false errors", [f"{where(f)} -- {lab.reason}" for f, lab in s.false_errors]),
            ("false warnings", [f"{where(f)} -- {lab.reason}" for f, lab in s.false_warnings]),
            ("missed hazards", [lab.show() for lab in s.missed]),
            ("category differs from its label", [f"{where(f)} vs {lab.where} {lab.category}" for f, lab in s.mismatches]),
            ("meta findings (not scored)", [f"{where(f)} {f['message']}" for f in s.meta]),
            ("UNLABELLED (label these before quoting a figure)", [f"{where(f)} | {f['line_text'].strip()}" for f in s.unlabelled]),
        ]
        for title, rows in sections:
            if rows:
                print(f"   {title}:")
                print("\n".join(f"     {row}" for row in rows))
    captured = [s for s in scores if s.captures]
    print(f"error false positives on engines that capture (target 0): "
          f"{sum(len(s.false_errors) for s in captured)}")


def precision_all(s: Score) -> str:
    """precision (all); with sampled labels it is over the labelled findings and says how many were not."""
    figure = ratio(s.true_scored, s.findings - s.unsampled, len(s.unlabelled))
    return f"{figure} (+{s.unsampled} unlabelled outside the sample)" if s.unsampled else figure


def print_markdown(scores: list[Score], total: Score) -> None:
    print("| engine | commit | captures | findings | precision (errors) | precision (all) | recall |")
    print("|---|---|---|---:|---:|---:|---:|")
    for s in [*scores, total]:
        u = len(s.unlabelled)
        name = f"**{s.name}**" if s is total else s.name
        version = f"`{s.version}`" if s.version else ""
        captures = ("yes" if s.captures else "no") if s is not total else ""
        print(f"| {name} | {version} | {captures} | {s.findings} ({s.errors} errors) | "
              f"{ratio(s.true_errors, s.errors, u)} | {precision_all(s)} | "
              f"{ratio(s.hits, s.hazards, u)} |")


def print_unlabelled_tsv(scores: list[Score]) -> None:
    """Rows ready to paste into a labels file: verdict and reason are left for a human."""
    for s in scores:
        for f in s.unlabelled:
            print(f"# {s.name}: {f['rule']} {f['severity']} [{f['function']}] {f['line_text'].strip()[:100]}")
            print("\t".join((f["path"], str(f["line"]), f["category"], "?", "finding", "?")))


def run_plants(engines: list[Engine], checkout_dir: Path, markdown: bool) -> int:
    """Every plant of ``engines``, each measured alone on a planted copy; a miss is a figure, not a failure."""
    plants = [(engine, plant) for engine in engines for plant in parse_plants(engine.name, engine.plants)]
    if not plants:
        raise ManifestError("no [[engines.<name>.plant]] tables in the manifest for these engines")
    results = []
    for engine, plant in plants:
        root = checkout_dir / engine.name
        if not root.is_dir():
            raise RuntimeError(f"{root} does not exist: run bench/realcode_fetch.py {checkout_dir} {engine.name}")
        results.append(check_plant(plant, root, engine.paths, run_graphlint))
    print_results(results, markdown)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout_dir", type=Path, help="where realcode_fetch.py put the engines")
    parser.add_argument("labels", nargs="*", type=Path, help="labels files to score (default: every engine)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--markdown", action="store_true", help="print only the table docs/benchmarks.md shows")
    parser.add_argument("--unlabelled-tsv", action="store_true", help="print unlabelled findings as label rows")
    parser.add_argument("--allow-unlabelled", action="store_true", help="exit 0 even with unlabelled findings")
    parser.add_argument("--plants", action="store_true", help="check the manifest's planted hazards instead")
    args = parser.parse_args(argv)
    try:
        engines = load_manifest(args.manifest)
        by_labels = {e.labels.resolve(): e for e in engines.values()}
        chosen = [by_labels.get(p.resolve()) for p in args.labels] or list(engines.values())
        if None in chosen:
            unknown = [str(p) for p in args.labels if p.resolve() not in by_labels]
            raise ManifestError(f"no engine in {args.manifest} has these labels: {', '.join(unknown)}")
        if args.plants:
            return run_plants(chosen, args.checkout_dir, args.markdown)
        scores = [score_engine(engine, args.checkout_dir) for engine in chosen]
    except (ManifestError, LabelError, PlantError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    total = Score("overall")
    for s in scores:
        total.add(s)
    if args.unlabelled_tsv:
        print_unlabelled_tsv(scores)
    elif args.markdown:
        print_markdown(scores, total)
    else:
        print_text(scores, total)
    if total.unlabelled and not args.allow_unlabelled:
        print(f"{len(total.unlabelled)} unlabelled findings: label them (or pass --allow-unlabelled)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
