"""The ``graphlint`` command. Imports stay lazy: ``graphlint --help`` and ``graphlint check``
never import torch (a pre-commit hook must not pay for, or even need, a torch install).

What fails the check, and which exit code that gives, is decided in one place for both halves:
:mod:`graphlint.gate`. ``--strict`` makes ``warning`` findings (slow but capturable, unused
suppressions) fail too, as issue 2 asks; ``--exit-zero`` exits 0 unless graphlint itself failed
on a file (GL002: the result is incomplete, and the fix is in graphlint or an ``--ignore GL002``).
"""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from pathlib import Path

from graphlint.gate import EXIT_CLEAN, EXIT_ERROR

EPILOG = """\
exit codes:
  0  no failing findings (or --exit-zero)
  1  at least one failing finding: severity error; with --strict also warning
     (a crash of the cross-file pass or the link is one: a GL002 naming the
     stage, beside every per-file finding)
  2  usage, configuration or internal error (bad option, unknown rule code,
     broken pyproject.toml, unreadable baseline, or graphlint crashed on one
     file (GL002, reported; the other files are still checked));
     with --strict also a check that is off (every rule ignored, every file excluded)
"""


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=34)


def build_parser() -> argparse.ArgumentParser:
    from graphlint import __version__

    parser = argparse.ArgumentParser(
        prog="graphlint",
        description="Find everything that stops a PyTorch decode step from being captured as a CUDA graph.",
        epilog=EPILOG,
        formatter_class=_formatter,
    )
    parser.add_argument("--version", action="version", version=f"graphlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_check(sub)
    rules = sub.add_parser("rules", help="list every rule", epilog=EPILOG, formatter_class=_formatter)
    rules.add_argument("--format", choices=("text", "json"), default="text")
    rules.add_argument("--config", metavar="FILE", help="pyproject.toml to read rule-packs from")
    rules.set_defaults(handler=cmd_rules)
    explain = sub.add_parser("explain", help="explain one rule: why it breaks capture, bad/good example, fix",
                             epilog=EPILOG, formatter_class=_formatter)
    explain.add_argument("rule", metavar="CODE|NAME")
    explain.add_argument("--config", metavar="FILE", help="pyproject.toml to read rule-packs from")
    explain.set_defaults(handler=cmd_explain)
    _register_dynamic(sub)
    return parser


def _add_check(sub) -> None:
    check = sub.add_parser(
        "check", help="statically check the decode path of PATHS", epilog=EPILOG, formatter_class=_formatter,
        description="Statically check everything the decode entries reach in PATHS (default: the "
        "configured paths, else .). Never imports torch.",
    )
    check.add_argument("paths", nargs="*", metavar="PATHS", help="files or directories; '-' reads one file from stdin")
    check.add_argument("--entry", action="append", default=[], metavar="FILE:QUALNAME",
                       help="decode entry point, e.g. dsv4/engine.py:EagerDecoder.step (repeatable)")
    check.add_argument("--select", action="append", default=None, metavar="RULES",
                       help="enable only these: ALL, codes, prefixes (GL1), names or categories (comma-separated, repeatable)")
    check.add_argument("--ignore", action="append", default=[], metavar="RULES", help="disable these (same syntax)")
    from graphlint.report import FORMATS

    check.add_argument("--format", "--output-format", choices=FORMATS, default="text",
                       help="text (default: each finding with its line and help), concise (one line each), "
                       "grouped (by file, each rule's help once), json, sarif, markdown, github")
    check.add_argument("--statistics", action="store_true",
                       help="print how many findings each rule has instead of the findings (text or json)")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="with PATHS '-': the path the source read from stdin is checked as (editors)")
    check.add_argument("--output", "-o", metavar="FILE", help="write the report here instead of stdout")
    check.add_argument("--baseline", metavar="FILE", help="report only findings not in this baseline")
    check.add_argument("--write-baseline", metavar="FILE", help="record the current findings as the baseline")
    check.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: the CPUs available)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write .graphlint_cache/")
    check.add_argument("--show-suppressed", action="store_true", help="also show suppressed findings, with their reason")
    check.add_argument("--show-chain", action="store_true", help="show the call chain from the decode entry")
    check.add_argument("--no-progress", action="store_true", help="no progress bar (it is only shown on a terminal)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings fail the check")
    check.add_argument("--strict", action="store_true",
                       help="warnings fail the check too, and a check that is off (nothing enabled or included) is exit 2")
    check.add_argument("--config", metavar="FILE", help="use this pyproject.toml instead of searching for one")
    check.add_argument("--decode-path", metavar="FILE",
                       help="a recorded run (graphlint record): its functions are the decode step, each in its role")
    check.add_argument("--show-entries", action="store_true",
                       help="also print the decode entries and why each was chosen (stderr unless --format text)")
    _add_budget(check)
    check.set_defaults(handler=cmd_check)
    entries = sub.add_parser(
        "entries", help="print the decode step graphlint found: entries, their context, and why",
        epilog=EPILOG, formatter_class=_formatter,
        description="List what graphlint takes for the decode step in PATHS: captured callables (graph), "
                    "the host code around each replay (host), eager decode paths (eager), with the evidence.")
    entries.add_argument("paths", nargs="*", metavar="PATHS", help="files or directories")
    entries.add_argument("--entry", action="append", default=[], metavar="FILE:QUALNAME",
                         help="decode entry point (repeatable); replaces configured entries")
    entries.add_argument("--decode-path", metavar="FILE", help="a recorded run (graphlint record) as the decode step")
    entries.add_argument("--format", choices=("text", "json"), default="text")
    entries.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: the CPUs available)")
    entries.add_argument("--no-cache", action="store_true", help="neither read nor write .graphlint_cache/")
    entries.add_argument("--config", metavar="FILE", help="use this pyproject.toml instead of searching for one")
    entries.set_defaults(handler=cmd_entries)


