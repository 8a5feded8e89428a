"""The decode-path file: what a real run executed each step, by role (``graphlint record`` writes
it, ``graphlint check --decode-path`` reads it).

One JSON object, written so that it reviews well in a pull request: one function per line,
sorted by path and qualname, paths relative to the file's own directory (POSIX), no source code,
no absolute path anywhere, and nothing that changes from run to run of the same command (no
date, no timing)::

    {
      "version": 1,
      "command": "python bench/hf_generate.py --steps 16",
      "functions": [
        {"path": "dsv4/engine.py", "function": "EagerDecoder.step", "roles": {"eager": 15}},
        {"path": "dsv4/engine.py", "function": "timed_generate", "roles": {"loop": 1}}
      ],
      "steps": [
        {"loop": "dsv4/engine.py:timed_generate", "step": "dsv4/engine.py:EagerDecoder.step", "kind": "eager", "calls": 15}
      ]
    }

Roles (a function has every role it ran in, each with its number of calls):

- ``captured``: ran while a CUDA graph was being captured (or is a ``torch.compile``'d CUDA-graph
  function): graph code, checked strictly;
- ``host``: ran between two replays of the same graph: the host step, checked leniently;
- ``eager``: ran inside an eager decode step (see :mod:`graphlint.dynamic.eager_steps`);
- ``loop``: ran in an eager decode loop between two of its steps (sampling, stopping,
  bookkeeping: the loop's host logic), and the function that owns the loop.

``steps`` names each decode loop found: the function that loops, the function it calls once per
token, whether those calls replay graphs (``host``) or run eagerly (``eager``), and how often.

A file that is not one of these (broken JSON, an unknown role, a newer version) raises
:class:`DecodePathError`; the check reports it as a configuration error. Paths outside the
file's directory (an installed library given as ``--source``) are written relative to their
source root's parent (``transformers/models/llama/modeling_llama.py``); the check matches them
by suffix. This module is plain Python: the check reads it without torch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

VERSION = 1
ROLES = ("captured", "host", "eager", "loop")
#: the analyzer's context for each role (docs/check.md, "How the analyzer decides what is hot")
CONTEXT_OF = {"captured": "graph", "host": "host", "eager": "eager", "loop": "eager"}
STEP_KINDS = ("eager", "host")


class DecodePathError(ValueError):
    """The file cannot be used as a decode path; the message says which file and why."""


@dataclass(frozen=True)
class RecordedFunction:
    path: str  # as written: relative to the file's directory (or to a source root's parent)
    function: str  # qualname, nested functions without ``<locals>``
    roles: tuple[tuple[str, int], ...]  # (role, calls), in ROLES order
    line: int = 0  # its line in the file (0 when unknown), where a stale-record note points


@dataclass(frozen=True)
class RecordedStep:
    loop: str  # "path:qualname" of the function that loops
    step: str  # "path:qualname" of the function it calls once per token
    kind: str  # "eager" | "host"
    calls: int


@dataclass
class RecordedDecodePath:
    functions: list[RecordedFunction] = field(default_factory=list)
    steps: list[RecordedStep] = field(default_factory=list)
    command: str = ""
    source: str = ""  # the file it was read from (display path), for messages


def dumps(record: RecordedDecodePath) -> str:
    """The file's text: stable, sorted, one function per line."""
    functions = sorted(record.functions, key=lambda f: (f.path, f.function))
    steps = sorted(record.steps, key=lambda s: (s.loop, s.step, s.kind))
    lines = ["{", f'  "version": {VERSION},', f'  "command": {json.dumps(record.command)},', '  "functions": [']
    rows = [json.dumps({"path": f.path, "function": f.function, "roles": dict(f.roles)}) for f in functions]
    lines += [f"    {row}," for row in rows[:-1]] + [f"    {row}" for row in rows[-1:]]
    lines += ["  ],", '  "steps": [']
    rows = [json.dumps({"loop": s.loop, "step": s.step, "kind": s.kind, "calls": s.calls}) for s in steps]
    lines += [f"    {row}," for row in rows[:-1]] + [f"    {row}" for row in rows[-1:]]
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def write(record: RecordedDecodePath, path: str | os.PathLike) -> None:
    """Atomically: a reader (or a crash half-way) never sees half a file."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(dumps(record), encoding="utf-8")
    os.replace(tmp, target)


def load(path: str | os.PathLike, shown: str = "") -> RecordedDecodePath:
    shown = shown or os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DecodePathError(f"decode path {shown}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DecodePathError(f"decode path {shown}: not UTF-8 text") from None
    return loads(text, shown)


def loads(text: str, shown: str = "<decode path>") -> RecordedDecodePath:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DecodePathError(f"decode path {shown}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or "functions" not in data:
        raise DecodePathError(f"decode path {shown}: not a decode-path file (no \"functions\"); "
                              "`graphlint record` writes one")
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise DecodePathError(f"decode path {shown}: \"version\" must be a positive integer, got {version!r}")
    if version > VERSION:
        raise DecodePathError(f"decode path {shown}: version {version} was written by a newer graphlint "
                              f"(this one reads version {VERSION}); upgrade graphlint")
    lines = _lines(text)
    functions = [_function(item, shown, lines) for item in _list(data, "functions", shown)]
    steps = [_step(item, shown) for item in _list(data, "steps", shown, required=False)]
    command = data.get("command", "")
    return RecordedDecodePath(functions, steps, command if isinstance(command, str) else "", shown)


def _list(data: dict, key: str, shown: str, required: bool = True) -> list:
    value = data.get(key, [] if not required else None)
    if not isinstance(value, list):
        raise DecodePathError(f"decode path {shown}: \"{key}\" must be a list")
    return value


def _function(item, shown: str, lines: dict[tuple[str, str], int]) -> RecordedFunction:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not isinstance(item.get("function"), str):
        raise DecodePathError(f"decode path {shown}: every function needs a \"path\" and a \"function\" string, "
                              f"got {str(item)[:80]}")
    roles = item.get("roles")
    if not isinstance(roles, dict) or not roles:
        raise DecodePathError(f"decode path {shown}: {item['path']}:{item['function']} has no \"roles\"")
    for role, calls in roles.items():
        if role not in ROLES:
            raise DecodePathError(f"decode path {shown}: {item['path']}:{item['function']} has an unknown role "
                                  f"{role!r} (roles: {', '.join(ROLES)})")
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
            raise DecodePathError(f"decode path {shown}: {item['path']}:{item['function']} role {role}: "
                                  f"calls must be a non-negative integer, got {calls!r}")
    if Path(item["path"]).is_absolute() or item["path"].startswith("/"):
        raise DecodePathError(f"decode path {shown}: {item['path']} is absolute (paths are relative to the file)")
    ordered = tuple((r, roles[r]) for r in ROLES if r in roles)
    return RecordedFunction(item["path"], item["function"], ordered, lines.get((item["path"], item["function"]), 0))


def _step(item, shown: str) -> RecordedStep:
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("loop", "step", "kind")) \
            or item["kind"] not in STEP_KINDS or not isinstance(item.get("calls", 0), int):
        raise DecodePathError(f"decode path {shown}: a step needs \"loop\", \"step\" (path:qualname), \"kind\" "
                              f"({' or '.join(STEP_KINDS)}) and \"calls\", got {str(item)[:80]}")
    return RecordedStep(item["loop"], item["step"], item["kind"], item.get("calls", 0))


def _lines(text: str) -> dict[tuple[str, str], int]:
    """(path, function) -> line, for files written by :func:`dumps` (one function per line)."""
    out: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().rstrip(",")
        if stripped.startswith('{"path"'):
            try:
                item = json.loads(stripped)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict):
                out.setdefault((str(item.get("path")), str(item.get("function"))), number)
    return out


def merge(records: list[RecordedDecodePath]) -> RecordedDecodePath:
    """One record from several (the devices of one inventory): every role of every function, each
    with its largest count (the devices ran the same steps)."""
    functions: dict[tuple[str, str], dict[str, int]] = {}
    steps: dict[tuple[str, str, str], int] = {}
    for record in records:
        for f in record.functions:
            roles = functions.setdefault((f.path, f.function), {})
            for role, calls in f.roles:
                roles[role] = max(roles.get(role, 0), calls)
        for s in record.steps:
            steps[(s.loop, s.step, s.kind)] = max(steps.get((s.loop, s.step, s.kind), 0), s.calls)
    return RecordedDecodePath(
        [RecordedFunction(p, q, tuple((r, roles[r]) for r in ROLES if r in roles)) for (p, q), roles in functions.items()],
        [RecordedStep(loop, step, kind, calls) for (loop, step, kind), calls in steps.items()],
        next((r.command for r in records if r.command), ""))
