"""``graphlint zoo``: the command. Runs :func:`graphlint.dynamic.zoo.run_zoo`, turns the runs into rows
(:mod:`graphlint.zoo`) and writes the report (:mod:`graphlint.report.zoo`).

Decisions: the report goes to ``-o`` (default ``$OUT/zoo-<gpu>-<date>.md`` when ``$OUT`` is set,
as on the lent GPU machines, else ``reports/zoo-<gpu>-<date>.md``) and the JSON beside it; the exit
code is 0 once the report is written, whatever the architectures did (the blockers are the
report's content, not a failure of the command), 2 on a usage error. ``--dtype`` defaults to
``bfloat16``: what a deployment runs, and what the kernels a zoo is about are written for (on
CUDA, ``torch.nn.functional.grouped_mm`` takes a fast path only for bf16; in float32 it falls
back to a loop that copies its offsets to the host, which no capture survives).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import tempfile
import threading
import time

from graphlint.gate import EXIT_CLEAN, EXIT_ERROR

EPILOG = """\
exit codes:
  0  the report was written (its rows say which architectures capture, and what blocks the others)
  2  usage error (an unknown architecture, a bad option), or no transformers/torch
"""


def register(sub) -> None:
    zoo = sub.add_parser("zoo", help="the inventory of every transformers causal-LM architecture, from tiny configs",
                         epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Run `graphlint inventory` on graphlint.targets.hf for every causal-LM "
                         "architecture of the installed transformers (or --arch), several at a time, and write one "
                         "report: per architecture its cache, capture, replay, s/token, first blocker and the static "
                         "half's verdict on it.")
    zoo.add_argument("--arch", default="all", metavar="all|A,B,...", help="architectures (model types), default all")
    zoo.add_argument("--list", action="store_true", help="print the architectures and their tiny configs, run nothing")
    zoo.add_argument("--steps", type=int, default=64, metavar="N", help="soak length in decode steps (default 64)")
    zoo.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="architectures at once (default: by CPUs)")
    zoo.add_argument("--timeout", type=float, default=300.0, metavar="S", help="seconds per architecture (default 300)")
    zoo.add_argument("--budget", type=float, default=0.0, metavar="S",
                     help="seconds for the whole zoo: nothing starts after it, what runs is stopped (default: none)")
    zoo.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32", "float16"))
    zoo.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                     help="more target options for every architecture: batch=4, cache=static, max_len=512 (repeatable)")
    zoo.add_argument("--gpus", metavar="LIST", help="GPU indices to spread architectures over (default 0)")
    zoo.add_argument("--cpu", action="store_true", help="the tracer only, on the CPU")
    zoo.add_argument("--output", "-o", metavar="FILE.md", help="the markdown report (the JSON goes beside it)")
    zoo.add_argument("--drafts", metavar="DIR", help="write a draft upstream issue per distinct blocker into DIR")
    zoo.add_argument("--repro-index", default="reports/zoo/repro/index.json", metavar="FILE",
                     help="hand-written reproducers, by rule, file and function (default %(default)s)")
    zoo.add_argument("--from", dest="from_json", metavar="ZOO.json", help="re-render a zoo's JSON instead of running")
    zoo.add_argument("--no-cross", action="store_true", help="skip the static cross-reference")
    zoo.add_argument("--no-progress", action="store_true", help="no progress bar (only shown on a terminal)")
    zoo.set_defaults(handler=cmd_zoo)


def cmd_zoo(args) -> int:
    from graphlint.dynamic.commands import torch_problem

    problem = torch_problem("zoo")
    if problem:
        return _fail(problem)
    try:
        import transformers
    except ImportError as exc:
        return _fail(f"graphlint zoo needs transformers ({exc}): pip install 'cuda-graphlint[hf]'")
    from graphlint.dynamic.target import TargetError, parse_option
    from graphlint.targets.hf_config import causal_lm_architectures

    known = causal_lm_architectures()
    archs = known if args.arch == "all" else [a.strip() for a in args.arch.split(",") if a.strip()]
    unknown = [a for a in archs if a not in known]
    if args.from_json is None and (unknown or not archs):
        return _fail(f"--arch: not a causal-LM architecture of transformers {transformers.__version__}: "
                     f"{', '.join(unknown) or '(none given)'}; `graphlint zoo --list` lists them")
    if args.list:
        return _list(archs)
    try:
        options = {"dtype": args.dtype, **dict(parse_option(o) for o in args.option)}
        gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    except (TargetError, ValueError) as exc:
        return _fail(str(exc))
    if args.steps < 1 or args.jobs < 0 or args.timeout <= 0:
        return _fail("--steps and --timeout must be positive, --jobs 0 or more")
    return _run(args, archs, options, gpus, transformers.__version__)


def _fail(message: str) -> int:
    print(f"graphlint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _list(archs: list[str]) -> int:
    from graphlint.targets.hf_config import describe, tiny_config

    for arch in archs:
        try:
            print(f"{arch}\t{describe(tiny_config(arch))}")
        except Exception as exc:  # noqa: BLE001 - a config that does not shrink is listed as such
            print(f"{arch}\tno tiny config: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}")
    return EXIT_CLEAN


def _run(args, archs: list[str], options: dict, gpus, tf_version: str) -> int:
    import json

    from graphlint.dynamic.gpus import gpu_count
    from graphlint.dynamic.zoo import ZooRequest, default_jobs, run_zoo

    started = time.monotonic()
    cpu = args.cpu or gpu_count() == 0
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as fh:
            data = json.load(fh)
        moved: dict[str, str] = {}  # this machine's library root -> the run's
        runs, meta = localize(data["runs"], moved), data["zoo"]
        cpu, options = bool(meta.get("cpu", cpu)), meta.get("options", options)  # the run's, not this machine's
        if meta.get("transformers") != tf_version and not args.no_cross:
            print(f"graphlint: warning: the zoo ran transformers {meta.get('transformers')}, this is {tf_version}: "
                  "its lines are not these files' lines, so its own cross-reference is kept", file=sys.stderr)
            args.no_cross = True
        if args.no_cross and data.get("rows"):  # keep the run's own cross-reference (another transformers here)
            from graphlint.zoo import Row

            kept = [Row.from_dict(r) for r in data["rows"]]
            args.no_cross = not data.get("scores")
            return _report(args, runs, kept, meta, data.get("scores"))
        with _Rows(options, cpu, not args.no_cross) as rows:
            ordered = rows.of(runs)
        from graphlint.zoo import Row  # the report names the run's paths, not this machine's

        ordered = [Row.from_dict(_unlocalize(r.to_dict(), moved)) for r in ordered]
        return _report(args, data["runs"], ordered, meta)
    jobs = args.jobs or default_jobs(cpu)
    command = "graphlint " + " ".join(sys.argv[1:]) if sys.argv and "graphlint" in sys.argv[0] else ""
    req = ZooRequest(archs, steps=args.steps, jobs=jobs, timeout=args.timeout, budget=args.budget, cpu=cpu,
                     options=options, gpus=gpus, command=command)
    with _Rows(options, cpu, not args.no_cross) as rows, _Progress(len(archs), args.no_progress) as progress:
        def event(arch: str, what: str, payload: dict) -> None:
            if what == "done":
                rows.add(payload)  # cross-referenced in a thread while the others still run
            progress.event(arch, what, payload)

        runs = [r.to_dict() for r in run_zoo(req, event)]
        probed = time.monotonic() - started
        ordered = rows.of(runs)
    meta = _meta(runs, command, jobs, options, tf_version, time.monotonic() - started, cpu)
    meta["cross_reference_tail"] = round(meta["seconds"] - probed, 1)  # what the static half added at the end
    return _report(args, runs, ordered, meta)


class _Rows:
    """Rows built (and cross-referenced) one architecture at a time, in one thread, as runs finish;
    summaries cached across architectures in one directory."""

    def __init__(self, options: dict, cpu: bool, cross: bool) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.options, self.cpu, self.cross = options, cpu, cross
        self.cache = tempfile.TemporaryDirectory(prefix="graphlint-zoo-xref-")
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="graphlint-zoo-xref")
        self.futures: dict[str, object] = {}

    def __enter__(self) -> "_Rows":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True)
        self.cache.cleanup()

    def add(self, run: dict) -> None:
        from graphlint.zoo import build_rows

        self.futures[run["arch"]] = self.pool.submit(build_rows, [run], self.options, self.cpu, cross=self.cross,
                                                     cache_dir=self.cache.name)

    def of(self, runs: list[dict]) -> list:
        for run in runs:
            if run["arch"] not in self.futures:
                self.add(run)
        return [self.futures[run["arch"]].result()[0] for run in runs]


# a whole string that is a path (no blanks before the file: "AttributeError: ... (at /x/site-packages/y.py:3)" is a
# message, left as it is)
_LIBRARY_PATH = re.compile(r"^(?P<site>(?:[A-Za-z]:)?[^\s:]*?[/\\](?:site|dist)-packages[/\\])(?P<file>[^:]+?\.py)(?P<rest>(:.*)?)$")


def localize(data, moved: dict[str, str] | None = None):
    """A zoo's JSON from another machine, its installed-library paths (``/usr/lib/.../site-packages/
    transformers/masking_utils.py``, also inside ``path:Qual.name`` entries) moved to where this
    interpreter has those libraries, so ``--from`` can cross-reference a GPU run here."""
    import importlib.util

    if isinstance(data, dict):
        return {k: localize(v, moved) for k, v in data.items()}
    if isinstance(data, list):
        return [localize(v, moved) for v in data]
    if not isinstance(data, str):
        return data
    match = _LIBRARY_PATH.match(data)
    if match is None or os.path.exists(match["site"] + match["file"]):
        return data
    top = re.split(r"[/\\]", match["file"])[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return data
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        return data
    local = os.path.join(os.path.dirname(locations[0]), match["file"])
    if not os.path.exists(local):
        return data
    if moved is not None:
        moved[os.path.join(os.path.dirname(locations[0]), "")] = match["site"]
    return local + match["rest"]


def _unlocalize(data, moved: dict[str, str]):
    """:func:`localize` undone in rendered rows (paths inside reasons too): a report re-rendered here
    names the files as the run saw them, and its JSON carries the run's own records."""
    if isinstance(data, dict):
        return {k: _unlocalize(v, moved) for k, v in data.items()}
    if isinstance(data, list):
        return [_unlocalize(v, moved) for v in data]
    if isinstance(data, str):
        for local, remote in moved.items():
            data = data.replace(local, remote)
    return data


