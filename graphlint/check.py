"""The static check, ``graphlint check``: discover files, summarize them (parallel, cached), link, filter.

Decisions worth knowing:

* Which files are read: :mod:`graphlint.discovery`.
* Files are summarized in worker processes only (:mod:`graphlint.workers`): ``--jobs`` of them
  from :data:`PARALLEL_THRESHOLD` uncached files up, else one (pre-commit already runs hooks in
  parallel). Outcomes keep input order and the final findings are sorted, so output never
  depends on ``--jobs``.
* Nothing about one file can stop the run: an unreadable, undecodable or unparsable file is a
  GL000 finding; one over the per-file budget (size, depth, time, memory) a GL005; an analyzer
  crash on one file, or a worker dying on it, a GL002 naming the file (the CLI still reports
  everything, then exits 2). Nor can the whole-program stages (which see every file at once: the
  cross-file pass, the link): a crash is one GL002 naming the stage, beside every per-file finding
  (:func:`.check_filter.pass_failure`).
* A run that can fail on nothing (every rule off, every file excluded) says so:
  :func:`graphlint.check_settings.gate_off`.
* ``# graphlint: skip-file`` takes the file out of the analysis entirely: no findings in it,
  and what only it calls is not hot. That is what marking e.g. an intentionally eager
  reference decoder should do; the check additionally drops any finding the linker still
  places in such a file.
"""

from __future__ import annotations

import gc
import hashlib
import operator
import os
from dataclasses import dataclass, field
from typing import Callable

from graphlint.check_filter import (FACTS_LOST, LINK_LOST, apply_settings, in_report_set, pass_error, pass_failure,
                                    unreached_worth_a_note)
from graphlint.check_settings import Settings, gate_off
from graphlint.discovery import Walked, Source, discover, read_source
from graphlint.finding import Finding
from graphlint.paths import display_path
from graphlint.static.budget import error_code
from graphlint.static.facts import FileSummary

PARALLEL_THRESHOLD = 16
PARSE_ERROR = "GL000"

#: (done, total or None while it cannot be counted, phase): phases are "finding files",
#: "analysing" (files), "cross-file pass" (files summarized again with other files' facts),
#: "linking" (call graph and hotness over every summary, one step).
Progress = Callable[[int, "int | None", str], None]


@dataclass
class RunResult:
    findings: list[Finding]  # sorted; suppressed ones included and marked
    files: int = 0
    lines: int = 0
    cache_hits: int = 0
    warnings: list[str] = field(default_factory=list)
    entries: list = field(default_factory=list)  # graphlint.static.entries.Entry: the decode step's roots
    decode_path: object = None  # graphlint.static.decode_path.DecodePath: what the check took for the decode path
    gate_off: str = ""  # why nothing could fail the check (see :func:`gate_off`), else ""
    link_error: str = ""  # the link's crash (:func:`.check_filter.pass_error`), "" when it linked


_worker_state: dict = {}


def _init_worker(rules, options, keep: int = 0) -> None:
    """In a worker process: what it inherited from the parent is frozen out of the cyclic
    collector, which stays paused while a file is analysed and collects once after it (the
    parse allocates millions of acyclic nodes: collections during it cost about a tenth of the
    worker's time; measured on torch's files, the same peak memory), and libcst's node classes get
    plain type checks and plainer constructors (:func:`graphlint.static.summarize.plain_node_checks`,
    :func:`~graphlint.static.summarize.plain_node_inits`), and literals read without a compile where
    none is needed (:func:`graphlint.static.literals.plain_literals`), and it keeps up to ``keep`` bytes of
    libcst trees for the cross-file pass (:mod:`graphlint.static.keptrees`). Where the tasks run in this
    process (no worker could start), the collector and libcst are left as they are, and nothing is kept."""
    worker = _worker_state.get("parent") != os.getpid()
    if worker:
        from graphlint.static.keptrees import allow
        from graphlint.static.literals import plain_literals
        from graphlint.static.summarize import plain_node_checks, plain_node_inits

        plain_node_checks()
        plain_node_inits()
        plain_literals()
        gc.disable()
        gc.freeze()
        allow(keep)
    _worker_state.update(rules=rules, options=options, collect=worker)