BUDGET_FLAGS = {  # flag -> (metavar, help); each is also a [tool.graphlint] key (docs/check.md)
    "target-version": ("VERSION", "Python grammar of the checked code, e.g. 3.12 (default: this Python, "
                                  "or requires-python's floor when newer)"),
    "max-depth": ("N", "do not analyse files nesting deeper (default 1500)"),
    "max-file-size": ("SIZE", "do not analyse bigger files (default 2MB)"),
    "file-timeout": ("SECONDS", "stop analysing one file after this many CPU seconds (default 60)"),
    "file-memory": ("SIZE", "stop analysing one file once its process holds this much memory (default 4GB)"),
}


def _add_budget(parser) -> None:
    group = parser.add_argument_group("grammar and per-file budget (an over-budget file is one GL005 finding; 0: no limit)")
    for flag, (metavar, text) in BUDGET_FLAGS.items():
        group.add_argument(f"--{flag}", metavar=metavar, help=text)


def _budget(args: argparse.Namespace) -> dict[str, str]:
    return {flag: value for flag in BUDGET_FLAGS if (value := getattr(args, flag.replace("-", "_"))) is not None}


def _register_dynamic(sub) -> None:
    """``inventory`` / ``capture-test`` / ``zoo`` come from the dynamic half, when it is installed."""
    import importlib.util

    if importlib.util.find_spec("graphlint.dynamic.commands") is None:
        return
    try:
        from graphlint.dynamic import commands, zoo_command

        commands.register(sub)
        zoo_command.register(sub)
    except Exception as exc:  # a broken dynamic half must not take `check` down with it
        for name in ("inventory", "capture-test", "record", "zoo"):
            if name not in sub.choices:
                broken = sub.add_parser(name, help=f"unavailable ({type(exc).__name__})")
                broken.set_defaults(handler=lambda args, exc=exc: _fail(f"the dynamic commands failed to load: {exc}"))


