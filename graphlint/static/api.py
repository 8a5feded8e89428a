"""Data passed between the per-file phase, the linking phase and the check that drives them.

Everything here is plain data (picklable, cacheable). The check (:mod:`graphlint.check`)
only relies on the fields documented as such; the rest belongs to the analyzer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

DEFAULT_HOT_NAMES: tuple[str, ...] = ("forward", "__call__", "*decode*", "*step*")
DEFAULT_GUARDS: tuple[str, ...] = ("VERBOSE", "DEBUG", "*debug*", "*verbose*", "*profile*")
#: Names whose truth (``if is_prefill:``, ``if self.training:``) or comparison with one token
#: (``if seqlen > 1:``) selects a branch the decode step never takes.
DEFAULT_PREFILL_GUARDS: tuple[str, ...] = ("*prefill", "is_extend", "training", "is_training", "seqlen", "seq_len",
                                           "q_len")


@dataclass(frozen=True)
class StaticOptions:
    """What the analyzer needs to know besides the source.

    ``entries`` are ``"path/to/file.py:Qual.name"`` with POSIX paths relative to the
    working directory. Empty means: use ``hot_names`` (fnmatch patterns on the bare
    function name). ``guards`` are fnmatch patterns on the last name of an ``if`` test
    (``if VERBOSE:``, ``if self._profile_detail:``) whose body is never hot; ``prefill_guards``
    the same for prefill/training-only branches (``if is_prefill:``, ``if seqlen > 1:``).
    ``enabled`` is the set of rule codes to report.
    """

    enabled: frozenset[str] = frozenset()
    entries: tuple[str, ...] = ()
    hot_names: tuple[str, ...] = DEFAULT_HOT_NAMES
    guards: tuple[str, ...] = DEFAULT_GUARDS
    prefill_guards: tuple[str, ...] = DEFAULT_PREFILL_GUARDS

    def cache_key(self, rules_fingerprint: str) -> str:
        """Key for per-file summaries: everything that changes what a summary contains.

        ``hot_names`` is part of it because parameters of hot-named functions are presumed
        tensors while the file is summarized; ``entries`` and ``enabled`` only matter when linking.
        """
        payload = json.dumps(
            {"guards": list(self.guards), "prefill_guards": list(self.prefill_guards),
             "hot_names": list(self.hot_names), "rules": rules_fingerprint},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Suppression:
    """A ``# graphlint: ignore[...]`` comment and the lines it covers.

    At line end it covers that line (for a multi-line statement, the whole statement);
    on its own line it covers the next statement. ``codes`` empty means every rule.
    A code entry may be a code (``GL101``) or a rule name (``host-sync-item``).
    """

    comment_line: int
    first_line: int
    last_line: int
    codes: tuple[str, ...] = ()
    reason: str = ""
    comment_col: int = 0  # 1-based column of ``# graphlint:`` (where GL001/GL003 point)


@dataclass
class FileSummary:
    """One file, summarized. Fields the check reads: ``path``, ``sha256``, ``skip_file``,
    ``suppressions``, ``errors`` (GL000-style problems as ``(line, col, message)``) and
    ``lines`` (source line count). Everything in ``data`` is the analyzer's own."""

    path: str
    sha256: str
    skip_file: bool = False
    suppressions: list[Suppression] = field(default_factory=list)
    errors: list[tuple[int, int, str]] = field(default_factory=list)
    lines: int = 0
    data: Any = None