def _summarize(item: tuple) -> tuple[bytes | None, str]:
    """Never raises: an analyzer crash comes back as (None, traceback text).

    ``item``: (path, data) or (path, data, imported tensor-returning function names). The summary
    comes back as the cache entry's bytes (:meth:`SummaryCache.put_entry`): pickled once, here,
    and not a second time by the parent to cache it."""
    path, data, *facts = item
    try:
        from graphlint.cache import entry_bytes
        from graphlint.static.summarize import summarize_file

        summary = summarize_file(path, data, _worker_state["rules"], _worker_state["options"], *facts)
        payload = entry_bytes(summary, summary.sha256)
        del summary  # gone before the collection below: what is alive then, kept trees aside, is this worker's own
        return payload, ""
    except Exception as exc:
        return None, f"internal error while analysing this file: {type(exc).__name__}: {exc}"
    finally:
        if _worker_state.get("collect"):
            from graphlint.static.keptrees import settle

            gc.collect()
            settle()


def _summarize_all(items: list[tuple], settings: Settings, progress: Progress | None, done: int,
                   total: int, phase: str = "analysing", reserve=None) -> list[tuple[FileSummary | None, str, bytes]]:
    """Every item in worker processes (:mod:`graphlint.workers`): ``--jobs`` of them from
    :data:`PARALLEL_THRESHOLD` items up, else one. (summary, "", its cache entry's bytes), or
    (None, message, b"") for a file that failed.

    ``reserve`` (a :class:`graphlint.workers.Reserve`): on the first pass, filled with ``--jobs``
    workers before any summary comes back (see there why); every pass runs on them, and a later
    pass hands each file to the worker that summarized it first, which may keep its tree."""
    from graphlint.cache import from_entry_bytes

    import graphlint.static.summarize  # noqa: F401  (imported once here, inherited by forked workers)
    from graphlint.static.keptrees import budget
    from graphlint.workers import Limits, run_tasks

    held = len(reserve.workers) if reserve is not None and phase != "analysing" else 0  # forked: free to use
    jobs = settings.jobs if len(items) >= PARALLEL_THRESHOLD else min(settings.jobs, max(1, held))
    _worker_state["parent"] = os.getpid()  # what a forked worker inherits tells it that it is one
    initargs = (settings.rules, settings.options, budget(settings.file_memory))
    if reserve is not None and phase == "analysing":
        reserve.start(jobs, _summarize, _init_worker, initargs)
    # largest first: the last file handed out is a small one, so no worker idles long at the end
    # (torch's 1.4 MB file last in sorted order kept one core idle for seconds)
    order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))
    outcomes = run_tasks([items[i] for i in order], _summarize, jobs=jobs,
                         limits=Limits(settings.file_timeout, settings.file_memory),
                         initializer=_init_worker, initargs=initargs,
                         progress=(lambda n: progress(done + n, total, phase)) if progress else None,
                         reserve=reserve, key=operator.itemgetter(0))
    ordered: list = [None] * len(items)
    for i, (result, _, message) in zip(order, outcomes):
        payload, failure = result if result is not None else (None, message)
        ordered[i] = (from_entry_bytes(payload), "", payload) if payload is not None else (None, failure, b"")
    return ordered


