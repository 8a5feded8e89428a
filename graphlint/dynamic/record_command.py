"""``graphlint record [-o decode-path.json] [--source DIR ...] -- CMD [ARGS...]``.

Runs a Python command in this process, as ``coverage run`` does, and writes what ran each decode
step (:mod:`graphlint.decode_path_file`). CMD is a script (``bench/generate.py``, also spelled
``python bench/generate.py``), ``-m module``, ``-c code``, or the name of a console entry point of
an installed distribution (``vllm-bench``), resolved through ``importlib.metadata``. Decisions:

* **The command's exit status is ours** (0 for a clean end, ``sys.exit``'s code, 1 for an
  exception, whose traceback is printed, 130 for Ctrl-C), and the record is written whatever
  happened: a benchmark that crashes at step 90 has recorded 89 steps. A usage error (no command,
  a CMD that is none of the three) is exit 2 and writes nothing.
* **What counts is ``--source``** (repeatable; default: the working directory): files under a
  source directory, except installed packages below it (``site-packages``, ``dist-packages``: a
  ``.venv`` inside the checkout), hidden directories and graphlint itself. To record a library's
  functions (transformers' modeling code), name its directory.
* **Paths** in the file are relative to the output file's directory; an installed package's file
  relative to its ``site-packages`` (``transformers/models/...``, whatever the environment), and
  any other file outside that directory relative to the parent of its ``--source`` directory.
* Subprocesses the command starts (``torchrun``, a multiprocessing pool) are not recorded: run
  ``graphlint record`` in the process that decodes.

No torch needed: the graph hooks (:mod:`graphlint.dynamic.graph_hooks`) attach when the command
imports torch, and a command without torch is recorded too.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from graphlint.gate import EXIT_ERROR

DEFAULT_OUTPUT = "decode-path.json"
_EXCLUDED_PARTS = {"site-packages", "dist-packages", "__pycache__"}

EPILOG = """\
exit status: the command's own (0, its sys.exit code, 1 when it raises); 2 when graphlint
cannot run it. The record is written in every case the command itself ends.

examples:
  graphlint record -- python bench/generate.py --steps 32
  graphlint record -o decode-path.json -- -m mypkg.serve --smoke-test
  graphlint record --source . --source .venv/lib/python3.12/site-packages/transformers -- bench/hf.py
