"""Config file + command line -> the one :class:`Settings` object the static check runs with.

Precedence follows ruff: the command line overrides the config file. ``--select`` starts a
fresh selection (the config's ``select``/``ignore`` no longer apply), ``--ignore`` removes
codes from whatever is selected, ``--entry`` replaces the configured entries.

Paths: with no PATHS on the command line, the configured ``paths`` (else ``.``) are checked.
With PATHS *and* configured ``paths`` (pre-commit passing the changed files), the call graph
is built from both, so hot code is still found through callers in unchanged files, and only
findings inside the given PATHS are reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from graphlint.config_file import Config, ConfigError, PathMatcher, parse_budget
from graphlint.config_values import DEFAULT_FILE_MEMORY, DEFAULT_FILE_TIMEOUT, default_target
from graphlint.paths import display_path
from graphlint.rules import Rule, RuleError, expand_selector, load_rules, select_rules
from graphlint.static.options import (DEFAULT_GUARDS, DEFAULT_HOT_NAMES, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FILE_SIZE,
                                      DEFAULT_PREFILL_GUARDS, DEFAULT_PREFILL_NAMES, RecordedEntry, StaticOptions)

CACHE_DIR_NAME = ".graphlint_cache"


@dataclass(frozen=True)
class Settings:
    rules: dict[str, Rule]
    options: StaticOptions
    analysis_paths: tuple[Path, ...]
    report_paths: tuple[Path, ...] | None  # None: report every analysed file
    exclude: PathMatcher
    per_file_ignores: tuple[tuple[PathMatcher, frozenset[str]], ...]
    root: Path
    cache_dir: Path | None  # None: --no-cache
    jobs: int
    entry_origin: str = "--entry"  # where the entries came from, for error messages
    file_timeout: float = DEFAULT_FILE_TIMEOUT  # seconds per file (graphlint.workers); 0: none
    file_memory: int = DEFAULT_FILE_MEMORY  # bytes per worker; 0: none


def resolve(
    config: Config,
    *,
    paths: list[str] = (),
    entries: list[str] = (),
    select: list[str] | None = None,
    ignore: list[str] = (),
    jobs: int | None = None,
    use_cache: bool = True,
    decode_path: str | None = None,
    budget: dict[str, str] | None = None,
) -> Settings:
    """Raise :class:`ConfigError` (or :class:`RuleError`) for anything that cannot work.

    ``decode_path``: ``--decode-path`` (else the configured ``decode-path``), see :func:`recorded_entries`.
    ``budget``: the command line's ``--target-version``, ``--max-depth``... by config key, as typed."""
    rules = load_rules(config.rule_packs)
    from graphlint.static.matchers import build_matchers

    build_matchers(rules)  # a bad matcher kind or params in a pack: exit 2 now, not GL002 per file
    enabled = _enabled_codes(rules, config, select, ignore)
    limits = _limits(config, budget or {})
    per_file = tuple(
        (PathMatcher([glob], config.root), frozenset(_expand(rules, codes, f"per-file-ignores {glob!r}")))
        for glob, codes in config.per_file_ignores
    )
    entry_origin = "--entry" if entries else f"{display_path(config.path) if config.path else 'config'} entry"
    if entries:
        entry_list = [_entry(e, Path.cwd(), entry_origin) for e in entries]
    else:
        entry_list = [_entry(e, config.root, entry_origin) for e in config.entry]
    record_file = Path(decode_path) if decode_path else config.decode_path
    recorded, recorded_files = recorded_entries(record_file, "--decode-path" if decode_path else
                                                f"{display_path(config.path) if config.path else 'config'} decode-path")
    options = StaticOptions(
        enabled=frozenset(enabled),
        recorded=recorded,
        decode_path=display_path(record_file) if record_file is not None else "",
        entries=tuple(entry_list),
        hot_names=config.hot_names if config.hot_names is not None else DEFAULT_HOT_NAMES,
        guards=config.guards if config.guards is not None else DEFAULT_GUARDS,
        prefill_guards=config.prefill_guards if config.prefill_guards is not None else DEFAULT_PREFILL_GUARDS,
        prefill_names=config.prefill_names if config.prefill_names is not None else DEFAULT_PREFILL_NAMES,
        **_static_budget(limits),
    )
    if any(not str(p).strip() for p in paths):
        raise ConfigError("an empty path on the command line names nothing")
    cli_paths = tuple(Path(p) for p in paths)
    configured = tuple(config.root / p for p in config.paths) if config.paths else ()
    for path, origin in [*((p, "command line") for p in cli_paths), *((p, str(config.path)) for p in configured)]:
        if not os.path.lexists(path):
            raise ConfigError(f"{display_path(path)} (from {origin}) does not exist")
    if cli_paths and configured:
        analysis, report = configured + cli_paths, cli_paths
    else:
        analysis, report = cli_paths or configured or (Path("."),), None
    if recorded_files:  # the recorded files join the call graph; only the checked paths are reported
        analysis, report = analysis + recorded_files, report or analysis
    if jobs is not None and jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    return Settings(
        rules=rules,
        options=options,
        analysis_paths=analysis,
        report_paths=report,
        exclude=PathMatcher(config.exclude, config.root),
        per_file_ignores=per_file,
        root=config.root,
        cache_dir=config.root / CACHE_DIR_NAME if use_cache else None,
        jobs=jobs or default_jobs(),
        entry_origin=entry_origin,
        file_timeout=limits.get("file-timeout", DEFAULT_FILE_TIMEOUT),
        file_memory=limits.get("file-memory", DEFAULT_FILE_MEMORY),
    )