def run(settings: Settings, progress: Progress | None = None, contexts_out: list | None = None,
        stdin: tuple[str, bytes] | None = None) -> RunResult:
    """Never raises for what the analysis meets: everything per-file becomes a finding, and a
    crash of a whole-program stage one GL002 beside them (the link's also in ``result.link_error``).

    The cyclic garbage collector is paused for the run: the summaries are millions of small,
    acyclic objects, and its full collections while they are loaded from the cache and linked
    took about as long as the loading itself (measured: warm runs on 600 files, 0.21 s -> 0.07 s
    to load the summaries). Nothing here makes reference cycles worth collecting mid-run.
    ``contexts_out`` receives which functions are hot where (``bench/record_vs_static.py``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(settings, progress, contexts_out, stdin)
    finally:
        if enabled:
            gc.enable()


def _run(settings: Settings, progress: Progress | None, contexts_out: list | None = None,
         stdin: tuple[str, bytes] | None = None) -> RunResult:
    result = RunResult(findings=[])
    if progress:
        progress(0, None, "finding files")
    walked = Walked()
    sources = [read_source(p) for p in discover(settings, result.warnings, walked)]
    if stdin is not None:  # `check -`: the editor's buffer stands in for the file (which may not exist)
        sources = [Source(s.path, stdin[1], hashlib.sha256(stdin[1]).hexdigest()) if s.path == stdin[0] else s
                   for s in sources]
    result.files = len(sources)
    where = ", ".join(display_path(p) for p in settings.analysis_paths)
    if not sources and walked.excluded:
        result.gate_off = f"exclude matches every Python file under {where}: nothing was checked"
    elif not sources and not walked.unreadable:  # as ruff: a warning and exit 0 (a missing path is exit 2 earlier)
        result.warnings.append(f"No Python files found under {where}: nothing was checked")
    for path in settings.report_paths or ():  # `check docs/` beside configured paths: say it, not "No findings"
        if sources and not any(in_report_set(s.path, (path,)) for s in sources):
            result.warnings.append(f"No Python files found under {display_path(path)}: nothing there was checked")
    from graphlint.workers import Reserve

    variants: dict[str, str] = {}
    failures: list[Finding] = []  # GL002s of whole-program stages that crashed
    with Reserve() as reserve:  # the cross-file pass's workers, forked before the summaries are loaded
        summaries, meta, result.cache_hits = _summaries(sources, settings, progress, reserve)
        try:
            result.cache_hits += _add_cross_file_facts(summaries, sources, settings, meta, progress, variants, reserve)
        except Exception as exc:  # the per-file summaries stand; only the facts files give each other are lost
            failures.append(pass_failure(pass_error(exc, len(summaries), "the cross-file pass"), FACTS_LOST, settings))
    from graphlint.static.valueflow import release_planning_facts

    release_planning_facts(summaries.values())  # the summaries are final now: no further planning reads them
    result.lines = sum(s.lines for s in summaries.values())
    for source in sources:  # nothing reads the files' bytes again: not held through the link
        source.data = None
    _release_freed_memory()
    check_entries(summaries, settings)
    if progress:
        progress(0, None, "linking")
    decode: list = []
    from graphlint.workers import run_deep

    try:
        linked = run_deep(_link, summaries, settings, result, variants, contexts_out, decode)
    except Exception as exc:  # the per-file findings stand: one GL002 says what was not judged
        linked, result.link_error = [], pass_error(exc, len(summaries), "the whole-program link")
        failures.append(pass_failure(result.link_error, LINK_LOST, settings))
    unreadable = [Finding.from_rule(settings.rules[PARSE_ERROR], path, 1, message=why) for path, why in walked.unreadable]
    result.findings = apply_settings([*meta, *unreadable, *linked], summaries, settings, failures,
                                     linked=not result.link_error)
    result.warnings += [f.message for f in failures if f not in result.findings]  # GL002 ignored: still said
    result.gate_off = result.gate_off or gate_off(settings, summaries)
    _warn_unmatched(summaries, settings, result.warnings)
    if decode:
        result.decode_path = decode[0]
        decode[0].unreached = unreached_worth_a_note(decode[0].unreached, summaries, settings)
    return result


def _release_freed_memory() -> None:
    """Hand the memory freed so far (the files' bytes, the workers' pickles) back to the system
    before the link needs its own: glibc keeps it in its heap, where the small objects of the
    points-to solve (allocated elsewhere) never reuse it, so it stayed in the peak (on torch,
    within the 1 GB budget of issue 19 only with this). Nothing where ``malloc_trim`` is missing."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