def _meta(runs: list[dict], command: str, jobs: int, options: dict, tf_version: str, seconds: float, cpu: bool) -> dict:
    import torch

    gpu = next((d.get("meta", {}).get("gpu") for r in runs for d in
                ((r.get("result") or {}).get("inventory") or {}).get("devices", []) if d.get("meta", {}).get("gpu")), "")
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "command": command,
            "device": gpu or "CPU (tracer only)", "torch": torch.__version__, "transformers": tf_version, "jobs": jobs,
            "options": options, "seconds": seconds, "cpu": cpu, "architectures": len(runs)}


def default_output(meta: dict) -> str:
    device = meta.get("device", "")
    slug = "cpu" if meta.get("cpu") or not device else device.split()[-1].lower().replace("/", "-")
    day = datetime.date.today().isoformat()
    folder = os.environ.get("OUT") or "reports"
    return os.path.join(folder, f"zoo-{slug}-{day}.md")


def _report(args, runs: list[dict], rows: list, meta: dict, scores: list | None = None) -> int:
    from graphlint.report.zoo import load_repros, render_json, render_markdown
    from graphlint.zoo import score

    if scores is None:
        scores = [score(rows), score(rows, ("error", "warning"))] if not args.no_cross else []
    output = args.output or default_output(meta)
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    repros = load_repros(args.repro_index)
    with open(output, "w", encoding="utf-8") as fh:
        fh.write(render_markdown(meta, rows, scores, repros))
    json_path = os.path.splitext(output)[0] + ".json"
    with open(json_path, "w", encoding="utf-8") as fh:
        fh.write(render_json(meta, rows, scores, runs))
    if args.drafts:
        _drafts(args.drafts, rows, meta, repros)
    done = sum(r.status == "done" for r in rows)
    print(f"graphlint: wrote {output} and {json_path}: {len(rows)} architecture(s), {done} ran to a verdict, "
          f"{meta.get('seconds', 0):.0f} s", file=sys.stderr)
    return EXIT_CLEAN


