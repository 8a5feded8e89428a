"""``[tool.graphlint]`` in pyproject.toml: find it, read it, refuse anything surprising.

The settings are found by walking up from the checked paths (else the working directory) to the
first directory holding a ``.graphlint.toml``, a ``graphlint.toml`` (settings at the top level, as in
ruff.toml) or a ``pyproject.toml`` with a ``[tool.graphlint]`` table, in that order (or taken from
``--config FILE``). Every path in it is
relative to the directory of that file (the *project root*), so the result does not depend on
where graphlint is started from. Lists replace the built-in defaults rather than extending them
(``guards = []`` really turns guards off); the defaults are listed in docs/check.md so they can be
copied. Mistakes are errors, never silently ignored: an unknown key (with a "did you mean"), a
wrong type or broken TOML raises :class:`ConfigError`, which the CLI reports with exit code 2.
Rule codes are checked once rule packs are loaded (:mod:`graphlint.check_settings`).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

LIST_KEYS = ("paths", "exclude", "entry", "select", "ignore", "guards", "prefill-guards", "prefill-names", "hot-names", "rule-packs")
#: The per-file budget and the grammar (graphlint.config_values): scalars, each also a CLI flag.
SCALAR_KEYS = ("target-version", "max-depth", "max-file-size", "file-timeout", "file-memory")
KNOWN_KEYS = (*LIST_KEYS, "per-file-ignores", "decode-path", *SCALAR_KEYS)
#: Fnmatch name patterns (not paths): a pattern that can match no name is a mistake.
NAME_PATTERN_KEYS = ("guards", "prefill-guards", "prefill-names", "hot-names")


class ConfigError(Exception):
    """The configuration cannot be used as written; the message says where and why."""


@dataclass(frozen=True)
class Config:
    """The validated ``[tool.graphlint]`` table. ``None`` means "not set: use the default"."""

    path: Path | None  # the pyproject.toml it came from; None when there is none
    root: Path  # directory that relative paths in the table are relative to
    paths: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    entry: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    guards: tuple[str, ...] | None = None
    prefill_guards: tuple[str, ...] | None = None
    prefill_names: tuple[str, ...] | None = None
    hot_names: tuple[str, ...] | None = None
    rule_packs: tuple[Path, ...] = field(default=())
    decode_path: Path | None = None  # a recorded run's decode path (graphlint record), for check
    #: target-version, max-depth, max-file-size, file-timeout, file-memory, as parsed values
    budget: tuple[tuple[str, Any], ...] = ()
    requires_python: str = ""  # [project] requires-python of the same pyproject.toml


#: The files that configure graphlint, looked for in this order in each directory (ruff's order for
#: ``.ruff.toml``, ``ruff.toml``, ``pyproject.toml``); the nearest directory with one wins.
CONFIG_NAMES = (".graphlint.toml", "graphlint.toml", "pyproject.toml")


def graphlint_table(path: Path) -> dict[str, Any] | None:
    """The settings in ``path``: ``[tool.graphlint]`` of a pyproject.toml (None without one); in a
    graphlint.toml the top-level keys, as in ruff.toml, or its ``[tool.graphlint]`` table (so a table
    moves between the two files unchanged) -- not both. Any graphlint.toml counts, even an empty one."""
    data = _read_toml(path)
    tool = data.get("tool")
    nested = tool.get("graphlint") if isinstance(tool, dict) else None
    if path.name == "pyproject.toml":
        return nested
    if nested is None:
        return None if list(data) == ["tool"] else data  # only other tools' tables: not graphlint's file
    others = sorted(k for k in data if k != "tool")
    if others:
        raise ConfigError(f"{path}: settings both at the top level ({', '.join(others)}) and in [tool.graphlint]; "
                          "keep one of the two")
    return nested


def find_config(start: Path) -> Path | None:
    """The nearest configuration at or above ``start`` (:data:`CONFIG_NAMES`): a .graphlint.toml or
    graphlint.toml, or a pyproject.toml with a ``[tool.graphlint]`` table."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if not os.path.lexists(candidate):
                continue
            if not candidate.is_file():  # a directory or a broken symlink may have held the settings
                raise ConfigError(f"{candidate} is not a readable file ({_what(candidate)}): graphlint cannot "
                                  "tell whether it configures this project")
            if graphlint_table(candidate) is not None:
                return candidate
    return None


