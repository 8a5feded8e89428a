"""What the static analyzer is told besides the source: :class:`StaticOptions` and its defaults.

Part of every summary's cache key (:meth:`StaticOptions.cache_key`), so plain and hashable.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass

DEFAULT_HOT_NAMES: tuple[str, ...] = ("forward", "__call__", "*decode*", "*step*")
DEFAULT_GUARDS: tuple[str, ...] = ("VERBOSE", "DEBUG", "*debug*", "*verbose*", "*profile*")
#: Names whose truth (``if is_prefill:``, ``if self.training:``, ``if x.requires_grad:``) or comparison
#: with one token (``if seqlen > 1:``) selects a branch the decode step never takes.
DEFAULT_PREFILL_GUARDS: tuple[str, ...] = ("*prefill", "is_extend", "training", "is_training", "requires_grad",
                                           "seqlen", "seq_len", "q_len", "*query_len")
#: Names of functions that only prefill runs (``_prefill``, ``prepare_prefill_inputs``): not hot,
#: like the branches ``DEFAULT_PREFILL_GUARDS`` select, when reached from a decode path.
DEFAULT_PREFILL_NAMES: tuple[str, ...] = ("*prefill*",)
#: Per-file limits checked before parsing (see :mod:`graphlint.static.budget`; 0 turns one off).
DEFAULT_MAX_DEPTH = 1500  # CPython parses about 3,000 levels; libcst needs ~3 s for a 1,500-long chain
DEFAULT_MAX_FILE_SIZE = 2 << 20  # torch's largest file is 1.4 MB; libcst needs 15-40 s and 0.6-1.6 GB per MB


@dataclass(frozen=True)
class RecordedEntry:
    """A function a recorded run executed (``check --decode-path``, see :mod:`graphlint.static.recorded`)."""

    path: str  # display path when the file is where the record says, else as recorded (matched by suffix)
    function: str
    roles: tuple[str, ...]  # graphlint.decode_path_file.ROLES
    step: str = ""  # for the function that owns a decode loop: "path:qualname" of the function it steps
    line: int = 0  # its line in the decode-path file
    local: bool = True  # its directory exists next to the record: a missing file or function is stale


@dataclass(frozen=True)
class StaticOptions:
    """What the analyzer needs to know besides the source.

    ``entries`` are ``"path/to/file.py:Qual.name"`` with POSIX paths relative to the
    working directory. Empty means: use ``hot_names`` (fnmatch patterns on the bare
    function name). ``guards`` are fnmatch patterns on the last name of an ``if`` test
    (``if VERBOSE:``, ``if self._profile_detail:``, ``if res["profiler_size"] > 0:``) whose body is never hot; ``prefill_guards``
    the same for prefill/training-only branches (``if is_prefill:``, ``if seqlen > 1:``).
    ``enabled`` is the set of rule codes to report. ``recorded`` (a decode-path file) adds
    entries with the context of each role and replaces the ``hot_names`` guess.
    """

    enabled: frozenset[str] = frozenset()
    entries: tuple[str, ...] = ()
    hot_names: tuple[str, ...] = DEFAULT_HOT_NAMES
    guards: tuple[str, ...] = DEFAULT_GUARDS
    prefill_guards: tuple[str, ...] = DEFAULT_PREFILL_GUARDS
    prefill_names: tuple[str, ...] = DEFAULT_PREFILL_NAMES
    #: ``--decode-path``: what a recorded run executed, and the file it came from (display path)
    recorded: tuple[RecordedEntry, ...] = ()
    decode_path: str = ""
    #: the Python whose grammar the checked code is written in (``target-version``)
    target_version: tuple[int, int] = sys.version_info[:2]
    max_depth: int = DEFAULT_MAX_DEPTH
    max_file_size: int = DEFAULT_MAX_FILE_SIZE

    def cache_key(self, rules_fingerprint: str) -> str:
        """Key for per-file summaries: everything that changes what a summary contains.

        ``hot_names`` is part of it because parameters of hot-named functions are presumed
        tensors while the file is summarized; ``entries`` and ``enabled`` only matter when linking.
        """
        payload = json.dumps(
            {"guards": list(self.guards), "prefill_guards": list(self.prefill_guards),
             "hot_names": list(self.hot_names), "rules": rules_fingerprint,
             "budget": [list(self.target_version), self.max_depth, self.max_file_size]},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]