def _link(summaries: dict[str, FileSummary], settings: Settings, result: RunResult, variants: dict[str, str],
          contexts_out: list | None, decode: list):
    """Link, or reuse the last link result when every summary and option is the same (not when
    the caller asks for the contexts themselves: those are not stored)."""
    from graphlint.cache import SummaryCache
    from graphlint.static.link import link

    cache = SummaryCache(settings.cache_dir, settings.rules, settings.options) \
        if settings.cache_dir and contexts_out is None else None
    key = cache.linked_key(settings.options, [(p, s.sha256, variants.get(p, "")) for p, s in summaries.items()]) \
        if cache else ""
    stored = cache.get_linked(key) if cache else None
    if stored is not None:
        linked, entries, path = stored
        result.entries.extend(entries)
        if path is not None:
            decode.append(path)
        return linked
    linked = link(list(summaries.values()), settings.rules, settings.options, result.entries, contexts_out, decode)
    if cache:
        cache.put_linked(key, (linked, list(result.entries), decode[0] if decode else None))
    return linked


def _warn_unmatched(summaries: dict[str, FileSummary], settings: Settings, warnings: list[str]) -> None:
    """A decode path whose files are nowhere among the analysed ones checks nothing of them: say so."""
    from graphlint.static.facts import ModuleInfo
    from graphlint.static.recorded import unmatched_paths

    paths = unmatched_paths([s.data for s in summaries.values() if isinstance(s.data, ModuleInfo) and not s.skip_file],
                            settings.options)
    if paths:
        shown = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
        warnings.append(f"decode path {settings.options.decode_path}: {len(paths)} recorded file(s) match no analysed "
                        f"file ({shown}): their functions are not checked (check the paths it was recorded with, "
                        "or add their directory to the checked paths)")


def check_entries(summaries: dict[str, FileSummary], settings: Settings) -> None:
    """An entry that names no function is a configuration error (exit 2), never a warning: under
    pre-commit nobody reads warnings, and a typo'd entry makes the hook check nothing at all."""
    import difflib

    from graphlint.config_file import ConfigError
    from graphlint.static.link import missing_entries

    for entry in missing_entries(list(summaries.values()), settings.options):
        path, _, qualname = entry.rpartition(":")
        summary = next((s for p, s in summaries.items() if os.path.normpath(p) == os.path.normpath(path)), None)
        where = f"{settings.entry_origin} {entry}"
        if summary is None:
            raise ConfigError(f"{where}: {path} is not among the analysed files (not under the checked paths, "
                              "or excluded)")
        if summary.errors or summary.data is None:
            continue  # the file did not parse: its GL000 finding says why, and is reported
        functions = [q for q in getattr(summary.data, "functions", {}) if q != "<module>"]
        guesses = difflib.get_close_matches(qualname, functions, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(guesses)}?" if guesses else (
            f" (it defines: {', '.join(sorted(functions)[:8])})" if functions else " (it defines no function)")
        raise ConfigError(f"{where} names no function in {path}{hint}")


def _summaries(sources: list[Source], settings: Settings, progress: Progress | None, reserve=None):
    """Summaries by path (cache first, then workers), plus the GL000/GL002 findings on the way."""
    from graphlint.cache import SummaryCache

    cache = SummaryCache(settings.cache_dir, settings.rules, settings.options) if settings.cache_dir else None
    rules, meta, summaries, misses = settings.rules, [], {}, []
    for source in sources:
        if source.error:
            meta.append(Finding.from_rule(rules[PARSE_ERROR], source.path, 1, message=source.error))
            continue
        cached = cache.get(source.path, source.sha256) if cache else None
        if cached is not None:
            summaries[source.path] = cached
        else:
            misses.append(source)
    done = len(sources) - len(misses)
    if progress:
        progress(done, len(sources), "analysing")
    outcomes = _summarize_all([(s.path, s.data) for s in misses], settings, progress, done, len(sources),
                              reserve=reserve)
    for source, (summary, failure, payload) in zip(misses, outcomes):
        if summary is None:  # a crash, a timeout, too much memory: never cached
            meta.append(Finding.from_rule(rules[error_code(failure)], source.path, 1, message=failure))
            summary = FileSummary(path=source.path, sha256=source.sha256, lines=source.data.count(b"\n"))
        elif cache:
            cache.put_entry(summary.path, source.sha256, payload)
        summaries[source.path] = summary
    for summary in summaries.values():
        for line, col, message in summary.errors:
            code = error_code(message)
            meta.append(Finding.from_rule(rules[code], summary.path, max(line, 1), max(col, 0), message=message))
    return dict(sorted(summaries.items())), meta, cache.hits if cache else 0