def load_config(explicit: Path | None = None, cwd: Path | None = None, paths: Sequence[str] = ()) -> Config:
    """Load ``explicit`` (``--config``) or the discovered config; defaults when there is none.

    Discovery starts where the checked code is, like black's project root: at the deepest
    directory holding every path given on the command line (so ``graphlint check ../other``
    uses ``../other``'s settings), and from the working directory when no path is given or
    nothing is found above the paths.
    """
    cwd = _resolve(cwd or Path.cwd())
    if explicit is not None:
        path = _resolve(explicit)
        if not path.is_file():
            what = "does not exist" if not os.path.lexists(explicit) else f"is not a readable file ({_what(explicit)})"
            raise ConfigError(f"config file {explicit} {what}")
        if graphlint_table(path) is None:
            raise ConfigError(f"{explicit}: no [tool.graphlint] table" + (
                "" if path.name == "pyproject.toml" else " and no graphlint settings at its top level"))
    else:
        start = _common_directory(paths, cwd)
        path = (find_config(start) if start else None) or find_config(cwd)
        if path is None:
            return Config(path=None, root=cwd)
    data = _read_toml(path)
    config = parse_table(graphlint_table(path), path)
    project = data.get("project")
    requires = project.get("requires-python") if isinstance(project, dict) else None
    if not isinstance(requires, str) and path.name != "pyproject.toml":  # graphlint.toml: its neighbour's
        sibling = path.parent / "pyproject.toml"
        try:
            project = _read_toml(sibling).get("project") if sibling.is_file() else None
        except ConfigError:
            project = None
        requires = project.get("requires-python") if isinstance(project, dict) else None
    if isinstance(requires, str):
        config = replace(config, requires_python=requires)
    return config