def recorded_entries(record_file: Path | None, origin: str) -> tuple[tuple[RecordedEntry, ...], tuple[Path, ...]]:
    """The decode path's functions as :class:`RecordedEntry` (paths as the check spells them), and the
    recorded files that exist: they are analysed too, so that with only some files passed (pre-commit)
    the record still finds its functions and the call graph still extends it. A missing or broken
    file is a configuration error (exit 2)."""
    from graphlint.decode_path_file import DecodePathError, load

    if record_file is None:
        return (), ()
    shown = display_path(record_file)
    if not record_file.is_file():
        raise ConfigError(f"{origin}: decode path {shown} does not exist (`graphlint record -o {shown} -- CMD` "
                          "writes it)")
    try:
        record = load(record_file, shown)
    except DecodePathError as exc:
        raise ConfigError(str(exc)) from None
    base = record_file.parent

    def spelled(path: str) -> tuple[str, bool, Path | None]:
        local = base / path
        if local.is_file():
            return display_path(local), True, local
        if local.parent.is_dir():  # the project's file, gone since the recording: stale
            return display_path(local), True, None
        return path, False, None  # another root's (a library recorded with --source): matched by suffix

    steps = {}
    for step in record.steps:
        path, _, qual = step.step.rpartition(":")
        steps.setdefault(step.loop, f"{spelled(path)[0]}:{qual}")
    entries, files = [], {}
    for f in record.functions:
        path, local, existing = spelled(f.path)
        entries.append(RecordedEntry(path, f.function, tuple(role for role, _ in f.roles),
                                     steps.get(f"{f.path}:{f.function}", ""), f.line, local))
        if existing is not None:
            files.setdefault(path, existing)
    return tuple(entries), tuple(files.values())


def _limits(config: Config, cli: dict[str, str]) -> dict:
    """Config values, then the command line's (parsed from their TOML-like spelling)."""
    limits = dict(config.budget)
    for key, text in cli.items():
        value: object = text
        if key in ("max-depth", "file-timeout"):
            try:
                value = float(text) if key == "file-timeout" else int(text)
            except ValueError:
                pass  # parse_budget says what is wrong with it
        limits.update(parse_budget({key: value}, ""))
    limits.setdefault("target-version", default_target(config.requires_python))
    return limits


def _static_budget(limits: dict) -> dict:
    """The limits that shape a summary (and so its cache key): StaticOptions' fields."""
    return {"target_version": limits["target-version"],
            "max_depth": limits.get("max-depth", DEFAULT_MAX_DEPTH),
            "max_file_size": limits.get("max-file-size", DEFAULT_MAX_FILE_SIZE)}


def default_jobs() -> int:
    """CPUs this process may run on (a container's share, not the host's core count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def _enabled_codes(rules: dict[str, Rule], config: Config, select: list[str] | None, ignore: list[str]) -> set[str]:
    where = f"{config.path} " if config.path else ""
    enabled = select_rules(rules, _checked(rules, config.select or ["ALL"], f"{where}select"),
                           _checked(rules, config.ignore, f"{where}ignore"))
    if select is not None and not _split(select):
        raise ConfigError("--select names no rule (ALL, codes, prefixes, names or categories)")
    if select:
        enabled = select_rules(rules, _split(select), ())
    for selector in _split(ignore):
        enabled -= expand_selector(rules, selector)
    return enabled


def _split(values: list[str] | tuple[str, ...]) -> list[str]:
    """``--select GL1,GL2 --select host-sync`` -> ``["GL1", "GL2", "host-sync"]``."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _checked(rules: dict[str, Rule], selectors, where: str) -> list[str]:
    """The selectors, after checking each names something (else a config error saying where)."""
    _expand(rules, selectors, where)
    return list(selectors)


def _expand(rules: dict[str, Rule], selectors, where: str) -> set[str]:
    codes: set[str] = set()
    for selector in selectors:
        try:
            codes |= expand_selector(rules, selector)
        except RuleError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return codes


def _entry(spec: str, base: Path, where: str) -> str:
    file_part, sep, qualname = spec.rpartition(":")
    if not sep or not file_part or not qualname or not all(p.isidentifier() for p in qualname.split(".")):
        raise ConfigError(f"{where}: entry {spec!r} must look like FILE.py:function or FILE.py:Class.method")
    path = base / file_part
    if not path.is_file():
        raise ConfigError(f"{where}: entry file {file_part} does not exist")
    return f"{display_path(path)}:{qualname}"


def gate_off(settings: Settings, summaries: dict) -> str:
    """Why the check cannot fail on any hazard, or "": no static rule enabled, none left in any
    file by ``per-file-ignores``, every file marked ``skip-file``. Said on stderr and in the JSON
    and SARIF output; ``--strict`` makes it exit 2 (a CI gate must not pass by checking nothing)."""
    static = {code for code, rule in settings.rules.items() if rule.category != "meta" and not rule.dynamic}
    if not static & settings.options.enabled:
        return "select/ignore enable no rule: nothing was checked"
    live = [path for path, s in summaries.items() if not s.skip_file]
    if summaries and not live:
        return "every checked file is marked `# graphlint: skip-file`: nothing was checked"
    if live and all(not enabled_for_file(settings, path) & static for path in live):
        return "per-file-ignores turn every rule off in every checked file: nothing was checked"
    return ""


def enabled_for_file(settings: Settings, path: str) -> set[str]:
    """The rules enabled for one file: the selection minus its per-file-ignores."""
    codes = set(settings.options.enabled)
    for matcher, ignored in settings.per_file_ignores:
        if matcher(Path(path)):
            codes -= ignored
    return codes