def _add_cross_file_facts(summaries: dict[str, FileSummary], sources: list[Source], settings: Settings,
                          meta: list[Finding], progress: Progress | None = None,
                          variants: dict[str, str] | None = None, reserve=None) -> int:
    """Summarize again the files that import another file's ``-> Tensor`` functions, whose
    classes inherit facts from their bases, or whose calls and parameters learn what values are
    from other functions, with those names as facts (see :mod:`graphlint.static.crossfile`,
    :mod:`graphlint.static.inherited`, :mod:`graphlint.static.valueflow`); cached under the names too.
    Returns the cache hits."""
    from graphlint.static.crossfile import imported_tensor_functions
    from graphlint.static.defaultdevice import project_facts
    from graphlint.static.facts import ModuleInfo
    from graphlint.static.index import Index
    from graphlint.static.inherited import inherited_class_facts
    from graphlint.static.valueflow import ROUNDS, value_facts_of

    hits, applied = 0, {}
    first = list(summaries.values())
    # one name index for the three questions asked of the first pass's summaries (and its memos):
    # building it was a tenth of the parent's planning on all of torch, and it was built three times
    index = Index([s.data for s in first if isinstance(s.data, ModuleInfo)])
    fixed = imported_tensor_functions(first, index)  # annotations and bases: one round, as ever
    for path, names in inherited_class_facts(first, index).items():
        fixed[path] = fixed.get(path, frozenset()) | names
    for path, names in project_facts([s.data for s in first if isinstance(s.data, ModuleInfo)]).items():
        fixed[path] = fixed.get(path, frozenset()) | names  # a default device the project sets
    for _ in range(ROUNDS):  # a value fact learned in one round may change what a file returns
        plan = dict(fixed)
        for path, names in value_facts_of(list(summaries.values()), index).items():
            plan[path] = plan.get(path, frozenset()) | names
        plan = {path: names for path, names in plan.items() if applied.get(path) != names}
        if not plan:
            break
        applied.update(plan)
        first = index = None  # the summaries change now: the next round indexes its own (and these go)
        hits += _summarize_with_facts(plan, summaries, sources, settings, meta, progress, variants, reserve)
    return hits


def _summarize_with_facts(plan: dict[str, frozenset[str]], summaries: dict[str, FileSummary], sources: list[Source],
                          settings: Settings, meta: list[Finding], progress: Progress | None,
                          variants: dict[str, str] | None, reserve=None) -> int:
    from graphlint.cache import SummaryCache

    cache = SummaryCache(settings.cache_dir, settings.rules, settings.options) if settings.cache_dir else None
    by_path = {s.path: s for s in sources}
    items = []
    for path, names in sorted(plan.items()):
        source, variant = by_path[path], ",".join(sorted(names))
        if variants is not None:
            variants[path] = variant
        cached = cache.get(path, source.sha256, variant) if cache else None
        if cached is not None:
            summaries[path] = cached
        else:
            items.append((path, source.data, names))
    if progress and items:
        progress(0, len(items), "cross-file pass")
    outcomes = _summarize_all(items, settings, progress, 0, len(items), "cross-file pass", reserve)
    for (path, _, names), (summary, failure, payload) in zip(items, outcomes):
        if summary is None:  # the first summary stands; say why the second one is missing
            meta.append(Finding.from_rule(settings.rules[error_code(failure)], path, 1,
                                          message=f"{failure} (while adding facts from other files)"))
            continue
        if cache:
            cache.put_entry(path, by_path[path].sha256, payload, ",".join(sorted(names)))
        summaries[path] = summary
    return cache.hits if cache else 0