def _resolve(path: Path) -> Path:
    """``Path.resolve`` that survives a symlink loop (3.11 raises RuntimeError for one)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def _what(path: Path) -> str:
    if os.path.isdir(path):
        return "a directory"
    if os.path.islink(path) and not os.path.exists(path):
        return "a broken or looping symlink"
    return "not a regular file" if os.path.exists(path) else "unreadable"


def _common_directory(paths: Sequence[str], cwd: Path) -> Path | None:
    """The deepest existing directory holding every path (a file stands for its directory)."""
    dirs = []
    for raw in paths:
        path = _resolve(cwd / raw)
        try:
            if not path.exists():
                continue  # a missing path is reported later, with the rest of the usage errors
        except OSError:  # a symlink loop, a name too long: reported later too
            continue
        dirs.append(path if path.is_dir() else path.parent)
    if not dirs:
        return None
    return Path(os.path.commonpath([str(d) for d in dirs]))


def parse_table(table: Any, path: Path) -> Config:
    where = f"{path} [tool.graphlint]" if path.name == "pyproject.toml" else str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            guess = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {guess[0]!r}?" if guess else f" (known keys: {', '.join(KNOWN_KEYS)})"
            raise ConfigError(f"{where}: unknown key {key!r}{hint}")
    values = {key: _string_list(table[key], f"{where} {key}") for key in LIST_KEYS if key in table}
    _check_values(values, where)
    budget = parse_budget({key: table[key] for key in SCALAR_KEYS if key in table}, where)
    root = path.parent
    return Config(
        path=path,
        root=root,
        paths=values.get("paths"),
        exclude=values.get("exclude", ()),
        entry=values.get("entry", ()),
        select=values.get("select"),
        ignore=values.get("ignore", ()),
        per_file_ignores=_per_file_ignores(table.get("per-file-ignores", {}), where),
        guards=values.get("guards"),
        prefill_guards=values.get("prefill-guards"),
        prefill_names=values.get("prefill-names"),
        hot_names=values.get("hot-names"),
        rule_packs=tuple(root / p for p in values.get("rule-packs", ())),
        decode_path=_decode_path(table.get("decode-path"), root, where),
        budget=tuple(budget.items()),
    )


def _decode_path(value: Any, root: Path, where: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} decode-path: expected a file name (a string), got {_describe(value)}")
    return root / value


def parse_budget(values: dict[str, Any], where: str) -> dict[str, Any]:
    """The budget keys (:mod:`graphlint.config_values`), checked and converted."""
    from graphlint import config_values

    try:
        return config_values.parse_budget(values, where)
    except config_values.ConfigError as exc:
        raise ConfigError(str(exc)) from None


def _check_values(values: dict[str, tuple[str, ...]], where: str) -> None:
    """Values that can match nothing are mistakes, never silently "check nothing" or "check all"."""
    if values.get("paths") == ():
        raise ConfigError(f"{where} paths = []: checks nothing (remove the key to check the project root)")
    if values.get("select") == ():
        raise ConfigError(f'{where} select = []: enables no rule (remove the key for ALL, or name the rules)')
    for key, items in values.items():
        for item in items:
            if not item.strip():
                raise ConfigError(f"{where} {key}: an empty string names nothing")
            if key in ("exclude", *NAME_PATTERN_KEYS):
                check_pattern(item, f"{where} {key}")


def check_pattern(pattern: str, where: str) -> None:
    """A glob with an unclosed ``[`` matches only names with a literal ``[`` in them: a typo."""
    if not pattern.strip() or not pattern.strip().strip("/").lstrip("./"):
        raise ConfigError(f"{where}: {pattern!r} is an empty pattern")
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "]") else i + 1)
            if end < 0:
                raise ConfigError(f"{where}: {pattern!r} has an unclosed '[' (write '[[]' for a literal '[')")
            i = end
        i += 1


def _read_toml(path: Path) -> dict[str, Any]:
    """TOML is UTF-8 by definition: other bytes, and nesting deeper than the parser's recursion,
    are a one-line error like any other broken file."""
    try:
        with path.open("rb") as handle:
            data = handle.read()
        return tomllib.loads(data.decode("utf-8-sig"))  # a BOM (Windows editors) is no mistake
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path} is not valid TOML: line {line} is not UTF-8 (TOML files must be UTF-8)") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except (RecursionError, MemoryError) as exc:
        raise ConfigError(f"{path} is not usable TOML: nested too deeply ({type(exc).__name__})") from exc


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {_describe(value)}")
    return tuple(value)


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} per-file-ignores: expected a table of glob = [codes], got {_describe(value)}")
    out = []
    for glob, codes in value.items():
        check_pattern(glob, f"{where} per-file-ignores")
        out.append((glob, _string_list(codes, f"{where} per-file-ignores {glob!r}")))
    return tuple(out)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


class PathMatcher:
    """gitignore-ish globs, anchored at the project root.

    A pattern with a ``/`` is anchored at the root (``tests/*``, ``/build``); one without
    matches at any depth (``*_test.py``, ``generated``). ``*`` and ``?`` stay inside one path
    component, ``**`` crosses components, and a pattern that matches a directory matches
    everything under it (so ``tests/*`` covers ``tests/a/b.py``).
    """

    def __init__(self, patterns: tuple[str, ...] | list[str], root: Path):
        self.patterns = tuple(patterns)
        self.root = root
        self._regexes = [re.compile(_glob_regex(p)) for p in self.patterns]

    def relative(self, path: Path) -> str:
        absolute = path if path.is_absolute() else Path.cwd() / path
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError:
            return absolute.as_posix().lstrip("/")

    def matching(self, path: Path) -> list[str]:
        rel = self.relative(path)
        return [p for p, rx in zip(self.patterns, self._regexes) if rx.match(rel)]

    def __call__(self, path: Path) -> bool:
        rel = self.relative(path)
        return any(rx.match(rel) for rx in self._regexes)


def _glob_regex(pattern: str) -> str:
    pat = pattern.strip().rstrip("/")
    anchored = "/" in pat
    pat = pat.lstrip("/")
    while pat.startswith("./"):  # ``./tests``: the root's tests, as the user meant
        pat = pat[2:].lstrip("/")
    out, i = [], 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        elif pat[i] == "[" and "]" in pat[i + 1 :]:
            end = pat.index("]", i + 1)
            body = pat[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return f"^{prefix}{''.join(out)}(?:/.*)?$"
