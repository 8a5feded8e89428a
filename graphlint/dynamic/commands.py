"""``graphlint inventory`` and ``graphlint capture-test``: parse the arguments, run the probes, and hand
the result to the gate (:mod:`graphlint.gate`) and the reports (:mod:`graphlint.report`): nothing is
rendered here.

Nothing here imports torch at import time (``graphlint --help`` and ``graphlint check`` load
this module); the handlers do. Decisions:

* ``inventory`` exits 1 when anything would break capture or replay (an error-severity
  finding in a capturable region, a failed or empty capture, a mismatch, a probe error),
  else 0; findings in deliberately eager regions are reported but do not fail it.
* ``capture-test`` on a GPU runs capture + replay (+ soak with ``--soak``), not the tracer:
  it is a gate, and the capture is the ground truth. Without CUDA it runs the tracer only,
  says that capture was skipped, and fails only on tracer errors in capturable regions;
  ``--require-gpu`` turns a missing GPU into exit 2 (graphlint could not do what was asked).
* The default target is the bundled engine (``dsv4.target:make_target``).
"""

from __future__ import annotations

import argparse
import os
import sys

from graphlint.gate import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

DEFAULT_SOAK_STEPS = 512


def _gpus(text: str) -> list[int]:
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gpus takes comma-separated GPU indices like 0,2, got {text!r}") from None
    if not gpus or any(g < 0 for g in gpus):
        raise argparse.ArgumentTypeError(f"--gpus takes comma-separated GPU indices like 0,2, got {text!r}")
    return list(dict.fromkeys(gpus))  # 0,0 would probe GPU 0 twice, in parallel, and report it twice


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of steps, got {text!r}")
    return int(text)


