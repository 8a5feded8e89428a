"""Per-file summary cache in ``.graphlint_cache/`` (next to the config file, else in the cwd).

Phase 1 (``summarize_file``) is cached per file. Linking is recomputed from the summaries
whenever any of them changed, so a changed caller re-heats an unchanged callee without any
dependency bookkeeping; a run over exactly the same summaries and options reuses the last link
result (``linked/``: the whole-program points-to solve is most of a warm run's work otherwise).
An entry is keyed by the file's path, its content sha256, :meth:`StaticOptions.cache_key`
(guards + rules fingerprint), the hot-name patterns, the graphlint version and a fingerprint of
the analyzer's own source files (so an editable install never serves summaries from older
analyzer code).

One small file per entry, written to a temporary name and renamed into place: concurrent
graphlint processes (pre-commit runs several) never see half-written entries, and a corrupt or
unreadable entry is treated as a miss and rewritten. A cache that cannot be written is
switched off for the run, never an error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path

import graphlint
from graphlint.rules import Rule
from graphlint.static.facts import FileSummary
from graphlint.static.options import StaticOptions

ANALYZER_DIR = Path(__file__).resolve().parent / "static"


def rules_fingerprint(rules: dict[str, Rule]) -> str:
    """Everything in the rules that can change what a summary contains."""
    payload = [
        (r.code, r.name, r.category, r.severity, r.message, r.matcher, r.params, r.fix)
        for r in rules.values()
    ]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def analyzer_fingerprint() -> str:
    """Size and mtime of the analyzer's sources, taken once per process."""
    stats = []
    for path in sorted(ANALYZER_DIR.rglob("*.py")):
        st = path.stat()
        stats.append(f"{path.relative_to(ANALYZER_DIR)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(stats).encode()).hexdigest()[:16]


def entry_bytes(summary: FileSummary, sha256: str) -> bytes:
    """A summary as its cache entry stores it (:meth:`SummaryCache.get` reads it back)."""
    return pickle.dumps((summary.path, sha256, summary), protocol=pickle.HIGHEST_PROTOCOL)


def from_entry_bytes(payload: bytes) -> FileSummary:
    return pickle.loads(payload)[2]


class SummaryCache:
    def __init__(self, directory: Path, rules: dict[str, Rule], options: StaticOptions):
        self.directory = directory
        # hot_names is added because the analyzer's per-file tensor inference reads it, while
        # StaticOptions.cache_key (the analyzer's contract) does not include it yet
        self.salt = "\0".join(
            (graphlint.__version__, options.cache_key(rules_fingerprint(rules)), analyzer_fingerprint(),
             json.dumps(list(options.hot_names)))
        )
        self.enabled = True
        self.hits = 0

    def _entry(self, path: str, sha256: str, variant: str = "") -> Path:
        """``variant``: facts from other files the summary was made with (see static.crossfile)."""
        key = hashlib.sha256(f"{self.salt}\0{path}\0{sha256}\0{variant}".encode("utf-8", "surrogateescape")).hexdigest()
        return self.directory / "summaries" / key[:2] / key[2:]

    def get(self, path: str, sha256: str, variant: str = "") -> FileSummary | None:
        if not self.enabled:
            return None
        try:
            with self._entry(path, sha256, variant).open("rb") as handle:
                stored_path, stored_sha, summary = pickle.load(handle)
        except Exception:  # missing, truncated, from another Python: all just a miss
            return None
        if (stored_path, stored_sha) != (path, sha256) or not isinstance(summary, FileSummary):
            return None
        self.hits += 1
        return summary

    def put(self, summary: FileSummary, sha256: str, variant: str = "") -> None:
        self.put_entry(summary.path, sha256, entry_bytes(summary, sha256), variant)

    def put_entry(self, path: str, sha256: str, payload: bytes, variant: str = "") -> None:
        """Store an entry made by :func:`entry_bytes` (in a worker: the parent does not pickle again)."""
        if not self.enabled:
            return
        try:
            target = self._entry(path, sha256, variant)
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(target, payload)
        except (OSError, pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
            self.enabled = False  # read-only checkout, full disk, unpicklable data: run uncached

    def linked_key(self, options: StaticOptions, files: list[tuple[str, str, str]]) -> str:
        """What a link result depends on: every summary (path, content hash, cross-file facts it
        was made with) and the link-time options (entries, enabled rules, prefill names, the
        recorded decode path with whether each recorded file still exists: GL004 reads that)."""
        recorded = [[*dataclasses.astuple(e), os.path.exists(e.path)] for e in options.recorded]
        payload = json.dumps([self.salt, list(options.entries), sorted(options.enabled),
                              list(options.prefill_names), options.decode_path, recorded, sorted(files)])
        return hashlib.sha256(payload.encode()).hexdigest()

    def get_linked(self, key: str):
        """The findings and entries of a run over exactly the same summaries (the whole-program
        call graph is the costly part of a warm run; nothing changed, nothing to solve)."""
        if not self.enabled:
            return None
        try:
            with (self.directory / "linked" / key).open("rb") as handle:
                stored, value = pickle.load(handle)
        except Exception:
            return None
        return value if stored == key else None

    def put_linked(self, key: str, value) -> None:
        if not self.enabled:
            return
        target = self.directory / "linked" / key
        try:
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            for old in target.parent.iterdir():  # one result is enough: the last run's
                if not old.name.startswith(".tmp-"):
                    old.unlink(missing_ok=True)
            _write_atomic(target, pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
            self.enabled = False

    def _prepare(self) -> None:
        """Mark the directory the way pytest and ruff do, so git and backup tools skip it."""
        if (self.directory / ".gitignore").exists():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", "# created by graphlint\n*\n"),
                           ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# graphlint summary cache\n")):
            _write_atomic(self.directory / name, text.encode())  # atomic, as the entries


def _write_atomic(target: Path, data: bytes) -> None:
    """Write through a temporary file in the same directory and rename it into place, so a reader
    (another graphlint at the same moment) sees the old file or the new one, never half of one;
    the temporary file does not outlive a failure."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