"""


def register(sub) -> None:
    rec = sub.add_parser("record", help="run a Python command and record what runs each decode step",
                         epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Run CMD in this process (a script, -m module or a console entry point) "
                         "and write the project's functions by role -- captured in a CUDA graph, host step "
                         "between replays, eager decode step -- for `graphlint check --decode-path`.")
    rec.add_argument("-o", "--output", default=DEFAULT_OUTPUT, metavar="FILE",
                     help=f"where to write the decode path (default: {DEFAULT_OUTPUT})")
    rec.add_argument("--source", action="append", default=[], metavar="DIR",
                     help="the project's code: only functions in files under DIR count (repeatable; default: .)")
    rec.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]")
    rec.set_defaults(handler=cmd_record)


def cmd_record(args) -> int:
    from graphlint import decode_path_file
    from graphlint.dynamic.graph_hooks import GraphHooks
    from graphlint.dynamic.recorder import Recorder

    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if argv and _is_python(argv[0]):
        argv = argv[1:]
    if not argv or argv == ["-m"]:
        return _usage("graphlint record needs a command: graphlint record -- python script.py [ARGS]")
    cwd = os.getcwd()
    roots = [os.path.realpath(os.path.join(cwd, s)) for s in (args.source or ["."])]
    missing = [s for s, r in zip(args.source, roots) if not os.path.isdir(r)]
    if missing:
        return _usage(f"--source {missing[0]} is not a directory")
    output = Path(cwd, args.output)
    if not output.parent.is_dir():
        return _usage(f"-o {args.output}: directory {output.parent} does not exist")
    try:
        run = _runner(argv)
    except LookupError as exc:
        return _usage(str(exc))
    recorder = Recorder(Sources(roots, cwd), detect_steps=True)
    hooks = GraphHooks(recorder)
    started = time.perf_counter()
    code = 0
    try:
        hooks.install()
        recorder.start()
        code = _exit_code(run)
    finally:
        recorder.stop()
        hooks.uninstall()
        elapsed = time.perf_counter() - started
        record = recorder.result(Namer(str(output.parent), roots, cwd), _command(argv, cwd))
        decode_path_file.write(record, output)
        roles = {}
        for f in record.functions:
            for role, _ in f.roles:
                roles[role] = roles.get(role, 0) + 1
        counted = ", ".join(f"{n} {r}" for r, n in roles.items()) or "no function in a decode role"
        print(f"graphlint: recorded {len(record.functions)} functions ({counted}; {recorder.captures} captures, "
              f"{recorder.replays} replays, {len(record.steps)} decode loops) in {elapsed:.1f} s: wrote "
              f"{args.output}", file=sys.stderr)
    return code


def _usage(message: str) -> int:
    print(f"graphlint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _is_python(word: str) -> bool:
    name = os.path.basename(word)
    return name in ("python", "python3") or (name.startswith("python3.") and name[8:].replace(".", "").isdigit()) \
        or os.path.abspath(word) == os.path.abspath(sys.executable)


def _runner(argv: list[str]):
    """A callable that runs the command the way ``python`` would (raises LookupError for a CMD that
    is neither a script, ``-m module`` nor a console entry point)."""
    import runpy

    if argv[0] == "-m":
        module, rest = argv[1], argv[2:]

        def run_module():
            sys.argv = [module, *rest]
            sys.path[0:1] = [os.getcwd()]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        return run_module
    if argv[0] == "-c" and len(argv) > 1:
        source, rest = argv[1], argv[2:]

        def run_string():
            sys.argv = ["-c", *rest]
            sys.path[0:1] = [os.getcwd()]
            exec(compile(source, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return run_string
    if argv[0].startswith("-"):
        raise LookupError(f"graphlint record runs a script, -m module, -c code or an entry point, not python "
                          f"{argv[0]}")
    path = Path(argv[0])
    if path.is_file():
        def run_script():
            sys.argv = list(argv)
            sys.path[0:1] = [str(path.resolve().parent)]
            runpy.run_path(str(path), run_name="__main__")
        return run_script
    from importlib.metadata import entry_points

    found = list(entry_points(group="console_scripts", name=argv[0]))
    if not found:
        raise LookupError(f"{argv[0]} is not a file, and no installed distribution has a console entry point "
                          f"of that name (use `-- -m module` for a module)")

    def run_entry_point():
        sys.argv = list(argv)
        return found[0].load()()
    return run_entry_point


def _exit_code(run) -> int:
    """What ``python CMD`` would exit with (``sys.argv`` and ``sys.path`` are given back after)."""
    argv, path = list(sys.argv), list(sys.path)
    try:
        result = run()
    except SystemExit as exc:
        return _status(exc.code)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", file=sys.stderr)
        return 130
    except BaseException:  # noqa: BLE001 - the command's own error: print it as python would, exit 1
        import traceback

        kind, value, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, _runpy_file()):
            tb = tb.tb_next
        traceback.print_exception(kind, value, tb)
        return 1
    finally:
        sys.argv[:], sys.path[:] = argv, path
    return _status(result)  # an entry point's return value is its exit status (console scripts sys.exit it)


def _status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):  # sys.exit(True) is 1, as in python
        return int(code) & 0xFF
    print(code, file=sys.stderr)
    return 1


def _runpy_file() -> str:
    import runpy

    return runpy.__file__


class Sources:
    """``is_source`` of the recorder: under a ``--source`` directory, not in an installed package,
    a hidden directory or graphlint."""

    def __init__(self, roots: list[str], cwd: str) -> None:
        from graphlint.dynamic.project import GRAPHLINT_DIR

        self.roots, self.cwd, self.graphlint = roots, cwd, str(GRAPHLINT_DIR)

    def __call__(self, filename: str) -> bool:
        absolute = os.path.normpath(os.path.join(self.cwd, filename))
        for spelled in dict.fromkeys((absolute, os.path.realpath(absolute))):
            if spelled == self.graphlint or spelled.startswith(self.graphlint + os.sep):
                return False
            for root in self.roots:
                if spelled.startswith(root.rstrip(os.sep) + os.sep):
                    parts = Path(spelled[len(root):]).parts[:-1]
                    if not any(p in _EXCLUDED_PARTS or (p.startswith(".") and p not in (".", os.sep)) for p in parts):
                        return True
        return False


class Namer:
    """(path as the file spells it, qualname) of a code object; None for lambdas and comprehensions."""

    def __init__(self, base: str, roots: list[str], cwd: str) -> None:
        self.base, self.roots, self.cwd = os.path.realpath(base), roots, cwd

    def __call__(self, code) -> tuple[str, str] | None:
        from graphlint.dynamic.recorder import qualname

        qual = qualname(code)
        if "<" in qual and qual != "<module>":
            return None
        return relative_path(os.path.join(self.cwd, code.co_filename), self.base, self.roots), qual


def relative_path(filename: str, base: str, roots: list[str]) -> str:
    """POSIX, never absolute: an installed package's file relative to its ``site-packages`` (the
    same on every machine, wherever the environment lives); else relative to ``base`` when under
    it, or when ``base`` lies in the same source root (``../../dsv4/engine.py`` from
    ``reports/run/``); else to the parent of the root holding it; else its last two components."""
    parts = Path(os.path.normpath(filename)).parts
    installed = [i for i, part in enumerate(parts) if part in ("site-packages", "dist-packages")]
    if installed and installed[-1] < len(parts) - 1:
        return Path(*parts[installed[-1] + 1:]).as_posix()
    for spelled in dict.fromkeys((os.path.normpath(filename), os.path.realpath(filename))):
        if spelled.startswith(base.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(spelled, base)).as_posix()
    real = os.path.realpath(filename)
    for root in sorted(roots, key=len, reverse=True):
        if real.startswith(root.rstrip(os.sep) + os.sep):
            if base == root or base.startswith(root.rstrip(os.sep) + os.sep):  # the file sits deeper in the project
                return Path(os.path.relpath(real, base)).as_posix()
            return Path(os.path.relpath(real, os.path.dirname(root))).as_posix()
    return Path(*Path(real).parts[-2:]).as_posix()


def _command(argv: list[str], cwd: str) -> str:
    return portable_command((["python"] if argv[0].startswith("-") or argv[0].endswith(".py") else []) + argv, cwd)


def portable_command(words: list[str], cwd: str) -> str:
    """The command as a user would type it again: absolute paths under the working directory made
    relative, others cut to their name (the file holds no absolute path)."""
    out = []
    for word in words:
        key, eq, value = word.partition("=") if word.startswith("-") else ("", "", word)
        if os.path.isabs(value):
            value = os.path.relpath(value, cwd) if value.startswith(cwd.rstrip(os.sep) + os.sep) \
                else os.path.basename(value)
        out.append(key + eq + value)
    return shlex.join(out)