def _target_args(p: argparse.ArgumentParser) -> None:
    from graphlint.dynamic.target import DEFAULT_TARGET

    p.add_argument("--target", default=DEFAULT_TARGET, metavar="FILE.py:FACTORY",
                   help=f"factory(devices, **options) -> target (default: the bundled engine, {DEFAULT_TARGET})")
    p.add_argument("--decoder", help="shortcut for --option decoder=NAME (dsv4: eager, ab-graph, full-graph)")
    p.add_argument("--preset", help="shortcut for --option preset=NAME (dsv4: tiny, small)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="passed to the factory; VALUE is read as a Python literal when it is one (repeatable)")
    p.add_argument("--gpus", type=_gpus, metavar="LIST", help="GPU indices, e.g. 0,2 (default: every visible GPU)")
    p.add_argument("--placement", choices=("per-gpu", "span"), default="per-gpu",
                   help="per-gpu: the target on each GPU alone, GPUs in parallel (default); "
                   "span: one target over all selected GPUs (pipeline-parallel engines)")
    p.add_argument("--cpu", action="store_true", help="probe on the CPU even when CUDA is available (tracer only)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is only shown on a terminal)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report here instead of stdout")


INVENTORY_EPILOG = """\
exit codes:
  0  nothing breaks capture or replay (findings in eager regions and warnings are reported only)
  1  a capture failed or was empty, replay or soak differed from eager, a probe crashed, or an
     error-severity finding sits in a capturable region
  2  usage error: bad --target, --option, --gpus, or a broken rule pack
"""

CAPTURE_TEST_EPILOG = """\
exit codes:
  0  every capturable region captured and replayed like eager (without CUDA: the tracer found
     no error in a capturable region; capture itself was skipped and the output says so)
  1  a capture failed or was empty, a replay or soak mismatch, a probe crash, or (without CUDA)
     a tracer error in a capturable region
  2  usage error, or --require-gpu without a CUDA device
"""


def register(sub) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    inv = sub.add_parser("inventory", help="run the engine under every probe and write the inventory report",
                         epilog=INVENTORY_EPILOG, formatter_class=raw,
                         description="Run the target under the tracer, sync-debug mode, trial capture, "
                         "replay-vs-eager and a soak, on every selected GPU, and write the inventory.")
    _target_args(inv)
    inv.add_argument("--steps", type=_positive, default=DEFAULT_SOAK_STEPS, metavar="N",
                     help=f"soak length in decode steps (default {DEFAULT_SOAK_STEPS})")
    inv.add_argument("--no-soak", action="store_true", help="skip the soak probe")
    inv.add_argument("--probe", action="append", choices=("compile",), default=[],
                     help="optional probes: compile = what torch.compile(mode='reduce-overhead') does with each "
                     "capturable region (graph breaks, recompiles, cudagraph skips), beside graphlint's findings")
    inv.add_argument("--format", choices=("markdown", "json"), default="markdown")
    inv.add_argument("--record", metavar="FILE", help="also write the target's decode path (as graphlint record "
                     "does) for graphlint check --decode-path: stage() is host, capturable regions captured")
    inv.add_argument("--plots", choices=("svg", "png", "none"), default="svg",
                     help="with -o FILE.md: draw the soak (memory, |graph - eager|, time per region) next to it "
                     "and embed the pictures (needs matplotlib: the [plots] extra; default svg)")
    inv.set_defaults(handler=cmd_inventory)
    ct = sub.add_parser("capture-test", help="CI gate: capture + replay-vs-eager; non-zero exit on any failure",
                        epilog=CAPTURE_TEST_EPILOG, formatter_class=raw,
                        description="Capture every capturable region on every selected GPU, replay it against "
                        "eager execution, and fail on any capture failure or mismatch. Without CUDA: the tracer only.")
    _target_args(ct)
    ct.add_argument("--soak", action="store_true", help="also run the soak probe")
    ct.add_argument("--steps", type=_positive, default=DEFAULT_SOAK_STEPS, metavar="N",
                    help=f"soak length with --soak (default {DEFAULT_SOAK_STEPS})")
    ct.add_argument("--require-gpu", action="store_true", help="exit 2 instead of running the tracer when there is no CUDA device")
    ct.add_argument("--format", choices=("text", "json"), default="text")
    ct.set_defaults(handler=cmd_capture_test)
    from graphlint.dynamic import record_command

    record_command.register(sub)


def build_request(args, *, soak_steps: int, trace: bool = True, graph: bool = True):
    from graphlint.dynamic.run import Request
    from graphlint.dynamic.target import parse_option

    options = dict(parse_option(o) for o in args.option)
    for key in ("decoder", "preset"):
        if getattr(args, key):
            options[key] = getattr(args, key)
    command = "graphlint " + " ".join(sys.argv[1:]) if sys.argv and "graphlint" in sys.argv[0] else ""
    return Request(target=args.target, options=options, gpus=args.gpus, placement=args.placement,
                   soak_steps=soak_steps, trace=trace, graph=graph, command=command, cpu=args.cpu,
                   compile="compile" in getattr(args, "probe", []))


def _collect(req, args):
    """Run the probes (under torchrun: this rank's part). ``None`` on ranks other than 0."""
    from graphlint.dynamic.distributed import run_rank, under_torchrun
    from graphlint.dynamic.gpus import gpu_count, validate_gpus
    from graphlint.dynamic.run import planned_steps, run_inventory
    from graphlint.rules import runtime_rules

    runtime_rules()  # a broken rule pack is a configuration error (exit 2), not a probe error
    from graphlint.dynamic.factory_check import precheck

    precheck(req.target, req.options)  # typos from the factory's source: before torch, workers, building
    if under_torchrun():
        _preflight(req)
        return run_rank(req)
    count = 0 if req.cpu else gpu_count()
    cuda = count > 0
    problem = validate_gpus(req.gpus, count, req.cpu)
    if problem:
        raise ValueError(problem)
    preflight = lambda: _preflight(req)  # noqa: E731 - runs while the workers start
    from graphlint.progress import InventoryProgress, wanted

    if not wanted(args.no_progress):
        return _usable(run_inventory(req, preflight=preflight))
    devices = 1 if not cuda or req.placement == "span" else len(req.gpus if req.gpus is not None else range(count))
    with InventoryProgress(planned_steps(req, cuda, count), devices) as progress:
        return _usable(run_inventory(req, on_done=progress.done, on_step=progress.step, preflight=preflight))


def _preflight(req) -> None:
    """A bad --target or --option is exit 2 before any probe result counts."""
    from graphlint.dynamic.target import check_options, load_factory

    check_options(load_factory(req.target), req.options)


def _usable(inv):
    """The factory refused its options (a TargetError in a worker): a usage error, exit 2."""
    from graphlint.dynamic.target import TargetError

    refused = next((d.meta["target_error"] for d in inv.devices if d.meta.get("target_error")), "")
    if refused:
        raise TargetError(refused)
    return inv


def _write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def torch_problem(command: str, error: ImportError | None = None) -> str:
    """'' when torch is installed, else the one line that says so and which extra installs it: a
    static-only install (or pre-commit's environment) must not get a traceback or blame the target.
    It only looks torch up: importing it here (3 s on the H200) would delay the workers, whose start
    the parent's own import of torch is meant to overlap; a torch that is found but does not import
    comes back as ``error`` from that later import."""
    if error is None:
        import importlib.util

        try:
            if importlib.util.find_spec("torch") is not None:
                return ""
            error = ModuleNotFoundError("No module named 'torch'", name="torch")
        except (ImportError, ValueError) as exc:
            error = exc if isinstance(exc, ImportError) else ImportError(str(exc))
    from graphlint import DISTRIBUTION

    why = "is not installed" if getattr(error, "name", None) == "torch" else f"cannot be imported ({error})"
    return (f"graphlint {command} runs the engine and needs torch, which {why}: "
            f"pip install '{DISTRIBUTION}[engine]' (or torch>=2.11 itself)")


def _guarded(fn):
    def handler(args) -> int:
        problem = torch_problem(args.command)
        if problem:
            print(f"graphlint: error: {problem}", file=sys.stderr)
            return EXIT_ERROR
        from graphlint.dynamic.target import TargetError
        from graphlint.rules import RuleError

        try:
            return fn(args)
        except (TargetError, RuleError, ValueError) as exc:
            print(f"graphlint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        except ImportError as exc:  # torch itself (the target's imports are TargetErrors)
            if (getattr(exc, "name", None) or "").split(".")[0] != "torch":
                raise
            print(f"graphlint: error: {torch_problem(args.command, exc)}", file=sys.stderr)
            return EXIT_ERROR
    handler.__doc__ = fn.__doc__
    return handler


@_guarded
def cmd_inventory(args) -> int:
    from graphlint.crossref import cross_reference, prepare
    from graphlint.gate import capture_failures
    from graphlint.report.inventory import render_json, render_markdown, written_line

    import tempfile

    req = build_request(args, soak_steps=0 if args.no_soak else args.steps)
    records = tempfile.TemporaryDirectory(prefix="graphlint-record-") if args.record else None
    req.record_dir = records.name if records else ""
    # the target's package is summarised while the probes run (by the one process that reports)
    prepared = prepare(req.target if os.environ.get("RANK", "0") in ("", "0") else "")
    try:
        inv = _collect(req, args)
        if records is not None and inv is not None:
            _write_record(req, args.record, records.name)
        if inv is None:
            return EXIT_CLEAN
        entries = sorted({e for d in inv.devices for e in d.entries})
        sources = sorted({s for d in inv.devices for s in d.sources})
        modules = sorted({m for d in inv.devices for m in d.modules})
        ran = list(dict.fromkeys(s for d in inv.devices for s in d.ran))
        xref = cross_reference(inv.findings(), entries, sources, modules, target=req.target, prepared=prepared,
                               ran=ran)
    finally:
        prepared.close()
        if records is not None:
            records.cleanup()
    if args.format == "json":
        _write(render_json(inv, xref), args.output)
    else:
        _write(render_markdown(inv, xref, _pictures(inv, args.output, args.plots)), args.output)
    failed = capture_failures(inv)
    if args.output:  # the report went to a file: say on the terminal what it holds
        print(written_line(args.output, inv, failed), file=sys.stderr)
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _write_record(req, output: str, directory: str) -> None:
    """Merge the workers' records (the capturing workers' when there are any, else the tracer's)
    into ``output``, with paths relative to its directory."""
    import shlex
    from pathlib import Path

    from graphlint.decode_path_file import RecordedDecodePath, RecordedFunction, RecordedStep, load, merge, write
    from graphlint.dynamic.project import target_roots
    from graphlint.dynamic.record_command import portable_command, relative_path

    files = sorted(Path(directory).glob("*.json"))
    chosen = [f for f in files if f.stem.endswith("-graph")] or files
    record = merge([load(f) for f in chosen])
    cwd = os.getcwd()
    base = os.path.realpath(os.path.dirname(os.path.join(cwd, output)) or cwd)
    roots = [*target_roots(req.target)[0], cwd]

    def spelled(path: str) -> str:
        return relative_path(os.path.join(cwd, path), base, roots)

    def named(text: str) -> str:
        path, _, qual = text.rpartition(":")
        return f"{spelled(path)}:{qual}"

    write(RecordedDecodePath([RecordedFunction(spelled(f.path), f.function, f.roles) for f in record.functions],
                     [RecordedStep(named(s.loop), named(s.step), s.kind, s.calls) for s in record.steps],
                     portable_command(shlex.split(req.command) if req.command else
                                      ["graphlint", "inventory", "--target", req.target], cwd)), output)
    print(f"graphlint: wrote the decode path of {len(record.functions)} functions to {output}", file=sys.stderr)


def _pictures(inv, output: str | None, fmt: str):
    """The soak's pictures, drawn next to the markdown report (none without a report file)."""
    from pathlib import Path

    from graphlint.report.plots import Pictures, drawable, write_pictures

    if fmt == "none" or not drawable(inv):
        return None
    if not output:
        return Pictures([], "Pictures of the soak are drawn next to the report with -o FILE.md.")
    return write_pictures(inv, Path(output), fmt)


@_guarded
def cmd_capture_test(args) -> int:
    from graphlint.dynamic.gpus import gpu_count
    from graphlint.gate import capture_failures

    cuda = not args.cpu and gpu_count() > 0
    if not cuda and args.require_gpu:
        print("graphlint: error: capture-test --require-gpu: no CUDA device is available", file=sys.stderr)
        return EXIT_ERROR
    req = build_request(args, soak_steps=args.steps if args.soak else 0, trace=not cuda, graph=cuda)
    inv = _collect(req, args)
    if inv is None:
        return EXIT_CLEAN
    failed = capture_failures(inv)
    from graphlint.report import use_color
    from graphlint.report.capture_test import render_capture_test, render_capture_test_json

    if args.format == "json":
        _write(render_capture_test_json(inv, failed, cuda), args.output)
    else:
        _write(render_capture_test(inv, failed, cuda, color=use_color(args.output)), args.output)
    return EXIT_FINDINGS if failed else EXIT_CLEAN