def _fail(message: str) -> int:
    print(f"graphlint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return EXIT_ERROR
    from graphlint.baseline import BaselineError
    from graphlint.config_file import ConfigError
    from graphlint.rules import RuleError

    try:
        return int(handler(args) or 0)
    except (ConfigError, RuleError, BaselineError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return _fail("interrupted")
    except BrokenPipeError:  # `graphlint rules | head`
        return EXIT_CLEAN if args.command != "check" else EXIT_ERROR
    except OSError as exc:  # e.g. --output or --write-baseline into a missing directory
        return _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
    except Exception:  # a bug in graphlint: say so, with the traceback, and exit 2 (never 1)
        import traceback

        traceback.print_exc()
        return _fail("internal error (the traceback above is a graphlint bug; please report it)")


def cmd_check(args: argparse.Namespace) -> int:
    from graphlint.baseline import filter_new, load_baseline, write_baseline
    from graphlint.check import run
    from graphlint.check_settings import resolve
    from graphlint.config_file import load_config
    from graphlint.gate import check_exit_code, failing_severities
    from graphlint.report import ReportContext, render, use_color

    stdin = _stdin_source(args)
    where = ([stdin[0]] if os.path.exists(stdin[0]) else [str(Path(stdin[0]).parent)]) if stdin else args.paths
    config = load_config(Path(args.config) if args.config else None, paths=where)
    settings = resolve(config, paths=[] if stdin else args.paths, entries=args.entry, select=args.select,
                       ignore=args.ignore, jobs=args.jobs, use_cache=not args.no_cache,
                       decode_path=args.decode_path, budget=_budget(args))
    if stdin:
        settings = _checking_stdin(settings, config, stdin[0])
    if args.statistics and args.format not in ("text", "concise", "grouped", "json"):
        return _fail(f"--statistics prints text or json, not --format {args.format}")
    from graphlint.progress import CheckProgress, wanted

    progress = CheckProgress() if wanted(args.no_progress) else None
    try:
        result = run(settings, progress.update if progress else None, stdin=stdin)
    finally:
        if progress:
            progress.close()
    findings = result.findings
    baseline = Path(args.baseline) if args.baseline else None
    if args.write_baseline:
        baseline = Path(args.write_baseline)
        count = write_baseline(baseline, findings)
        print(f"graphlint: wrote {count} finding(s) to baseline {baseline}", file=sys.stderr)
    baselined = 0
    if baseline is not None:
        findings, baselined = filter_new(findings, baseline, load_baseline(baseline))
    ctx = ReportContext(
        rules=settings.rules, files=result.files, lines=result.lines,
        suppressed=sum(f.suppressed for f in findings), baselined=baselined,
        failing=failing_severities(args.strict),
        show_chain=args.show_chain, color=use_color(args.output), warnings=result.warnings,
        decode_path=_decode_record(result, "entries" if args.format in ("json", "sarif") else "headline"),
        gate_off=result.gate_off,
    )
    shown = findings if args.show_suppressed else [f for f in findings if not f.suppressed]
    if args.statistics:
        from graphlint.report.grouped import render_statistics

        report = render_statistics(shown, ctx, "json" if args.format == "json" else "text")
    else:
        report = render(args.format, shown, ctx)
    if args.show_entries:
        from graphlint.report.entries import render_entries
        from graphlint.static.entry_lines import entry_rows

        listing = render_entries(entry_rows(result.entries))
        if args.format == "text" and not args.output:
            report = listing + "\n" + report
        else:
            sys.stderr.write(listing)
    for warning in result.warnings:
        print(f"graphlint: warning: {warning}", file=sys.stderr)
    if result.gate_off:  # the gate is never off without a word; --strict makes it an error
        level, tail = ("error", "") if args.strict else ("warning", " (--strict makes this an error)")
        print(f"graphlint: {level}: the check is off: {result.gate_off}{tail}", file=sys.stderr)
    write_report(report, args.output)
    if result.gate_off and args.strict:
        return EXIT_ERROR
    return check_exit_code(findings, ctx.failing, args.exit_zero)


def _decode_record(result, lines: str) -> dict | None:
    """The decode path as the reports' plain record, with the lines ``lines`` asks for (see
    :func:`graphlint.static.decode_record.decode_path_record`: each file read costs a parse)."""
    if result.decode_path is None:
        return None
    from graphlint.static.decode_record import decode_path_record

    return decode_path_record(result.decode_path, lines)


def _stdin_source(args: argparse.Namespace) -> tuple[str, bytes] | None:
    """``check -`` (or ``--stdin-filename`` with no PATHS): (the path it is checked as, the source).
    The path need not exist (an unsaved buffer); the configuration is found from its directory, and
    with configured ``paths`` the call graph still comes from them (the file replaces its copy on disk)."""
    if "-" not in args.paths and not (args.stdin_filename and not args.paths):
        if args.stdin_filename:
            raise _usage("--stdin-filename needs '-' as the only path (the source comes from stdin)")
        return None
    if args.paths not in ([], ["-"]):
        raise _usage("'-' (stdin) must be the only path")
    from graphlint.paths import display_path

    return display_path(Path(args.stdin_filename or "-")), sys.stdin.buffer.read()


def _checking_stdin(settings, config, path: str):
    import dataclasses

    configured = tuple(config.root / p for p in config.paths) if config.paths else ()
    return dataclasses.replace(settings, analysis_paths=(*configured, Path(path)), report_paths=(Path(path),))


def _usage(message: str) -> Exception:
    from graphlint.config_file import ConfigError

    return ConfigError(message)


def write_report(report: str, output: str | None) -> None:
    """File and directory names are carried as the bytes they are: a name that is not UTF-8 is
    decoded with surrogate escapes when read and written back as the same bytes here."""
    if output:
        Path(output).write_bytes(report.encode("utf-8", "surrogateescape"))
        return
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream: no bytes to carry
        sys.stdout.write(report.encode("ascii", "backslashreplace").decode("ascii"))
        return
    buffer.write(report.encode(sys.stdout.encoding or "utf-8", "graphlint-bytes"))
    buffer.flush()


def _carry_bytes(exc: UnicodeError):
    """Encoding error handler: a surrogate-escaped byte of a file name goes out as that byte;
    a character the terminal's encoding lacks becomes ``?``."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chunk = exc.object[exc.start:exc.end]
    if all("\udc80" <= c <= "\udcff" for c in chunk):
        return bytes(ord(c) - 0xDC00 for c in chunk), exc.end
    return "?" * len(chunk), exc.end


codecs.register_error("graphlint-bytes", _carry_bytes)


def cmd_entries(args: argparse.Namespace) -> int:
    from graphlint.check import run
    from graphlint.check_settings import resolve
    from graphlint.config_file import load_config
    from graphlint.report.entries import render_entries
    from graphlint.static.entry_lines import entry_rows

    config = load_config(Path(args.config) if args.config else None, paths=args.paths)
    settings = resolve(config, paths=args.paths, entries=args.entry, jobs=args.jobs, use_cache=not args.no_cache,
                       decode_path=args.decode_path)
    result = run(settings)
    for warning in result.warnings:
        print(f"graphlint: warning: {warning}", file=sys.stderr)
    if result.link_error:  # no call graph, so no decode path to list: nothing here is a result
        return _fail(result.link_error)
    write_report(render_entries(entry_rows(result.entries), args.format, _decode_record(result, "all")), None)
    return EXIT_CLEAN


def _load_rules(config_path: str | None):
    from graphlint.config_file import load_config
    from graphlint.rules import load_rules

    return load_rules(load_config(Path(config_path) if config_path else None).rule_packs)


def cmd_rules(args: argparse.Namespace) -> int:
    rules = _load_rules(args.config)
    if args.format == "json":
        import json

        from graphlint.report import rule_kind

        fields = ("code", "name", "category", "severity", "message", "why", "fix", "dynamic", "pack")
        payload = [{**{k: getattr(rule, k) for k in fields}, "kind": rule_kind(rule)} for rule in rules.values()]
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return EXIT_CLEAN
    from graphlint.report import use_color
    from graphlint.report.rules_table import render_rules

    width = os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    sys.stdout.write(render_rules(rules, terminal_width=width, color=use_color(None)))
    return EXIT_CLEAN


def cmd_explain(args: argparse.Namespace) -> int:
    import difflib

    rules = _load_rules(args.config)
    wanted = args.rule.strip()
    rule = rules.get(wanted.upper()) or next((r for r in rules.values() if r.answers_to(wanted)), None)
    if rule is None:
        names = [*rules, *(r.name for r in rules.values())]
        guess = difflib.get_close_matches(wanted, names, n=1)
        hint = f"; did you mean {guess[0]}?" if guess else "; `graphlint rules` lists them"
        return _fail(f"unknown rule {wanted!r}{hint}")
    from graphlint.report.explain import render_explain

    sys.stdout.write(render_explain(rule))
    return EXIT_CLEAN
