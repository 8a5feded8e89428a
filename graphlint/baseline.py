"""Baselines: adopt graphlint on a codebase with known hazards, then fail only on new ones.

A finding's fingerprint is built from what survives unrelated edits: the file path (relative
to the baseline file's directory, so it does not matter where graphlint runs from), the rule,
the enclosing function, the source line with whitespace collapsed, and its occurrence index
among findings with that same key. Line numbers are never part of it, so inserting code
above a finding keeps it baselined, while a second identical hazard in the same function
gets occurrence 1 and is new. The same fingerprint is SARIF's ``partialFingerprints`` value.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Iterable

from graphlint.finding import INTERNAL_ERROR, Finding

#: graphlint's own failures are never baselined: a fingerprint has no message, so one recorded
#: crash (GL002) would hide every later crash at that path and in that function
NEVER_BASELINED = frozenset({INTERNAL_ERROR})

FORMAT_VERSION = 1


class BaselineError(Exception):
    """The baseline file cannot be read; the CLI exits with code 2."""


def fingerprints(findings: Iterable[Finding], base: Path | None = None) -> list[str]:
    """One fingerprint per finding, in the order given (``findings`` must be sorted)."""
    seen: Counter = Counter()
    result = []
    for finding in findings:
        key = (_path_from(finding.path, base), finding.rule, finding.function, " ".join(finding.line_text.split()))
        result.append(_digest(key, seen[key]))
        seen[key] += 1
    return result


def aligned_fingerprints(findings: list[Finding], base: Path | None = None) -> list[str]:
    """Fingerprints aligned with ``findings``; suppressed ones are counted apart from the rest,
    so showing suppressed findings never changes an active finding's fingerprint."""
    result: dict[int, str] = {}
    for suppressed in (False, True):
        group = [f for f in findings if f.suppressed is suppressed]
        result.update(zip(map(id, group), fingerprints(group, base)))
    return [result[id(f)] for f in findings]


def _digest(key: tuple[str, ...], occurrence: int) -> str:
    text = "\0".join((*key, str(occurrence)))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:20]  # any file name's bytes


def _path_from(path: str, base: Path | None) -> str:
    if base is None:
        return path
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(base))).as_posix()


def write_baseline(path: Path, findings: list[Finding]) -> int:
    """Write every unsuppressed finding but graphlint's own failures; returns how many were written."""
    kept = [f for f in findings if not f.suppressed and f.rule not in NEVER_BASELINED]
    prints = fingerprints(kept, path.parent)
    entries = [
        {"fingerprint": fp, "rule": f.rule, "path": _path_from(f.path, path.parent), "function": f.function,
         "line_text": f.line_text, "message": f.message}
        for fp, f in zip(prints, kept)
    ]
    payload = {"tool": "graphlint", "version": FORMAT_VERSION, "findings": entries}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:  # a unique temporary name: two runs writing the same baseline never collide
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(payload, indent=2) + "\n")  # ASCII: a name that is not UTF-8 is escaped
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return len(entries)


def load_baseline(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise BaselineError(f"baseline {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION or not isinstance(data.get("findings"), list):
        raise BaselineError(f"baseline {path} is not a graphlint baseline (version {FORMAT_VERSION})")
    try:
        return {str(entry["fingerprint"]) for entry in data["findings"]}
    except (TypeError, KeyError) as exc:
        raise BaselineError(f"baseline {path}: every finding needs a 'fingerprint'") from exc


def filter_new(findings: list[Finding], baseline_path: Path, known: set[str]) -> tuple[list[Finding], int]:
    """Drop findings whose fingerprint is in the baseline; returns (kept, dropped count).

    Suppressed findings take no part in occurrence counting, matching :func:`write_baseline`;
    graphlint's own failures are always new (a baseline written before this rule may hold one).
    """
    prints = aligned_fingerprints(findings, baseline_path.parent)
    kept = [f for f, fp in zip(findings, prints) if f.suppressed or fp not in known or f.rule in NEVER_BASELINED]
    return kept, len(findings) - len(kept)