def _drafts(folder: str, rows, meta: dict, repros: dict) -> None:
    from graphlint.report.zoo import draft_name, render_draft, repro_key
    from graphlint.rules import load_rules
    from graphlint.zoo import distinct_blockers

    os.makedirs(folder, exist_ok=True)
    rules = load_rules()
    for number, (key, members) in enumerate(distinct_blockers(rows).items(), 1):
        b = members[0].blocker
        if not (b.rule and b.line):
            continue
        with open(os.path.join(folder, draft_name(number, key)), "w", encoding="utf-8") as fh:
            fh.write(render_draft(key, members, rules, meta, b.line_text, repros.get(repro_key(b.rule, b.path, b.function))))


class _Progress:
    """A line per architecture as it finishes (stderr, always), and on a terminal a bar over them with
    one line per running architecture (its probe and step)."""

    def __init__(self, total: int, no_progress: bool) -> None:
        from graphlint.progress import wanted

        self.total, self.done, self.bar = total, 0, None
        # Workers report from their own threads: one lock and one write per line, or two lines
        # printed at once interleave ("...in 6 sgraphlint zoo [2/3]..." under --jobs 2).
        self.lock = threading.Lock()
        if wanted(no_progress):
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                transient=True)
            self.overall = self.bar.add_task("graphlint zoo", total=total)
            self.tasks: dict[str, int] = {}

    def __enter__(self) -> "_Progress":
        if self.bar:
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar:
            self.bar.stop()

    def event(self, arch: str, what: str, payload: dict) -> None:
        with self.lock:
            self._event(arch, what, payload)

    def _event(self, arch: str, what: str, payload: dict) -> None:
        if what == "done":
            self.done += 1
            line = _done_line(self.done, self.total, payload)
            if self.bar:
                if arch in self.tasks:
                    self.bar.remove_task(self.tasks.pop(arch))
                self.bar.update(self.overall, completed=self.done)
                self.bar.console.print(line, highlight=False)
            else:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
        elif self.bar and what == "start":
            self.tasks[arch] = self.bar.add_task(f"  {arch}: starting", total=None)
        elif self.bar and what == "step" and arch in self.tasks:
            self.bar.update(self.tasks[arch], description=f"  {arch}: {payload['probe']}",
                            completed=payload["step"], total=payload["total"])


def _done_line(done: int, total: int, payload: dict) -> str:
    from graphlint.zoo import build_rows

    width = len(str(total))
    head = f"graphlint zoo [{done:>{width}}/{total}] {payload['arch']}"
    if payload["status"] != "done":
        return f"{head}: {payload['status']}: {payload['detail'][:200]}"
    row = build_rows([payload], {}, False, cross=False)[0]
    blocker = (f" ({' '.join(p for p in (row.blocker.rule or row.blocker.kind, row.blocker.where) if p)}: "
               f"{row.blocker.reason[:140]})" if row.blocker else "")
    return f"{head}: {row.verdict}{blocker} in {payload['seconds']:.0f} s"
